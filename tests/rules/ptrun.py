"""Small real PyTorch trainings written with smdebug.pytorch.Hook, for the rule tests.

A run keeps what the hook should have saved (gradients after each backward, the loss), so a test
can compute a rule's expected answer independently of the trial reader.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn as nn
from ptutil import data, make_hook, run

from smdebug.core.save_config import SaveConfig


@dataclass
class Run:
    path: str
    steps: list  # ptutil.Step per global step (params at step start, grads after backward, loss)


def mlp(seed: int) -> nn.Sequential:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))


def deep_sigmoid(seed: int, depth: int = 8) -> nn.Sequential:
    """Sigmoid layers with tiny weights: the gradients of the first layers vanish."""
    torch.manual_seed(seed)
    layers: list = []
    for _ in range(depth):
        lin = nn.Linear(8, 8)
        nn.init.normal_(lin.weight, std=0.01)
        nn.init.zeros_(lin.bias)
        layers += [lin, nn.Sigmoid()]
    layers.append(nn.Linear(8, 3))
    return nn.Sequential(*layers)


def train(path: Path, model: nn.Module, steps: int, save_interval: int = 1, lr: float = 0.1) -> Run:
    loss_fn = nn.CrossEntropyLoss()
    hook = make_hook(
        path,
        register=model,
        loss_fn=loss_fn,
        save_config=SaveConfig(save_interval=save_interval),
        include_collections=["weights", "biases", "gradients", "losses"],
    )
    x, y = data(n=16, seed=3)
    recs = run(hook, model, "T" * steps, x, y, lr=lr, loss_fn=loss_fn)
    hook.close()
    return Run(str(path), recs)
