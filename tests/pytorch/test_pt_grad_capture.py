"""Gradients captured while the optimizer runs (smdebug.pytorch.grad_capture): what is saved is the
gradient as backward produced it, or nothing with a warning naming the step; never a value that
code after backward (clip_grad_norm_, GradScaler.unscale_, zero_grad(set_to_none=False),
gradient accumulation) made."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch
import torch.nn as nn
from ptutil import GRADS, PARAMS, data, make_hook, mlp, named_params, snap

import smdebug.pytorch as smd
from smdebug.exceptions import TensorUnavailableForStep
from smdebug.pytorch.grad_capture import PROBE_PASSES
from smdebug.trials import create_trial

EVERY = smd.SaveConfig(save_interval=1)
RAW = {"save_config": EVERY, "include_collections": ["weights", "biases", "gradients"]}
REDUCED = dict(RAW, reduction_config=smd.ReductionConfig(norms=["l2"], reductions=["max"]))


def _loop(path, steps, after_backward=None, hook_kwargs=RAW, set_to_none=True, accumulate=1, scaler=None,
          start_at=None, distributed=None):
    """Train ``mlp()`` for ``steps`` forward calls (each a step); ``after_backward(i, model, opt)``
    runs between backward and the optimizer. ``start_at`` 0: each capture is handed to the copy
    thread at once (it runs while training goes on). Returns (trial, hook, per step:
    'gradient/<name>' -> the gradient right after backward, per step: parameters at its start)."""
    model = mlp()
    loss_fn = nn.CrossEntropyLoss()
    hook = make_hook(path, model, loss_fn, **hook_kwargs)
    if start_at is not None:
        hook.adapter.START_AT = start_at
    if distributed is not None:
        hook._capture._distributed = distributed
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
def test_a_plain_loop_goes_async_after_the_probe_and_saves_every_gradient(tmp_path, start_at):
    trial, hook, grads, starts = _loop(tmp_path / "t", PROBE_PASSES + 4, start_at=start_at)
    assert hook._capture.mode == "async" and hook._capture.affected == []
    assert trial.steps() == list(range(PROBE_PASSES + 4))
    _assert_saved(trial, grads, starts, trial.steps())


@pytest.mark.parametrize("kwargs", [RAW, REDUCED], ids=["raw", "reductions"])
def test_clip_grad_norm_every_step_saves_the_gradients_before_clipping(tmp_path, kwargs):
    trial, hook, grads, starts = _loop(tmp_path / "t", 6, _clip, hook_kwargs=kwargs)
    assert hook._capture.mode == "safe" and hook._capture.affected == []
    assert trial.steps() == list(range(6))
    if kwargs is RAW:
        _assert_saved(trial, grads, starts, range(6))
        return
    for s in range(6):
        for name in GRADS:
            l2 = trial.tensor(name).reduction_value(s, "l2")
            np.testing.assert_allclose(l2, np.linalg.norm(grads[s][name]), rtol=1e-5, err_msg=f"{name}@{s}")
            assert l2 > 1e-2  # (the clipped norms are below 1e-3)


@pytest.mark.parametrize("start_at", [None, 0], ids=["held", "handed-at-once"])
def test_clipping_that_begins_after_the_probe_drops_that_steps_gradients_with_a_warning(tmp_path, caplog, start_at):
    first = PROBE_PASSES + 2

    def late_clip(i, model, opt):
        if i >= first:
            _clip(i, model, opt)

    with caplog.at_level(logging.WARNING, logger="smdebug"):
        trial, hook, grads, starts = _loop(tmp_path / "t", first + 3, late_clip, start_at=start_at)
    assert hook._capture.affected == [first] and hook._capture.mode == "safe"
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1 and f"step {first}:" in warned[0] and GRADS[0] in warned[0]
    for name in GRADS:  # the affected step has no gradient, not a clipped one
        with pytest.raises(TensorUnavailableForStep):
            trial.tensor(name).value(first)
    _assert_saved(trial, grads, starts, [s for s in range(first + 3) if s != first])  # the others: as backward made them


def test_gradient_accumulation_saves_each_micro_batchs_accumulated_gradient(tmp_path):
    trial, hook, grads, starts = _loop(tmp_path / "t", 12, accumulate=3)
    assert hook._capture.mode == "async" and hook._capture.affected == []
    # the accumulation did change .grad in place: micro-batch 2's gradient is not micro-batch 1's
    assert not np.allclose(grads[1][GRADS[0]], grads[0][GRADS[0]])
    _assert_saved(trial, grads, starts, range(12))


def test_zero_grad_in_place_keeps_the_hook_waiting_at_the_end_of_backward(tmp_path):
    trial, hook, grads, starts = _loop(tmp_path / "t", PROBE_PASSES + 3, set_to_none=False)
    assert hook._capture.mode == "safe" and hook._capture.affected == []
    _assert_saved(trial, grads, starts, range(PROBE_PASSES + 3))


def test_grad_scaler_unscale_which_torch_does_not_count_is_seen_by_the_probe(tmp_path):
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
    v0 = []

    def unscale(i, model, opt):
        v0.append(next(model.parameters()).grad._version)
        scaler.unscale_(opt)
        assert next(model.parameters()).grad._version == v0[-1]  # no version bump: the norm tells

    trial, hook, grads, starts = _loop(tmp_path / "t", PROBE_PASSES + 3, unscale, scaler=scaler)
    assert hook._capture.mode == "safe" and hook._capture.affected == []
    _assert_saved(trial, grads, starts, range(PROBE_PASSES + 3))  # the scaled gradients backward made


def test_under_torch_distributed_the_hook_waits_at_the_end_of_backward(tmp_path):
    """DDP's and FSDP's collectives change gradients in place without torch's version counter."""
    trial, hook, grads, starts = _loop(tmp_path / "t", PROBE_PASSES + 3, distributed=lambda: object())
    assert hook._capture.mode == "safe"
    _assert_saved(trial, grads, starts, range(PROBE_PASSES + 3))
