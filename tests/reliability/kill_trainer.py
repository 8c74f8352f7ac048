"""A training process to kill: imports torch and smdebug once, then forks one trainer per command.

Protocol (one line each, on stdin / stdout):
  test -> "run OUT_DIR SEED"    a child trains a small model with a PyTorch hook saving every step
  this -> "pid PID"             the child's pid (the test SIGKILLs it while it writes)
  this -> "exit STATUS"         os.waitpid's status once the child is gone
  test -> "quit"
Forking from one warm process keeps 20 kills fast (no torch import per run). At every step the
child also saves ``marker`` = full((MARKER,), step) (1 MB) so that a reader can check each value exactly.
"""

import os
import sys

import torch
from torch import nn

import smdebug.pytorch as smd

STEPS = 100_000  # never reached: the test kills the child long before
MARKER = 262_144  # floats: 1 MB a step, so that a kill often lands while a file is being written


def train(out_dir: str, seed: int) -> None:
    torch.set_num_threads(1)
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    hook = smd.Hook(out_dir=out_dir, save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["weights", "gradients", "losses", "default"])
    hook.register_module(model)
    loss_fn = nn.MSELoss()
    hook.register_loss(loss_fn)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(8, 16), torch.randn(8, 4)
    for step in range(STEPS):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        hook.save_tensor("marker", torch.full((MARKER,), float(step)))
        loss.backward()
        opt.step()


def _warm_up() -> None:
    """Import what the first optimizer and backward import (torch._dynamo: seconds) before forking."""
    torch.set_num_threads(1)
    m = nn.Linear(2, 1)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    m(torch.ones(1, 2)).sum().backward()
    opt.step()


def main() -> None:
    _warm_up()
    for line in sys.stdin:
        cmd = line.split()
        if not cmd or cmd[0] == "quit":
            return
        _, out_dir, seed = cmd
        pid = os.fork()
        if pid == 0:
            try:
                train(out_dir, int(seed))
            finally:
                os._exit(0)
        print(f"pid {pid}", flush=True)
        _, status = os.waitpid(pid, 0)
        print(f"exit {status}", flush=True)


if __name__ == "__main__":
    main()
