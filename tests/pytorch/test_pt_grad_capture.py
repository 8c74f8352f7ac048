"""Gradients captured on the copy thread (smdebug.pytorch.grad_capture): what is saved is the
gradient as backward produced it, or nothing with a warning naming the step; never a value that
code after backward (clip_grad_norm_, GradScaler.unscale_, zero_grad(set_to_none=False), gradient
accumulation) or an in-place change during backward made."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch
import torch.nn as nn
from ptutil import GRADS, PARAMS, data, make_hook, mlp, named_params, snap

import smdebug.pytorch as smd
from smdebug.trials import create_trial

EVERY = smd.SaveConfig(save_interval=1)
RAW = {"save_config": EVERY, "include_collections": ["weights", "biases", "gradients"]}
REDUCED = dict(RAW, reduction_config=smd.ReductionConfig(norms=["l2"], reductions=["max"]))


def _loop(
    path,
    steps,
    after_backward=None,
    hook_kwargs=RAW,
    set_to_none=True,
    accumulate=1,
    scaler=None,
    start_at=None,
    model=None,
):
    """Train ``mlp()`` for ``steps`` forward calls (each a step); ``after_backward(i, model, opt)``
    runs between backward and the optimizer. ``start_at`` 0: each capture is handed to the copy
    thread at once (it runs while training goes on). Returns (trial, hook, per step:
    'gradient/<name>' -> the gradient right after backward, per step: parameters at its start)."""
    model = model if model is not None else mlp()
    loss_fn = nn.CrossEntropyLoss()
    hook = make_hook(path, model, loss_fn, **hook_kwargs)
    if start_at is not None:
        hook.adapter.START_AT = start_at
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x, y = data()
    params = named_params(model)
    grads, starts = [], []
    for i in range(steps):
        if i % accumulate == 0:
            opt.zero_grad(set_to_none=set_to_none)
        starts.append({n: snap(p) for n, p in params.items()})
        loss = loss_fn(model(x), y)
        (scaler.scale(loss) if scaler is not None else loss).backward()
        grads.append({f"gradient/{n}": snap(p.grad) for n, p in params.items()})
        if after_backward is not None:
            after_backward(i, model, opt)
        if (i + 1) % accumulate == 0:
            if scaler is not None:
                scaler.step(opt)
                scaler.update()
            else:
                opt.step()
    hook.close()
    return create_trial(str(path)), hook, grads, starts


def _clip(i, model, opt):
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1e-3)  # far below the gradients' norm: it clips


def _assert_saved(trial, grads, starts, steps):
    for s in steps:
        for name in GRADS:
            np.testing.assert_allclose(trial.tensor(name).value(s), grads[s][name], rtol=1e-6, err_msg=f"{name}@{s}")
        for name in PARAMS:
            np.testing.assert_allclose(trial.tensor(name).value(s), starts[s][name], rtol=1e-6, err_msg=f"{name}@{s}")


@pytest.mark.parametrize("start_at", [None, 0], ids=["held", "handed-at-once"])
def test_a_plain_loop_saves_every_gradient_and_parameter(tmp_path, start_at):
    trial, hook, grads, starts = _loop(tmp_path / "t", 6, start_at=start_at)
    assert hook._capture.affected == []
    assert trial.steps() == list(range(6))
    _assert_saved(trial, grads, starts, trial.steps())


@pytest.mark.parametrize("kwargs", [RAW, REDUCED], ids=["raw", "reductions"])
def test_clip_grad_norm_every_step_saves_the_gradients_before_clipping(tmp_path, kwargs):
    trial, hook, grads, starts = _loop(tmp_path / "t", 6, _clip, hook_kwargs=kwargs)
    assert hook._capture.affected == []
    assert trial.steps() == list(range(6))
    if kwargs is RAW:
        _assert_saved(trial, grads, starts, range(6))
        return
    for s in range(6):
        for name in GRADS:
            l2 = trial.tensor(name).reduction_value(s, "l2")
            np.testing.assert_allclose(l2, np.linalg.norm(grads[s][name]), rtol=1e-5, err_msg=f"{name}@{s}")
            assert l2 > 1e-2  # (the clipped norms are below 1e-3)


class _Halves(nn.Module):
    """A Linear; ``halve`` (registered as a gradient hook after smdebug's) halves its weight's
    gradient in place from step ``first`` on, as a user's per-parameter gradient scaling would."""

    def __init__(self, first):
        super().__init__()
        self.lin = nn.Linear(8, 3)
        self.calls, self.first = 0, first

    def forward(self, x):
        return self.lin(x)

    def halve(self, p):
        self.calls += 1
        if self.calls > self.first:
            p.grad.mul_(0.5)


@pytest.mark.parametrize("start_at", [None, 0], ids=["held", "handed-at-once"])
def test_a_gradient_changed_in_place_during_backward_is_dropped_with_a_warning(tmp_path, caplog, start_at):
    model, path = _Halves(first=2), tmp_path / "t"
    hook = make_hook(path, model, nn.CrossEntropyLoss(), **RAW)
    if start_at is not None:
        hook.adapter.START_AT = start_at
    model.lin.weight.register_post_accumulate_grad_hook(model.halve)  # after smdebug's
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x, y = data()
    bias_grads = []
    with caplog.at_level(logging.INFO, logger="smdebug"):
        for _ in range(4):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            bias_grads.append(snap(model.lin.bias.grad))
            opt.step()
        hook.close()
    assert hook._capture.affected == [2, 3]
    msgs = [r for r in caplog.records if "changed in place" in r.getMessage()]
    assert [r.levelno for r in msgs] == [logging.WARNING, logging.INFO]  # a warning once, then INFO per step
    assert "step 2:" in msgs[0].getMessage() and "gradient/_Halves_lin.weight" in msgs[0].getMessage()
    trial = create_trial(str(path))
    assert trial.tensor("gradient/_Halves_lin.weight").steps() == [0, 1]  # no (half-)halved value at 2, 3
    for s in range(4):  # the bias, unchanged, is saved at every step
        np.testing.assert_allclose(trial.tensor("gradient/_Halves_lin.bias").value(s), bias_grads[s], rtol=1e-6)


def test_gradient_accumulation_saves_each_micro_batchs_accumulated_gradient(tmp_path):
    trial, hook, grads, starts = _loop(tmp_path / "t", 12, accumulate=3)
    assert hook._capture.affected == []
    # the accumulation did change .grad in place: micro-batch 2's gradient is not micro-batch 1's
    assert not np.allclose(grads[1][GRADS[0]], grads[0][GRADS[0]])
    _assert_saved(trial, grads, starts, range(12))


def test_zero_grad_in_place_saves_each_steps_gradient(tmp_path):
    trial, hook, grads, starts = _loop(tmp_path / "t", 6, set_to_none=False)
    assert hook._capture.affected == []
    _assert_saved(trial, grads, starts, range(6))


def test_grad_scaler_unscale_which_torch_does_not_count_comes_after_the_capture(tmp_path):
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
    v0 = []

    def unscale(i, model, opt):
        v0.append(next(model.parameters()).grad._version)
        scaler.unscale_(opt)
        assert next(model.parameters()).grad._version == v0[-1]  # no version bump: it must come after the capture

    trial, hook, grads, starts = _loop(tmp_path / "t", 6, unscale, scaler=scaler)
    assert hook._capture.affected == []
    _assert_saved(trial, grads, starts, range(6))  # the scaled gradients backward made
