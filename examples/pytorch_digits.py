"""The demo: train a small MLP on scikit-learn's digits images with the smdebug hook, then open
the trial and show what was saved — steps, tensors, the loss per step, gradient norms per layer.

usage: python examples/pytorch_digits.py [--out-dir DIR] [--epochs 6]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time

import numpy as np
import torch
from sklearn.datasets import load_digits
from torch import nn

import smdebug.pytorch as smd
from smdebug.trials import create_trial


def train(out_dir: str, epochs: int) -> float:
    torch.manual_seed(0)
    digits = load_digits()
    x = torch.tensor(digits.data / 16.0, dtype=torch.float32)
    y = torch.tensor(digits.target, dtype=torch.long)
    perm = torch.randperm(len(x))
    train_idx, test_idx = perm[:1400], perm[1400:]
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    loss_fn = nn.CrossEntropyLoss()
    hook = smd.Hook(
        out_dir=out_dir,
        save_config=smd.SaveConfig(
            mode_save_configs={
                smd.modes.TRAIN: smd.SaveConfigMode(save_interval=10),
                smd.modes.EVAL: smd.SaveConfigMode(save_interval=1),
            }
        ),
        reduction_config=smd.ReductionConfig(
            reductions=["min", "max", "mean"], abs_reductions=["mean"], norms=["l2"], save_raw_tensor=True
        ),
        include_collections=["weights", "biases", "gradients", "losses"],
    )
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for epoch in range(epochs):
        hook.set_mode(smd.modes.TRAIN)
        model.train()
        for b in train_idx[torch.randperm(len(train_idx))].split(64):
            opt.zero_grad()
            loss = loss_fn(model(x[b]), y[b])
            loss.backward()
            opt.step()
        hook.save_scalar("epoch", epoch)
        hook.set_mode(smd.modes.EVAL)
        model.eval()
        correct = 0
        with torch.no_grad():
            for b in test_idx.split(100):
                out = model(x[b])
                loss_fn(out, y[b])
                correct += int((out.argmax(1) == y[b]).sum())
    hook.close()
    return correct / len(test_idx)


def show(out_dir: str) -> None:
    trial = create_trial(out_dir)
    steps = trial.steps()
    print(f"\ntrial {out_dir}")
    print(
        f"  {len(steps)} saved steps ({steps[0]}..{steps[-1]}), modes {[m.name for m in trial.modes()]}, "
        f"workers {trial.workers()}"
    )
    for m in trial.modes():
        print(f"  {m.name}: {len(trial.steps(mode=m))} mode steps saved")
    print(f"  {len(trial.tensor_names())} tensors:")
    for coll in ("weights", "biases", "gradients", "losses"):
        print(f"    {coll:<10} {', '.join(trial.tensor_names(collection=coll))}")

    loss_name = trial.tensor_names(collection="losses")[0]
    loss = trial.tensor(loss_name)
    for m in (smd.modes.TRAIN, smd.modes.EVAL):
        vals = loss.values(mode=m)
        ms = sorted(vals)
        pick = ms[:: max(1, len(ms) // 8)]
        print(f"\n  {loss_name}, {m.name} (mode step: loss)")
        print("    " + "  ".join(f"{s}:{float(vals[s]):.3f}" for s in pick))

    grads = trial.tensor_names(collection="gradients")
    gsteps = trial.tensor(grads[0]).steps(mode=smd.modes.TRAIN)
    pick = gsteps[:: max(1, len(gsteps) // 6)]
    print("\n  gradient L2 norm per layer (TRAIN mode steps)")
    print("    " + f"{'tensor':<34}" + "".join(f"{s:>9}" for s in pick))
    for g in grads:
        t = trial.tensor(g)
        row = [float(np.asarray(t.reduction_value(s, "l2", mode=smd.modes.TRAIN))) for s in pick]
        print("    " + f"{g:<34}" + "".join(f"{v:>9.4f}" for v in row))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-dir", default=None, help="where to save the trial (default: a new temp folder)")
    ap.add_argument("--epochs", type=int, default=6)
    args = ap.parse_args()
    out_dir = args.out_dir or tempfile.mkdtemp(prefix="smdebug-demo-")
    shutil.rmtree(out_dir, ignore_errors=True)
    t0 = time.perf_counter()
    acc = train(out_dir, args.epochs)
    print(f"trained {args.epochs} epochs in {time.perf_counter() - t0:.1f} s, test accuracy {acc:.3f}")
    show(out_dir)


if __name__ == "__main__":
    main()
