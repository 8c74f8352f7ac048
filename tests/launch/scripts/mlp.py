"""An unmodified PyTorch training script (an MLP, F.cross_entropy), for the launcher's tests.

--explicit: the same script hooked by hand from the job's hook JSON (the reference for names).
--nan-at K: the input of step K holds a NaN. --step-time S: each step lasts at least S seconds
(--stall-at K --stall S: step K lasts S seconds more).
--compile: the model is torch.compile'd. --amp: CPU autocast (bfloat16) and torch.amp.GradScaler
(the explicit hook records the unscaled loss). Prints the last step it ran as "last step N".
--eval-every K --eval-steps N: after every K training steps, N forward calls under model.eval() and
torch.no_grad(), then model.train() again (the script never sets a mode); --script-mode M: the script
sets the hook's mode to M itself (through smd.get_hook()) before its first evaluation.
"""

import argparse
import os
import signal
import time

import torch
import torch.nn.functional as F
from gloo_exit import end_gloo  # beside this script
from nets import Net  # beside this script
from torch import nn


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--nan-at", type=int, default=-1)
    p.add_argument("--step-time", type=float, default=0.0)
    p.add_argument("--explicit", action="store_true")
    p.add_argument("--compile", action="store_true")
    p.add_argument("--kill-at", type=int, default=-1, help="SIGKILL itself at this step")
    p.add_argument("--loss-module", action="store_true", help="nn.CrossEntropyLoss instead of F.cross_entropy")
    p.add_argument("--workers", type=int, default=0, help="batches from a DataLoader with spawned workers")
    p.add_argument("--ddp", action="store_true", help="DistributedDataParallel on gloo (under torchrun)")
    p.add_argument("--ignore-stop", action="store_true", help="catch TrainingStopRequested and go on")
    p.add_argument("--ignore-sigterm", action="store_true")
    p.add_argument("--amp", action="store_true", help="autocast to bfloat16 with a GradScaler")
    p.add_argument("--stall-at", type=int, default=-1, help="this step lasts --stall seconds more")
    p.add_argument("--stall", type=float, default=0.0)
    p.add_argument("--eval-every", type=int, default=0, help="evaluate after every K training steps")
    p.add_argument("--eval-steps", type=int, default=2, help="forward calls per evaluation")
    p.add_argument("--script-mode", help="hook.set_mode(smd.modes.<MODE>) before the first evaluation")
    p.add_argument("--timeline", help="append 'STEP TIME' (time.time() at each step's start) to this file")
    args = p.parse_args()
    torch.manual_seed(0)
    if args.ignore_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if args.ddp:
        torch.distributed.init_process_group("gloo")
    model = Net()
    loss_fn = nn.CrossEntropyLoss() if args.loss_module else None
    hook = None
    if args.explicit:
        import smdebug.pytorch as smd

        hook = smd.Hook.create_from_json_file()
        hook.register_module(model)
        if loss_fn is not None:
            hook.register_loss(loss_fn)
    net = torch.compile(model) if args.compile else model
    if args.ddp:
        net = torch.nn.parallel.DistributedDataParallel(net)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(32, 8)
    y = torch.randint(0, 4, (32,))
    batches = None
    if args.workers:
        data = torch.utils.data.TensorDataset(x, y)
        batches = iter(
            torch.utils.data.DataLoader(data, batch_size=32, num_workers=args.workers, multiprocessing_context="spawn")
        )
    scaler = torch.amp.GradScaler("cpu") if args.amp else None
    timeline = open(args.timeline, "a", buffering=1) if args.timeline else None
    for step in range(args.steps):
        t0 = time.monotonic()
        if timeline is not None:
            timeline.write(f"{step} {time.time()}\n")
        if batches is not None and step == 0:
            next(batches)  # the workers start and run the bootstrap
        xb = x.clone()
        if step == args.nan_at:
            xb[0, 0] = float("nan")
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.amp):
            try:
                out = net(xb)
            except Exception as exc:
                if not (args.ignore_stop and type(exc).__name__ == "TrainingStopRequested"):
                    raise
                out = net(xb)
            loss = loss_fn(out, y) if loss_fn is not None else F.cross_entropy(out, y)
        if hook is not None and loss_fn is None:
            hook.record_tensor_value("loss", loss)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        print(f"last step {step}", flush=True)
        if args.eval_every and (step + 1) % args.eval_every == 0:
            evaluate(net, x, args)
        if step == args.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        rest = args.step_time - (time.monotonic() - t0) + (args.stall if step == args.stall_at else 0.0)
        if rest > 0:
            time.sleep(rest)  # the step's duration, not synchronisation

    if args.ddp:
        end_gloo()  # see gloo_exit.py


def evaluate(net, x, args) -> None:
    if args.script_mode:
        import smdebug.pytorch as smd

        smd.get_hook().set_mode(getattr(smd.modes, args.script_mode))
        args.script_mode = None  # once
    net.eval()
    with torch.no_grad():
        for _ in range(args.eval_steps):
            net(x)
    net.train()


if __name__ == "__main__":
    main()
