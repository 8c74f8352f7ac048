"""The writer thread's own cost, without the framework: CPU time to write one step of issue 22's
config (a) (raw weights, biases and gradients of an MLP 256-512-512-512-10, and the loss: 17
float32 tensors, 5.2 MB) as the hook's StepWriter does it: FileWriter.write_tensors, then close
(event file, index, consolidation). The arrays are refilled each step (as the hook's copies are)
so that they are not hot in the cache only because the benchmark keeps writing the same bytes.

With --big, the step is one 16 MB tensor and its gradient instead (an embedding of 8192 x 512),
which shows what the size of each write call costs.

usage: PYTHONPATH=<tree>/src python bench/bench_writer.py [STEPS] [ROUNDS] [--profile] [--big]
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

SHAPES = [("0.weight", (512, 256)), ("0.bias", (512,)), ("2.weight", (512, 512)), ("2.bias", (512,)),
          ("4.weight", (512, 512)), ("4.bias", (512,)), ("6.weight", (10, 512)), ("6.bias", (10,))]
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


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    steps = int(args[0]) if args else 200
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
