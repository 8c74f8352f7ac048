"""A written (step, worker) is never replaced: FileWriter refuses an existing one, the hook gives
what is saved after its step was written a step of its own, and another run's files in the same
folder are kept."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from smdebug.core.collection_manager import CollectionManager
from smdebug.core.hook import BaseHook
from smdebug.core.save_config import SaveConfig
from smdebug.core.stop_request import write_stop_request
from smdebug.core.writer import FileWriter
from smdebug.exceptions import SMDebugRuntimeError
from smdebug.trials import create_trial


def _write(root, step, name, value, worker="worker_0"):
    with FileWriter(trial_dir=str(root), step=step, worker=worker) as fw:
        fw.write_tensor(value, name)


def test_file_writer_refuses_an_existing_step_and_keeps_it(tmp_path):
    _write(tmp_path, 0, "a", np.arange(3.0))
    with pytest.raises(SMDebugRuntimeError, match=r"000000000000_worker_0\.tfevents exists"):
        _write(tmp_path, 0, "b", np.ones(2))
    _write(tmp_path, 0, "c", np.ones(2), worker="worker_1")  # another worker's file of that step
    cm = CollectionManager()
    cm.add("default")
    cm.set_num_workers(2)
    cm.export(str(tmp_path), "worker_0_collections.json")
    (tmp_path / "training_job_end.ts").write_bytes(b"")
    trial = create_trial(str(tmp_path))
    assert trial.tensor_names() == ["a", "c"]
    np.testing.assert_array_equal(trial.tensor("a").value(0, worker="worker_0"), np.arange(3.0))


def test_file_writer_refuses_an_existing_shapes_only_step(tmp_path):
    with FileWriter(trial_dir=str(tmp_path), step=3) as fw:
        fw.write_shape("a", (2, 3))
    fw = FileWriter(trial_dir=str(tmp_path), step=3)
    fw.write_shape("a", (4,))
    with pytest.raises(SMDebugRuntimeError, match="exists"):
        fw.close()


def test_tensors_saved_after_their_step_was_written_get_a_step_of_their_own(tmp_path):
    """stop_requested() writes the current step; what the step saves after that is not written
    over it but as the next step, and the hook's next step comes after that one."""
    hook = BaseHook(out_dir=str(tmp_path / "t"), save_config=SaveConfig(save_interval=1))
    hook.stop_watcher.interval = 0.0
    hook._begin_step()
    hook.save_tensor("a", np.arange(3.0))
    write_stop_request(hook.store, "LossNotDecreasing", 0, "flat")
    assert hook.stop_requested() is not None  # step 0 is written now
    hook.save_tensor("b", np.ones(2))  # the loop goes on in the same step
    hook._begin_step()
    hook.save_tensor("a", np.full(3, 7.0))
    hook.close()
    trial = create_trial(str(tmp_path / "t"))
    assert trial.steps() == [0, 1, 2]
    assert trial.tensor("a").steps() == [0, 2]
    assert trial.tensor("b").steps() == [1]
    np.testing.assert_array_equal(trial.tensor("a").value(0), np.arange(3.0))
    np.testing.assert_array_equal(trial.tensor("a").value(2), np.full(3, 7.0))


def test_a_hook_continues_after_another_runs_steps(tmp_path, caplog):
    out = tmp_path / "t"
    first = BaseHook(out_dir=str(out), save_config=SaveConfig(save_interval=1))
    first._begin_step()
    first.save_tensor("a", np.arange(3.0))
    first._end_step()
    first._writer.flush()  # the first run crashed here: no end-of-training marker
    second = BaseHook(out_dir=str(out), save_config=SaveConfig(save_interval=1))
    with caplog.at_level(logging.ERROR, logger="smdebug"):
        second._begin_step()
        second.save_tensor("a", np.zeros(3))
        second._begin_step()
        second.save_tensor("a", np.zeros(3))
        second.close()
    assert not second.disabled and "not replaced" not in caplog.text
    trial = create_trial(str(out))
    assert trial.tensor("a").steps() == [0, 1, 2]  # resumed after the folder's last step (core/engine/resume.py)
    np.testing.assert_array_equal(trial.tensor("a").value(0), np.arange(3.0))


def test_a_hook_does_not_write_over_a_step_another_run_wrote_meanwhile(tmp_path, caplog):
    out = tmp_path / "t"
    first = BaseHook(out_dir=str(out), save_config=SaveConfig(save_interval=1))
    second = BaseHook(out_dir=str(out), save_config=SaveConfig(save_interval=1))
    first._begin_step()
    first.save_tensor("a", np.arange(3.0))
    second._begin_step()  # the folder is still empty: the second run starts at step 0 too
    second.save_tensor("a", np.zeros(3))
    first._end_step()
    first._writer.flush()
    with caplog.at_level(logging.ERROR, logger="smdebug"):
        second._begin_step()
        second.save_tensor("a", np.zeros(3))
        second.close()
    assert "is written already and is not replaced" in caplog.text
    assert second.disabled
    trial = create_trial(str(out))
    np.testing.assert_array_equal(trial.tensor("a").value(0), np.arange(3.0))
