"""Interleaved A/B of source trees (and settings) of the hook, for a machine that other work loads.

Each run is a fresh process (bench/hook_workload.py's model and hook) that warms up, then runs
BLOCKS blocks of STEPS steps and measures each block: wall time, training-thread CPU and process
CPU per step. Variants alternate A, B, ..., then ..., B, A. Reported per variant: the minimum over
all blocks of all rounds (the block other work disturbed least; on a quiet machine every block)
and the median over rounds of each round's minimum. A variant whose name starts with "none" runs
without a hook (the hookless step, measured in the same rounds).

usage: python bench/hook_ab.py CONFIG ROUNDS BLOCKS STEPS NAME=TREE[:ENV=VALUE,...] ...
       CONFIG: raw | reductions; TREE: a checkout whose src/ is put first on PYTHONPATH
example: python bench/hook_ab.py reductions 8 4 40 none=. before=/tmp/old after=.
         python bench/hook_ab.py reductions 8 4 40 default=. short=.:SMDEBUG_GIL_SWITCH_INTERVAL=0.00025
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CHILD = r"""
import json, logging, shutil, sys, tempfile, time
logging.disable(logging.CRITICAL)
sys.path.insert(0, sys.argv[4])
from hook_workload import build
config, blocks, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
out_dir = tempfile.mkdtemp(prefix="smdebug-ab-")
step, hook = build(config, out_dir)
for _ in range(30):
    step()
out = []
for b in range(blocks):
    t0, c0, p0 = time.perf_counter(), time.thread_time(), time.process_time()
    for _ in range(steps):
        step()
    out.append(((time.perf_counter() - t0) / steps, (time.thread_time() - c0) / steps, (time.process_time() - p0) / steps))
if hook is not None:
    hook.close()
shutil.rmtree(out_dir, ignore_errors=True)
print(json.dumps(out))
"""


def main() -> None:
    config, rounds, blocks, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    variants = []
    for spec in sys.argv[5:]:
        name, rest = spec.split("=", 1)
        tree, _, envs = rest.partition(":")
        env = dict(e.split("=", 1) for e in envs.split(",") if e)
        variants.append((name, tree, env))
    res: dict[str, list] = {n: [] for n, _, _ in variants}
    for r in range(rounds):
        order = variants if r % 2 == 0 else variants[::-1]
        for name, tree, env in order:
            e = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=os.path.join(os.path.abspath(tree), "src"), **env)
            cfg = "none" if name.startswith("none") else config
            p = subprocess.run(
                [sys.executable, "-c", CHILD, cfg, str(blocks), str(steps), HERE],
                env=e,
                capture_output=True,
                text=True,
                check=False,
            )
            if p.returncode:
                raise SystemExit(f"{name} failed:\n{p.stderr[-2000:]}")
            res[name].append(json.loads(p.stdout.strip().splitlines()[-1]))
    print(f"{config}: {rounds} rounds x {blocks} blocks x {steps} steps; load {os.getloadavg()}")
    print(
        f"{'variant':<14}{'min wall':>10}{'min train':>11}{'min proc':>10}{'med(min) wall':>15}"
        f"{'med(min) train':>16}{'med(min) proc':>15}   ms/step"
    )
    for name, rs in res.items():
        allb = [b for rr in rs for b in rr]
        mins = [min(b[i] for b in allb) * 1e3 for i in range(3)]
        meds = [statistics.median(min(b[i] for b in rr) for rr in rs) * 1e3 for i in range(3)]
        print(
            f"{name:<14}{mins[0]:>10.3f}{mins[1]:>11.3f}{mins[2]:>10.3f}{meds[0]:>15.3f}{meds[1]:>16.3f}{meds[2]:>15.3f}"
        )


if __name__ == "__main__":
    main()
