"""A torch.compile'd model registered with the hook saves what the eager model saves."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn as nn
from ptutil import GRADS, LOSS, PARAMS, data, make_hook, mlp, snap

import smdebug.pytorch as smd
from smdebug.core.modes import ModeKeys
from smdebug.trials import create_trial


def _compile_or_skip():
    try:
        f = torch.compile(lambda t: t * 2 + 1)
        f(torch.ones(3))
    except Exception as e:  # noqa: BLE001 - no compiler, unsupported Python ...
        pytest.skip(f"torch.compile does not work on this machine: {type(e).__name__}: {e}")


def test_compiled_model_saves_weights_and_gradients_under_the_eager_names(tmp_path):
    _compile_or_skip()
    model = mlp()
    compiled = torch.compile(model)
    loss_fn = nn.CrossEntropyLoss()
    hook = make_hook(
        tmp_path / "t",
        None,
        loss_fn,
        save_config=smd.SaveConfig(save_interval=1),
        include_collections=["weights", "biases", "gradients", "losses"],
    )
    hook.register_module(compiled)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = data()
    params, grads, losses = [], [], []
    hook.set_mode(smd.modes.TRAIN)
    for _ in range(3):
        params.append({f"Sequential_{n}": snap(p) for n, p in model.named_parameters()})
        opt.zero_grad()
        loss = loss_fn(compiled(x), y)
        loss.backward()
        grads.append({f"gradient/Sequential_{n}": snap(p.grad) for n, p in model.named_parameters()})
        losses.append(snap(loss))
        opt.step()
    hook.close()
    assert not hook.disabled
    trial = create_trial(str(tmp_path / "t"))
    assert trial.tensor_names() == sorted([*PARAMS, *GRADS, LOSS])
    assert trial.tensor_names(collection="weights") == ["Sequential_0.weight", "Sequential_2.weight"]
    assert trial.tensor_names(collection="gradients") == GRADS
    assert trial.steps(mode=ModeKeys.TRAIN) == [0, 1, 2]
    for s in range(3):
        for name, value in {**params[s], **grads[s]}.items():
            np.testing.assert_array_equal(trial.tensor(name).value(s), value, err_msg=f"{name}@{s}")
        np.testing.assert_array_equal(trial.tensor(LOSS).value(s), losses[s])
