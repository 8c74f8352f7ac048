"""An unmodified PyTorch training script (no smdebug in it): an MLP on scikit-learn's digits.

Run it under ``smdebug run`` to get the hook and rules without changing it:

    smdebug run --collection weights --collection losses:save_interval=10 \
        --rule exploding_tensor --rule loss_not_decreasing --action stop -- python examples/unmodified_pytorch.py

usage: python examples/unmodified_pytorch.py [--epochs 4] [--nan-at STEP]
"""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch import nn


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--nan-at", type=int, default=-1, help="put a NaN in the input of this step (to see a rule fire)")
    args = p.parse_args()
    torch.manual_seed(0)
    digits = load_digits()
    x = torch.tensor(digits.data / 16.0, dtype=torch.float32)
    y = torch.tensor(digits.target, dtype=torch.long)
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    step = 0
    for epoch in range(args.epochs):
        for b in torch.randperm(len(x)).split(64):
            xb = x[b].clone()
            if step == args.nan_at:
                xb[0, 0] = float("nan")
            opt.zero_grad()
            loss = F.cross_entropy(model(xb), y[b])
            loss.backward()
            opt.step()
            step += 1
        print(f"epoch {epoch}: loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
