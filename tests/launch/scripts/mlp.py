"""An unmodified PyTorch training script (an MLP, F.cross_entropy), for the launcher's tests.

--explicit: the same script hooked by hand from the job's hook JSON (the reference for names).
--nan-at K: the input of step K holds a NaN. --step-time S: each step lasts at least S seconds.
--compile: the model is torch.compile'd. Prints the last step it ran as "last step N".
"""

import argparse
import os
import signal
import time

import torch
import torch.nn.functional as F
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--nan-at", type=int, default=-1)
    p.add_argument("--step-time", type=float, default=0.0)
    p.add_argument("--explicit", action="store_true")
    p.add_argument("--compile", action="store_true")
    p.add_argument("--kill-at", type=int, default=-1, help="SIGKILL itself at this step")
    args = p.parse_args()
    torch.manual_seed(0)
    model = Net()
    hook = None
    if args.explicit:
        import smdebug.pytorch as smd

        hook = smd.Hook.create_from_json_file()
        hook.register_module(model)
    net = torch.compile(model) if args.compile else model
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(32, 8)
    y = torch.randint(0, 4, (32,))
    for step in range(args.steps):
        t0 = time.monotonic()
        xb = x.clone()
        if step == args.nan_at:
            xb[0, 0] = float("nan")
        opt.zero_grad()
        loss = F.cross_entropy(net(xb), y)
        if hook is not None:
            hook.record_tensor_value("loss", loss)
        loss.backward()
        opt.step()
        print(f"last step {step}", flush=True)
        if step == args.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        rest = args.step_time - (time.monotonic() - t0)
        if rest > 0:
            time.sleep(rest)  # the step's duration, not synchronisation


if __name__ == "__main__":
    main()
