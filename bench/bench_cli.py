"""`smdebug info` on the trial benchmark's folder (1000 steps x 4 workers x 50 tensors by default).

Writes the trial with bench/workload.py (our FileWriter), then times the whole command, as a user
runs it (a fresh process: interpreter start, imports, opening the trial, the table), median of 5.

usage: python bench/bench_cli.py [--steps 1000] [--workers 4] [--tensors 50] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--tensors", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="bench_cli_")
    try:
        trial = os.path.join(tmp, "trial")
        subprocess.run(
            [sys.executable, str(HERE / "workload.py"), "write", trial, str(a.steps), str(a.workers), str(a.tensors)],
            check=True,
            capture_output=True,
        )
        for cmd in (["info"], ["info", "--json"]):
            times = []
            for _ in range(a.repeat):
                t0 = time.perf_counter()
                subprocess.run([sys.executable, "-m", "smdebug", *cmd, trial], check=True, capture_output=True)
                times.append(time.perf_counter() - t0)
            print(
                f"smdebug {' '.join(cmd):<12} {a.steps} steps x {a.workers} workers x {a.tensors} tensors: "
                f"median {statistics.median(times):.3f} s (min {min(times):.3f}, max {max(times):.3f})"
            )
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "smdebug", "--help"], check=True, capture_output=True)
        print(f"smdebug --help: {time.perf_counter() - t0:.3f} s")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
