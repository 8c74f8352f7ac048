"""A step is written once: what the hook saves after a step went to the writer (set_mode, then
save_scalar, then close) is never written over that step; after close nothing is saved silently."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch.nn as nn
from ptutil import GRADS, LOSS, WEIGHTS, make_hook, mlp, run

import smdebug.pytorch as smd
from smdebug.core.modes import ModeKeys
from smdebug.exceptions import SMDebugRuntimeError
from smdebug.trials import create_trial

KW = {"save_config": smd.SaveConfig(save_interval=1), "include_collections": ["weights", "gradients", "losses"]}


def _hook(path):
    model, loss_fn = mlp(), nn.CrossEntropyLoss()
    return make_hook(path, model, loss_fn, **KW), model, loss_fn


def _steps(trial) -> dict:
    return {n: trial.tensor(n).steps() for n in trial.tensor_names()}


def test_a_scalar_saved_after_set_mode_at_close_does_not_replace_the_last_step(tmp_path):
    hook, model, loss_fn = _hook(tmp_path / "t")
    recs = run(hook, model, "TTT", loss_fn=loss_fn)
    hook.set_mode(smd.modes.EVAL)
    hook.save_scalar("final_acc", 0.9)
    hook.close()
    trial = create_trial(str(tmp_path / "t"))
    steps = _steps(trial)
    for name in [*WEIGHTS, *GRADS, LOSS]:
        assert steps[name] == [0, 1, 2], name
    # the step it was saved in (EVAL, after TRAIN step 2 was written) is a step of its own
    assert steps["scalar/final_acc"] == [3]
    assert trial.mode(3) == ModeKeys.EVAL and trial.mode_step(3) == 0
    assert trial.tensor("scalar/final_acc").value(3).tolist() == [0.9]
    np.testing.assert_allclose(trial.tensor(LOSS).value(2), recs[2].loss, rtol=1e-6)
    np.testing.assert_allclose(
        trial.tensor("gradient/Sequential_0.weight").value(2), recs[2].grads["gradient/Sequential_0.weight"], rtol=1e-6
    )


def test_set_mode_twice_then_a_scalar_goes_with_the_next_step(tmp_path):
    hook, model, loss_fn = _hook(tmp_path / "t")
    run(hook, model, "TT", loss_fn=loss_fn)
    hook.set_mode(smd.modes.EVAL)
    hook.save_scalar("acc", 0.5)
    hook.set_mode(smd.modes.TRAIN)
    hook.set_mode(smd.modes.EVAL)
    hook.set_mode(smd.modes.TRAIN)
    run(hook, model, "T", loss_fn=loss_fn)
    hook.close()
    trial = create_trial(str(tmp_path / "t"))
    steps = _steps(trial)
    for name in [*WEIGHTS, *GRADS, LOSS]:
        assert steps[name] == [0, 1, 2], name
    assert steps["scalar/acc"] == [2]
    assert trial.steps(mode=ModeKeys.EVAL) == []


def test_a_scalar_after_the_last_step_at_close_goes_with_that_step_when_it_is_not_written(tmp_path):
    hook, model, loss_fn = _hook(tmp_path / "t")
    run(hook, model, "TT", loss_fn=loss_fn)
    hook.save_scalar("acc", 0.5)
    hook.close()
    trial = create_trial(str(tmp_path / "t"))
    assert trial.steps() == [0, 1]
    assert _steps(trial)["scalar/acc"] == [1]
    assert _steps(trial)[LOSS] == [0, 1]


@pytest.mark.parametrize("call", ["save_scalar", "save_tensor", "record_tensor_value"])
def test_saving_after_close_is_refused_not_silently_dropped(tmp_path, caplog, call, monkeypatch):
    import torch

    hook, model, loss_fn = _hook(tmp_path / "t")
    run(hook, model, "T", loss_fn=loss_fn)
    hook.close()
    args = {
        "save_scalar": ("late", 1.0),
        "save_tensor": ("late", np.ones(2)),
        "record_tensor_value": ("late", torch.ones(2)),
    }[call]
    with caplog.at_level(logging.ERROR, logger="smdebug"):
        getattr(hook, call)(*args)
    assert "the hook is closed" in caplog.text and "late" in caplog.text
    assert create_trial(str(tmp_path / "t")).steps() == [0]
    monkeypatch.setenv("SMDEBUG_PROPAGATE_ERRORS", "1")
    hook2, model2, loss_fn2 = _hook(tmp_path / "t2")
    run(hook2, model2, "T", loss_fn=loss_fn2)
    hook2.close()
    with pytest.raises(SMDebugRuntimeError, match="the hook is closed"):
        getattr(hook2, call)(*args)


def test_cleanup_is_close(tmp_path):
    hook, model, loss_fn = _hook(tmp_path / "t")
    run(hook, model, "TT", loss_fn=loss_fn)
    hook._cleanup()
    assert (tmp_path / "t" / "training_job_end.ts").exists()
    assert create_trial(str(tmp_path / "t")).steps() == [0, 1]
