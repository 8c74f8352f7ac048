"""A rule asks training to stop: the next forward of the registered model raises
TrainingStopRequested (through the hook's error guard), after everything saved before is written."""

from __future__ import annotations

import numpy as np
import pytest
import torch.nn as nn
from ptutil import PARAMS, make_hook, mlp, run

import smdebug.pytorch as smd
from smdebug.core.stop_request import write_stop_request
from smdebug.exceptions import TrainingStopRequested
from smdebug.trials import create_trial

STOP_AFTER = 3  # the test asks for a stop after this many steps
EVERY = smd.SaveConfig(save_interval=1)


def test_a_stop_request_raises_at_the_next_forward(tmp_path):
    model, loss_fn = mlp(), nn.CrossEntropyLoss()
    hook = make_hook(
        tmp_path / "t",
        model,
        loss_fn,
        save_config=EVERY,
        include_collections=["weights", "biases", "gradients", "losses"],
    )
    assert not hook.propagate_errors  # other errors would be swallowed by the guard
    hook.stop_watcher.interval = 0.0  # look at every step boundary (default: at most every 0.2 s)

    def ask_to_stop(i, hook):
        if i == STOP_AFTER - 1:
            write_stop_request(hook.store, "ExplodingTensor", 7, "nan")

    recs = []
    with pytest.raises(TrainingStopRequested) as ei:
        recs = run(hook, model, "T" * 10, loss_fn=loss_fn, step_fn=lambda i, h: (recs.append(i), ask_to_stop(i, h)))
    assert recs == list(range(STOP_AFTER))  # the forward of step STOP_AFTER raised
    err = ei.value
    assert (err.rule_name, err.step, err.reason) == ("ExplodingTensor", 7, "nan")
    assert "ExplodingTensor" in str(err) and "step 7" in str(err)
    assert not hook.disabled

    # every step saved before the request is readable now, before close
    trial = create_trial(str(tmp_path / "t"))
    assert trial.steps() == list(range(STOP_AFTER))
    assert sorted(trial.tensor_names(collection="weights") + trial.tensor_names(collection="biases")) == PARAMS
    for s in range(STOP_AFTER):
        assert np.isfinite(trial.tensor("CrossEntropyLoss_output_0").value(s)).all()
        assert trial.tensor("gradient/Sequential_0.weight").value(s).shape == (16, 8)
    hook.close()
    assert create_trial(str(tmp_path / "t")).steps() == list(range(STOP_AFTER))


def test_a_loop_that_catches_the_request_goes_on(tmp_path):
    model, loss_fn = mlp(), nn.CrossEntropyLoss()
    hook = make_hook(tmp_path / "t", model, loss_fn, save_config=EVERY)
    hook.stop_watcher.interval = 0.0
    run(hook, model, "TT", loss_fn=loss_fn)
    write_stop_request(hook.store, "LossNotDecreasing", 1)
    with pytest.raises(TrainingStopRequested, match="LossNotDecreasing"):
        run(hook, model, "T", loss_fn=loss_fn)
    run(hook, model, "E", loss_fn=loss_fn)  # raised once: an evaluation after the stop still runs
    hook.close()
    trial = create_trial(str(tmp_path / "t"))
    assert trial.steps() == [0, 1, 2]
