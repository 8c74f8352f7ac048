"""Activation checkpointing (as used with FSDP2): backward runs a checkpointed block's forward
again; the layers' outputs of that recomputation are not saved a second time in the step."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

import smdebug.pytorch as smd
from smdebug.trials import create_trial


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 6), nn.Tanh())
        self.out = nn.Linear(6, 1)

    def forward(self, x):
        return self.out(torch.relu(checkpoint(self.block, x, use_reentrant=False)))


@pytest.mark.parametrize("reentrant", [False, True])
def test_checkpointed_layers_are_saved_once_per_step(tmp_path, reentrant):
    torch.manual_seed(0)
    model = Model()
    if reentrant:
        model.forward = lambda x: model.out(torch.relu(checkpoint(model.block, x, use_reentrant=True)))
    first = copy.deepcopy(model.block[0])  # not registered: its calls are not saved (no optimizer: weights stay)
    hook = smd.Hook(
        out_dir=str(tmp_path / "run"),
        save_config=smd.SaveConfig(save_interval=1),
        include_collections=["outputs", "gradients"],
    )
    hook.register_module(model)
    xs = [torch.randn(3, 4, requires_grad=reentrant) for _ in range(2)]
    expected = []
    for x in xs:
        with torch.no_grad():
            expected.append(first(x).numpy().copy())
        model(x).sum().backward()
    hook.close()
    trial = create_trial(str(tmp_path / "run"))
    assert trial.steps() == [0, 1]
    names = trial.tensor_names()
    assert {"block.0_output_0", "block.2_output_0", "gradient/Model_block.0.weight"} <= set(names)
    assert not [n for n in names if n.endswith("_output_1")], names  # no second copy from the recomputation
    for step, want in enumerate(expected):
        np.testing.assert_allclose(trial.tensor("block.0_output_0").value(step), want, rtol=1e-6)
