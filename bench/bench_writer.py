"""The writer thread's own cost, without the framework: CPU time to write one step of issue 22's
config (a) (raw weights, biases and gradients of an MLP 256-512-512-512-10, and the loss: 17
float32 tensors, 5.2 MB) as the hook's StepWriter does it: FileWriter.write_tensors, then close
(event file, index, consolidation). The arrays are refilled each step (as the hook's copies are)
so that they are not hot in the cache only because the benchmark keeps writing the same bytes.

With --big, the step is one 16 MB tensor and its gradient instead (an embedding of 8192 x 512),
which shows what the size of each write call costs.

With --hook-big, the same through the PyTorch hook: an nn.Embedding(8192, 512) model saving its
raw weights and gradients every step (33.6 MB a step); prints each thread's CPU ms/step.

usage: PYTHONPATH=<tree>/src python bench/bench_writer.py [STEPS] [ROUNDS] [--profile] [--big | --hook-big]
prints the median writer CPU ms/step of each round (time.thread_time; robust to machine load,
except for what the kernel charges for page-cache writes under memory pressure) and, with
--profile, cProfile's breakdown (CPU timer) of one extra round.
"""

from __future__ import annotations

import cProfile
import json
import pstats
import shutil
import sys
import tempfile
import time

import numpy as np

from smdebug.core.modes import ModeKeys
from smdebug.core.output.consolidate import BucketConsolidator
from smdebug.core.output.writer import FileWriter
from smdebug.storage import open_store

SHAPES = [
    ("0.weight", (512, 256)),
    ("0.bias", (512,)),
    ("2.weight", (512, 512)),
    ("2.bias", (512,)),
    ("4.weight", (512, 512)),
    ("4.bias", (512,)),
    ("6.weight", (10, 512)),
    ("6.bias", (10,)),
]
if "--big" in sys.argv:
    SHAPES = [("embedding.weight", (8192, 512))]


def arrays() -> list:
    rng = np.random.default_rng(0)
    out = [(name, rng.standard_normal(shape).astype(np.float32)) for name, shape in SHAPES]
    out += [("gradient/" + name, rng.standard_normal(shape).astype(np.float32)) for name, shape in SHAPES]
    out.append(("CrossEntropyLoss_output_0", np.array(2.3, dtype=np.float32)))
    return out


def one_round(steps: int, profile: cProfile.Profile | None = None) -> list[float]:
    tensors = arrays()
    scratch = [a.copy() for _n, a in tensors]
    out = tempfile.mkdtemp(prefix="smdebug-bench-writer-")
    try:
        store = open_store(out)
        cons = BucketConsolidator(store, "worker_0")
        times = []
        for step in range(steps):
            for (_n, a), s in zip(tensors, scratch):  # what the copy thread does: fresh bytes
                np.multiply(s, 1.0, out=a)
            t0 = time.thread_time()
            if profile is not None:
                profile.enable()
            fw = FileWriter(out, worker="worker_0", step=step, store=store, consolidator=cons)
            fw.write_tensors([(n, a, None) for n, a in tensors], mode=ModeKeys.TRAIN, mode_step=step)
            fw.close()
            if profile is not None:
                profile.disable()
            times.append(time.thread_time() - t0)
        cons.close()
        return times[5:]
    finally:
        shutil.rmtree(out, ignore_errors=True)


def hook_big(steps: int) -> dict:
    """Writer, copy and training thread CPU ms/step of the hook saving an embedding's raw weights
    and gradients (each thread's CPU is taken when it ends: the hook's close included)."""
    import logging
    import threading

    import torch
    from torch import nn

    import smdebug.pytorch as smd

    logging.disable(logging.CRITICAL)
    cpu: dict[str, float] = {}
    run = threading.Thread.run

    def timed_run(self):
        try:
            run(self)
        finally:
            cpu[self.name] = cpu.get(self.name, 0.0) + time.thread_time()

    threading.Thread.run = timed_run
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(8192, 512), nn.Flatten(), nn.Linear(512 * 4, 10))
    loss_fn = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randint(0, 8192, (64, 4)), torch.randint(0, 10, (64,))
    out = tempfile.mkdtemp(prefix="smdebug-bench-writer-")
    try:
        hook = smd.Hook(
            out_dir=out,
            reduction_config=smd.ReductionConfig(save_raw_tensor=True),
            save_config=smd.SaveConfig(save_interval=1),
            include_collections=["weights", "gradients", "losses"],
        )
        hook.register_module(model)
        hook.register_loss(loss_fn)
        c0 = time.thread_time()
        for _ in range(steps):
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()
        train = time.thread_time() - c0
        hook.close()
    finally:
        threading.Thread.run = run
        shutil.rmtree(out, ignore_errors=True)
    return {
        "training": round(train / steps * 1e3, 3),
        **{k: round(v / steps * 1e3, 3) for k, v in cpu.items() if k.startswith("smdebug")},
    }


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    steps = int(args[0]) if args else 200
    if "--hook-big" in sys.argv:
        print(json.dumps({"cpu_ms_per_step": hook_big(steps)}))
        return
    rounds = int(args[1]) if len(args) > 1 else 3
    medians = []
    for _ in range(rounds):
        t = sorted(one_round(steps))
        medians.append(t[len(t) // 2] * 1e3)
    mb = sum(a.nbytes for _n, a in arrays()) / 1e6
    print(json.dumps({"writer_cpu_ms_per_step": [round(m, 3) for m in medians], "mb_per_step": round(mb, 2)}))
    if "--profile" in sys.argv:
        prof = cProfile.Profile(time.thread_time)
        one_round(min(steps, 100), prof)
        pstats.Stats(prof).sort_stats("tottime").print_stats(20)


if __name__ == "__main__":
    main()
