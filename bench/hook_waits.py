"""How long the training thread waits for the copy thread, per step and per call site (the
caller chain of each ``DeferredCopier.sync``), in wall time: the waits are blocking, not CPU.

usage: PYTHONPATH=src python bench/hook_waits.py CONFIG [STEPS]   CONFIG: raw | reductions
Same model and hook as bench/hook_workload.py (MLP 256-512-512-512-10, batch 128, 1 thread).
"""

from __future__ import annotations

import collections
import sys
import tempfile
import time

from hook_workload import build

WARMUP = 30


def main() -> None:
    config, steps = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 200
    step, hook = build(config, tempfile.mkdtemp(prefix="smdebug-waits-"))
    for _ in range(WARMUP):
        step()
    copier = hook.adapter.copier
    plain_sync = copier.sync
    spent: collections.Counter = collections.Counter()
    calls: collections.Counter = collections.Counter()

    def timed_sync() -> None:
        t0 = time.perf_counter()
        plain_sync()
        frame, chain = sys._getframe(1), []
        while frame is not None and len(chain) < 4:
            chain.append(frame.f_code.co_name)
            frame = frame.f_back
        site = " < ".join(chain)
        spent[site] += time.perf_counter() - t0
        calls[site] += 1

    copier.sync = timed_sync
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    wall = (time.perf_counter() - t0) / steps
    hook.close()
    print(f"{config}: {steps} steps, {wall * 1e3:.3f} ms/step wall")
    for site, s in spent.most_common():
        print(f"  {s / steps * 1e6:8.1f} us/step  {calls[site] / steps:5.2f} calls/step  {site}")


if __name__ == "__main__":
    main()
