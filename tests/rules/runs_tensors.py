"""Real PyTorch training runs for the tests of the tensor and weight rules.

Tiny models on scikit-learn's digits (full batch of 256 images, 64 pixels scaled to [0, 1]),
saved with ``smdebug.pytorch.Hook`` at every step; the loop keeps what the hook should have saved
(parameters at the start of each step, gradients, the loss), so a test can tell from the run itself
at which step a condition first holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn

import smdebug.pytorch as smd
from smdebug.core.modes import ModeKeys
from smdebug.exceptions import RuleEvaluationConditionMet
from smdebug.rules import invoke_rule
from smdebug.trials import create_trial

MODES = {"T": ModeKeys.TRAIN, "E": ModeKeys.EVAL}


@lru_cache(maxsize=1)
def digits(n: int = 256):
    from sklearn.datasets import load_digits

    d = load_digits()
    x = torch.tensor(d.data[:n] / 16.0, dtype=torch.float32)
    y = torch.tensor(d.target[:n], dtype=torch.long)
    return x, y


class ReluNet(nn.Module):
    """64 -> 32 -> 32 -> 10 with ReLU modules named so that their inputs match ``.*relu_input``."""

    def __init__(self, seed: int = 0, init_gain: float = 2.0**0.5):
        super().__init__()
        torch.manual_seed(seed)
        self.fc1 = nn.Linear(64, 32)
        self.l1_relu = nn.ReLU()
        self.fc2 = nn.Linear(32, 32)
        self.l2_relu = nn.ReLU()
        self.fc3 = nn.Linear(32, 10)
        for fc in (self.fc1, self.fc2, self.fc3):  # He initialisation: variances kept across layers
            nn.init.normal_(fc.weight, std=init_gain / fc.in_features**0.5)
            nn.init.zeros_(fc.bias)

    def forward(self, x):
        return self.fc3(self.l2_relu(self.fc2(self.l1_relu(self.fc1(x)))))


def deep_sigmoid(depth: int = 6, width: int = 32, std: float = 1e-2, seed: int = 0) -> nn.Sequential:
    torch.manual_seed(seed)
    layers: list = [nn.Linear(64, width), nn.Sigmoid()]
    for _ in range(depth - 1):
        layers += [nn.Linear(width, width), nn.Sigmoid()]
    layers.append(nn.Linear(width, 10))
    model = nn.Sequential(*layers)
    for m in model:
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, std=std)
            nn.init.zeros_(m.bias)
    return model


def small(seed: int = 0) -> nn.Sequential:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(64, 16), nn.ReLU(), nn.Linear(16, 10))


@dataclass
class Run:
    """What a training run saved (``trial``) and what the loop saw at each global step."""

    path: Path
    params: list = field(default_factory=list)  # per step: {name: value at the start of the step}
    grads: list = field(default_factory=list)  # per step: {name: gradient} (empty on EVAL steps)
    losses: list = field(default_factory=list)

    @property
    def trial(self):
        return create_trial(str(self.path))

    def first_step(self, test, kinds=("params", "grads", "losses")) -> int | None:
        """The first global step where ``test(array)`` holds for a saved parameter, gradient or loss."""
        for s, (p, g, loss) in enumerate(zip(self.params, self.grads, self.losses)):
            seen = [
                *(p.values() if "params" in kinds else ()),
                *(g.values() if "grads" in kinds else ()),
                *([loss] if "losses" in kinds else []),
            ]
            if any(test(v) for v in seen):
                return s
        return None


def train(
    path: Path,
    model: nn.Module,
    schedule: str = "T" * 6,
    lr: float = 0.1,
    collections=None,
    regex_collections=None,
    before_step=None,
    freeze=(),
    hook_kwargs=None,
) -> Run:
    """Train ``model`` on digits, one full-batch step per letter of ``schedule`` (T train, E eval).

    ``collections`` are the hook's include_collections (default: weights, biases, gradients,
    losses); ``regex_collections`` {name: include_regex} adds collections; ``before_step(i, model)``
    runs before step ``i`` (after the previous update); parameters named in ``freeze`` get no
    gradient; ``hook_kwargs`` go to the Hook (e.g. a reduction_config).
    """
    x, y = digits()
    for name, p in model.named_parameters():
        if name in freeze:
            p.requires_grad_(False)
    cols = list(collections or ["weights", "biases", "gradients", "losses"])
    hook = smd.Hook(
        out_dir=str(path),
        save_config=smd.SaveConfig(save_interval=1),
        include_collections=cols + list(regex_collections or {}),
        **(hook_kwargs or {}),
    )
    for name, regex in (regex_collections or {}).items():
        hook.get_collection(name).include(regex)
    loss_fn = nn.CrossEntropyLoss()
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=lr)
    run = Run(path)
    mode = None
    try:
        for i, letter in enumerate(schedule):
            if MODES[letter] != mode:
                mode = MODES[letter]
                hook.set_mode(mode)
            if before_step is not None:
                with torch.no_grad():
                    before_step(i, model)
            run.params.append({n: p.detach().clone().numpy() for n, p in model.named_parameters()})
            if letter == "T":
                opt.zero_grad()
                loss = loss_fn(model(x), y)
                loss.backward()
                run.grads.append({n: p.grad.clone().numpy() for n, p in model.named_parameters() if p.grad is not None})
                opt.step()
            else:
                with torch.no_grad():
                    loss = loss_fn(model(x), y)
                run.grads.append({})
            run.losses.append(loss.detach().numpy().copy())
    finally:
        hook.close()
        smd.del_hook()
    return run


def fired_at(rule, start_step: int = 0) -> int | None:
    """The step at which ``rule`` fires when invoked over the whole trial, or None."""
    try:
        invoke_rule(rule, start_step=start_step, raise_eval_cond=True)
    except RuleEvaluationConditionMet as exc:
        return exc.step
    return None


def nonfinite(v) -> bool:
    return not np.isfinite(np.asarray(v)).all()
