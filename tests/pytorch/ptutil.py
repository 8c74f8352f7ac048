"""Helpers for the PyTorch hook tests: small real models, and a training loop that keeps copies
of what the hook should have saved at every step (parameters at the start of the step, gradients
after backward, the loss)."""

from __future__ import annotations

import importlib.util
import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn

import smdebug.pytorch as smd
from smdebug.core.modes import ModeKeys
from smdebug.trials import create_trial
from smdtest import RECIPES, flatten_oracle

WEIGHTS = ["Sequential_0.weight", "Sequential_2.weight"]
BIASES = ["Sequential_0.bias", "Sequential_2.bias"]
PARAMS = sorted(WEIGHTS + BIASES)
GRADS = [f"gradient/{n}" for n in PARAMS]
LOSS = "CrossEntropyLoss_output_0"
MODE_OF = {"T": ModeKeys.TRAIN, "E": ModeKeys.EVAL, "P": ModeKeys.PREDICT, "G": ModeKeys.GLOBAL}


def mlp(seed: int = 0, dtype=None) -> nn.Sequential:
    torch.manual_seed(seed)
    m = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    return m.to(dtype) if dtype is not None else m


class Net(nn.Module):
    """Named layers, so that ``include_regex=['relu']`` has something to match."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(self.relu(self.fc1(x)))


class Twice(nn.Module):
    """Applies the same Linear twice per forward call."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        return self.head(self.fc(torch.relu(self.fc(x))))


def data(n: int = 8, seed: int = 1, dtype=None):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 8, generator=g)
    y = torch.randint(0, 3, (n,), generator=g)
    return (x.to(dtype) if dtype is not None else x), y


def snap(t: torch.Tensor) -> np.ndarray:
    """An exact numpy copy (bfloat16 as ml_dtypes.bfloat16)."""
    t = t.detach().clone().cpu()
    if t.dtype == torch.bfloat16:
        import ml_dtypes

        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


@dataclass
class Step:
    mode: ModeKeys
    mode_step: int
    params: dict = field(default_factory=dict)  # tensor name -> value at the start of the step
    grads: dict = field(default_factory=dict)  # 'gradient/<name>' -> param.grad after backward
    loss: np.ndarray | None = None
    output: np.ndarray | None = None


def named_params(model: nn.Module, prefix: str | None = None) -> dict:
    prefix = prefix or model._get_name()
    return {f"{prefix}_{n}": p for n, p in model.named_parameters()}


def run(
    hook,
    model,
    schedule: str,
    x=None,
    y=None,
    lr: float = 0.1,
    loss_fn=None,
    prefix=None,
    eval_backward: bool = False,
    step_fn=None,
) -> list[Step]:
    """One forward call per letter of ``schedule`` (T train, E eval, P predict, G no set_mode);
    returns what each global step should have saved. ``step_fn(i, hook)`` runs after each step's
    backward."""
    if x is None:
        x, y = data(dtype=next(model.parameters()).dtype)
    loss_fn = loss_fn or nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    params = named_params(model, prefix)
    counters: dict = {}
    out = []
    mode = None
    for i, letter in enumerate(schedule):
        m = MODE_OF[letter]
        if letter != "G" and m != mode:
            hook.set_mode(m)
        mode = m
        rec = Step(m, counters.get(m, 0))
        counters[m] = rec.mode_step + 1
        rec.params = {n: snap(p) for n, p in params.items()}
        if m in (ModeKeys.TRAIN, ModeKeys.GLOBAL) or (eval_backward and m == ModeKeys.EVAL):
            opt.zero_grad()
            pred = model(x)
            loss = loss_fn(pred, y)
            loss.backward()
            rec.grads = {f"gradient/{n}": snap(p.grad) for n, p in params.items() if p.grad is not None}
            if m != ModeKeys.EVAL:
                opt.step()
        else:
            with torch.no_grad():
                pred = model(x)
                loss = loss_fn(pred, y) if m != ModeKeys.PREDICT else None
        rec.output = snap(pred)
        rec.loss = snap(loss) if loss is not None else None
        if step_fn is not None:
            step_fn(i, hook)
        out.append(rec)
    return out


def make_hook(path: Path, register=None, loss_fn=None, **kwargs):
    hook = smd.Hook(out_dir=str(path), **kwargs)
    if register is not None:
        hook.register_module(register)
    if loss_fn is not None:
        hook.register_loss(loss_fn)
    return hook


def train(path: Path, schedule: str = "TTTT", model=None, hook_kwargs=None, **run_kwargs):
    """Hook + model + loss, run the schedule, close; returns (trial, records, hook, model)."""
    model = model if model is not None else mlp()
    loss_fn = run_kwargs.pop("loss_fn", None) or nn.CrossEntropyLoss()
    hook = make_hook(path, model, loss_fn, **(hook_kwargs or {}))
    recs = run(hook, model, schedule, loss_fn=loss_fn, **run_kwargs)
    hook.close()
    return create_trial(str(path)), recs, hook, model


def load_recipes():
    """The module that wrote the 1.0.34 fixtures (it disables logging when imported: undone here)."""
    spec = importlib.util.spec_from_file_location("fixture_recipes", RECIPES)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    logging.disable(logging.NOTSET)
    return mod


def scalar(v) -> float:
    return float(np.asarray(v).ravel()[0])


flatten = flatten_oracle
