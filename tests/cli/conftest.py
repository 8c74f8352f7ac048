"""Trials the CLI tests work on: a real PyTorch run on the digits images (written once per session)."""

from __future__ import annotations

import numpy as np
import pytest


def train_digits(out_dir, steps: int = 12, lr: float = 0.1, nan_at: int | None = None, same_batch=False) -> None:
    """A small MLP on sklearn's digits with the hook: weights, biases, gradients (raw + l2/mean), losses.

    TRAIN steps 0..steps-1, then 3 EVAL steps. With ``nan_at``, the input of that TRAIN step is NaN;
    with ``same_batch``, every TRAIN step sees the first batch.
    """
    import torch
    import torch.nn as nn
    from sklearn.datasets import load_digits

    import smdebug.pytorch as smd

    x, y = load_digits(return_X_y=True)
    x = torch.tensor(x / 16.0, dtype=torch.float32)
    y = torch.tensor(y)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    loss_fn = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    hook = smd.Hook(
        out_dir=str(out_dir),
        save_config=smd.SaveConfig(save_interval=1),
        reduction_config=smd.ReductionConfig(reductions=["mean"], norms=["l2"], save_raw_tensor=True),
        include_collections=["weights", "biases", "gradients", "losses"],
    )
    hook.register_module(model)
    hook.register_loss(loss_fn)
    hook.set_mode(smd.modes.TRAIN)
    for i in range(steps):
        j = 0 if same_batch else i
        xb, yb = x[j * 32 : (j + 1) * 32], y[j * 32 : (j + 1) * 32]
        if nan_at is not None and i == nan_at:
            xb = torch.full_like(xb, float("nan"))
        opt.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
    hook.set_mode(smd.modes.EVAL)
    with torch.no_grad():
        for i in range(3):
            loss_fn(model(x[1000 + i * 32 : 1000 + (i + 1) * 32]), y[1000 + i * 32 : 1000 + (i + 1) * 32])
    hook.close()


@pytest.fixture(scope="session")
def digits_trial(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "digits"
    train_digits(out)
    return str(out)


@pytest.fixture(scope="session")
def flat_trial(tmp_path_factory):
    """Learning rate 0: the loss never decreases."""
    out = tmp_path_factory.mktemp("cli") / "flat"
    train_digits(out, steps=14, lr=0.0, same_batch=True)
    return str(out)


@pytest.fixture(scope="session")
def nan_trial(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "nan"
    train_digits(out, steps=8, nan_at=5)
    return str(out)


def scalar(v) -> float:
    return float(np.asarray(v).ravel()[0])


@pytest.fixture(scope="session")
def odd_trial(tmp_path_factory):
    from oddtrial import write_odd_trial

    out = tmp_path_factory.mktemp("cli") / "odd"
    write_odd_trial(out)
    return str(out)
