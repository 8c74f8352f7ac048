"""Training processes for the reliability tests: imports torch and smdebug once, forks one trainer
per command (no torch import per run, so 20 kills stay fast).

Protocol, one JSON object or line each, on stdin / stdout:
  test -> {"out": OUT_DIR, "seed": N, ...options of train()}   a child trains with a PyTorch hook
  this -> "pid PID"             the child's pid (the kill test SIGKILLs it while it writes)
  this -> "exit STATUS"         os.waitpid's status once the child is gone
  test -> "quit"
At every step the child saves ``marker`` = full((n,), step) so that a reader can check each value
exactly: n is MARKER (1 MB) from step ``big_from`` on and 1024 before it.
"""

import json
import logging
import os
import resource
import signal
import sys
import time
import traceback

import torch
from torch import nn

import smdebug.pytorch as smd

MARKER = 262_144  # floats: 1 MB a step, so that a kill often lands while a file is being written


def train(out, seed, steps=100_000, big_from=0, pause_at=-1, workdir=None, fsize=0, uid=-1):
    """``steps`` (the kill test kills the child long before 100_000); ``fsize``: RLIMIT_FSIZE in
    bytes (a disk that fills up); ``uid``: run as that user (so that file modes apply to it);
    ``pause_at``: before that step write WORKDIR/paused and wait for WORKDIR/go; at the end write
    WORKDIR/report.json. smdebug's log goes to WORKDIR/log."""
    if uid >= 0:
        os.setgid(uid)
        os.setuid(uid)
    if workdir:
        logging.basicConfig(filename=os.path.join(workdir, "log"), level=logging.INFO, force=True)
    if fsize:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    hook = smd.Hook(
        out_dir=out,
        save_config=smd.SaveConfig(save_interval=1),
        include_collections=["weights", "gradients", "losses", "default"],
    )
    hook.register_module(model)
    loss_fn = nn.MSELoss()
    hook.register_loss(loss_fn)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(8, 16), torch.randn(8, 4)
    losses = []
    for step in range(steps):
        if step == pause_at:
            open(os.path.join(workdir, "paused"), "w").close()
            deadline = time.monotonic() + 60
            while not os.path.exists(os.path.join(workdir, "go")) and time.monotonic() < deadline:
                time.sleep(0.001)  # polling for the test's go-ahead, bounded
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        hook.save_tensor("marker", torch.full((MARKER if step >= big_from else 1024,), float(step)))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    hook.close()
    if workdir:
        params = {n: p.detach().tolist() for n, p in model.named_parameters()}
        with open(os.path.join(workdir, "report.json"), "w") as f:
            json.dump({"losses": losses, "params": params, "disabled": hook.disabled}, f)


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
        if line.strip() in ("", "quit"):
            return
        kwargs = json.loads(line)
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                train(**kwargs)
                code = 0
            except BaseException:  # noqa: BLE001 - reported on stderr, the exit code says it failed
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        print(f"pid {pid}", flush=True)
        _, status = os.waitpid(pid, 0)
        print(f"exit {status}", flush=True)


if __name__ == "__main__":
    main()
