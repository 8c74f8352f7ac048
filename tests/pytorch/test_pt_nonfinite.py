"""The non-finite watch on a real PyTorch loop with the default schedule (every 500th step): the first
NaN loss saves that step and the next three in full; the hook says at close what it trained and saved."""

from __future__ import annotations

import json
import logging

import numpy as np
import torch
from torch import nn

import smdebug.pytorch as smd
from smdebug.analysis.nonfinite import first_nonfinite
from smdebug.trials import create_trial


def _train(out_dir, steps=64, nan_at=None, collections=("weights", "gradients", "losses"), register_loss=True):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    loss_fn = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    hook = smd.Hook(out_dir=str(out_dir), include_collections=list(collections) if collections else None)
    hook.register_module(model)
    if register_loss:
        hook.register_loss(loss_fn)
    for step in range(steps):
        x = torch.randn(16, 8)
        if step == nan_at:
            x[0, 0] = float("nan")
        opt.zero_grad()
        loss = loss_fn(model(x), torch.randint(0, 3, (16,)))
        loss.backward()
        opt.step()
    hook.close()
    return hook


def test_first_nan_loss_saves_that_step_and_the_next_three_in_full(tmp_path, capsys):
    _train(tmp_path / "run", nan_at=33)
    trial = create_trial(str(tmp_path / "run"))
    assert trial.steps() == [0, 33, 34, 35, 36]
    loss = trial.tensor("CrossEntropyLoss_output_0")
    assert np.isfinite(loss.value(0)).all() and np.isnan(loss.value(33)).all()
    # the whole step: the weights when it started, the gradients backward computed
    for name in ("Sequential_0.weight", "gradient/Sequential_0.weight"):
        assert trial.tensor(name).steps() == [0, 33, 34, 35, 36], name
    assert np.isfinite(trial.tensor("Sequential_0.weight").value(33)).all()  # before the NaN update
    assert np.isnan(trial.tensor("Sequential_0.weight").value(34)).any()
    err = capsys.readouterr().err
    assert (
        "64 steps trained, 5 saved (steps 0, 33-36; save_interval 500)" in err
        and "first non-finite value: CrossEntropyLoss_output_0 at step 33, saved in full at steps 33-36" in err
    )


def test_healthy_run_keeps_the_schedule(tmp_path, capsys):
    _train(tmp_path / "run")
    assert create_trial(str(tmp_path / "run")).steps() == [0]
    assert "64 steps trained, 1 saved (steps 0; save_interval 500)" in capsys.readouterr().err


def test_watch_switched_off(tmp_path, monkeypatch):
    monkeypatch.setenv("SMDEBUG_NONFINITE_STEPS", "-1")
    _train(tmp_path / "run", nan_at=33)
    assert create_trial(str(tmp_path / "run")).steps() == [0]


def test_empty_trial_is_a_warning_naming_what_to_add(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="smdebug"):
        _train(tmp_path / "run", steps=3, collections=None, register_loss=False)
    text = caplog.text
    assert "3 steps trained, nothing saved" in text and "the trial is empty" in text
    assert "no loss was registered (hook.register_loss(loss_fn))" in text


def test_a_weight_gone_nan_is_named_first_and_written_once(tmp_path):
    # the ReLU's output is saved every step, the rest every 500th: at step 20 the forward saved the
    # ReLU output, then the NaN loss made the step save everything; the weights, saved then, still
    # go first in the step's file (the order the model computed them in), each once
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    loss_fn = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    hook = smd.Hook(out_dir=str(tmp_path / "run"), include_collections=["weights", "gradients", "losses", "relu"])
    hook.get_collection("relu").include("1_output_0")
    hook.get_collection("relu").save_config = smd.SaveConfig(save_interval=1)
    hook.register_module(model)
    hook.register_loss(loss_fn)
    for step in range(24):
        opt.zero_grad()
        loss_fn(model(torch.randn(16, 8)), torch.randint(0, 3, (16,))).backward()
        opt.step()
        if step == 19:  # a bad update: step 20 starts with a NaN weight
            with torch.no_grad():
                model[0].weight[0, 0] = float("nan")
    hook.close()
    trial = create_trial(str(tmp_path / "run"))
    assert trial.tensor("Sequential_0.weight").steps() == [0, 20, 21, 22, 23]
    first = first_nonfinite(trial)
    assert (first.step, first.tensor) == (20, "Sequential_0.weight")
    index = json.loads(next((tmp_path / "run" / "index").rglob("000000000020_*.json")).read_text())
    names = [r["tensorname"] for r in index["tensor_payload"]]
    assert len(names) == len(set(names))
    assert names.index("Sequential_0.weight") < names.index("1_output_0") < names.index("CrossEntropyLoss_output_0")


def test_a_second_run_into_a_finished_trials_folder_is_refused_in_one_line(tmp_path):
    """The documented choice: one folder, one run (the guide says so); the old trial is kept."""
    import pytest

    from smdebug.exceptions import SMDebugRuntimeError

    _train(tmp_path / "run", steps=2)
    with pytest.raises(SMDebugRuntimeError) as exc:
        smd.Hook(out_dir=str(tmp_path / "run"))
    assert str(exc.value) == (
        f"{tmp_path / 'run'} holds a finished trial (training_job_end.ts exists): give the hook "
        "a new out_dir, so that two jobs' tensors are not mixed"
    )
    assert create_trial(str(tmp_path / "run")).steps() == [0]
