"""The launcher uses public APIs only: ``Hook.start_step()`` for a model registered inside its first
forward, and ``create_trial(poll_interval=...)`` for its rule jobs' trials (no process-wide
environment variable set while a trial is opened)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from smdebug.exceptions import SMDebugValueError
from smdebug.launch.rule_job import RuleJob
from smdebug.launch.spec import RuleSpec
from smdebug.trials import create_trial


def _tiny_trial(path) -> str:
    from smdebug.core.collection_manager import CollectionManager
    from smdebug.core.writer import FileWriter

    cm = CollectionManager()
    cm.add("default")
    cm.set_num_workers(1)
    cm.export(str(path), "worker_0_collections.json")
    with FileWriter(str(path), step=0) as fw:
        fw.write_tensor(np.ones(3, dtype=np.float32), "w")
    return str(path)


def test_create_trial_takes_a_poll_interval(tmp_path, monkeypatch):
    path = _tiny_trial(tmp_path)
    monkeypatch.setenv("SMDEBUG_POLL_INTERVAL", "3")
    assert create_trial(path).poll_interval == 3.0  # the documented setting is the default
    assert create_trial(path, poll_interval=0.05).poll_interval == 0.05
    with pytest.raises(SMDebugValueError, match="poll_interval=0"):
        create_trial(path, poll_interval=0)
    monkeypatch.setenv("SMDEBUG_POLL_INTERVAL", "soon")
    with pytest.raises(SMDebugValueError, match="SMDEBUG_POLL_INTERVAL='soon'"):
        create_trial(path)


def test_a_rule_job_opens_its_trial_with_its_poll_without_touching_the_environment(tmp_path, monkeypatch):
    path = _tiny_trial(tmp_path / "trial")
    monkeypatch.setenv("SMDEBUG_POLL_INTERVAL", "5")
    seen = []
    real = os.environ.copy

    import smdebug.trials as trials

    opened = trials.create_trial

    def spy(*args, **kwargs):
        seen.append(real().get("SMDEBUG_POLL_INTERVAL"))
        return opened(*args, **kwargs)

    monkeypatch.setattr(trials, "create_trial", spy)
    spec = RuleSpec("AllZero", {"rule_to_invoke": "AllZero"})
    job = RuleJob(spec, path, str(tmp_path / "out"), "run", poll=0.02)
    trial = job._open_trial()
    assert trial.poll_interval == 0.02
    assert seen == ["5"]  # the user's setting stays as it was, for every other trial of the process


def test_start_step_begins_a_step_for_a_model_registered_in_its_first_forward(tmp_path):
    torch = pytest.importorskip("torch")
    import smdebug.pytorch as smd

    hook = smd.Hook(out_dir=str(tmp_path / "t"), save_all=True, save_config=smd.SaveConfig(save_interval=1))
    model = torch.nn.Linear(2, 1)

    def register_inside(module, args):
        if not hook.has_registered_module:
            hook.register_module(module)
            hook.start_step()  # the hook's own pre-hook fires from the next call only

    handle = model.register_forward_pre_hook(register_inside)
    model(torch.ones(1, 2)).sum().backward()
    handle.remove()
    model(torch.ones(1, 2)).sum().backward()
    hook.close()
    trial = create_trial(str(tmp_path / "t"))
    assert trial.steps() == [0, 1]
    assert "Linear_weight" in trial.tensor_names(step=0)
