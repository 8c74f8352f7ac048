"""Hook overhead: the training step with our hook and with smdebug 1.0.34's, against no hook.

MLP 256-512-512-512-10, batch 128, CPU, one thread, saving every step (a) weights, biases,
gradients and losses as raw tensors, (b) the same collections as reductions only (min, max,
mean, std, abs mean, l2). Each configuration runs in a fresh process; the step time counts the
training loop plus hook.close() (which waits for the background writer), divided by the steps.
Runs are interleaved and each starts after its previous output is deleted and os.sync(), so that
one run's file deletion and disk writeback do not land in another's timing.
Also prints the CPU time per step of the training thread and of the whole process (all threads),
which hold on a machine loaded by other work where wall-clock ratios do not, and the machine
(lscpu model, cores, load average). Prints a table and writes bench/out/hook.json.

usage: python bench/bench_hook.py [--steps 300] [--repeat 5] [--warmup-rounds 1]
environment: SMDEBUG_PEER_PYTHON = python of the 1.0.34 virtualenv with torch (default
.venv-peer/bin/python; ``make .venv-peer/.torch`` installs torch there). Without a download, a
wrapper gives 1.0.34's virtualenv this repository's torch: a folder of symlinks to the main
virtualenv's torch, torchgen and torch's pure-Python dependencies (typing_extensions, sympy,
networkx, jinja2, fsspec, filelock, mpmath, markupsafe; not numpy: 1.0.34 keeps its own), put
first on PYTHONPATH by a script, e.g. ``PYTHONPATH=/tmp/peer-torch exec .venv-peer/bin/python "$@"``,
and SMDEBUG_PEER_PYTHON set to that script. The benchmark checks first that it imports torch.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchutil import machine

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def run(python: str, config: str, out_dir: str, steps: int) -> dict:
    # start each run without the previous run's output: deleting 1.6 GB of files and writing the
    # previous run's dirty pages back both cost the kernel CPU time that would land in the timing
    shutil.rmtree(out_dir, ignore_errors=True)
    os.sync()
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    if python == sys.executable:
        env["PYTHONPATH"] = str(REPO / "src")
    p = subprocess.run(
        [python, str(HERE / "hook_workload.py"), config, out_dir, str(steps)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if p.returncode != 0:
        raise SystemExit(f"{python} {config} failed:\n{p.stderr[-3000:]}")
    r = json.loads(p.stdout.strip().splitlines()[-1])
    n = r["steps"]
    return {
        "wall": (r["loop_s"] + r["close_s"]) / n,
        "train_cpu": r["train_cpu_s"] / n,
        "proc_cpu": r["proc_cpu_s"] / n,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument(
        "--warmup-rounds",
        type=int,
        default=1,
        help="untimed rounds of every configuration first (on a VM, the first runs pay for "
        "memory the host has not backed yet: a first raw run measured 2x a later one)",
    )
    args = ap.parse_args()
    peer = os.environ.get("SMDEBUG_PEER_PYTHON") or str(REPO / ".venv-peer" / "bin" / "python")
    check = subprocess.run([peer, "-c", "import torch, smdebug.pytorch"], capture_output=True, text=True, check=False)
    if check.returncode != 0:
        raise SystemExit(
            f"SMDEBUG_PEER_PYTHON={peer} cannot import torch and smdebug 1.0.34's smdebug.pytorch "
            f"(see this script's docstring for a wrapper):\n{check.stderr[-1500:]}"
        )
    base = Path(tempfile.mkdtemp(prefix="smdebug-hookbench-"))
    impls = {"ours": sys.executable, "1.0.34": peer}
    res: dict = {}
    start = machine()
    try:
        for rep in range(args.warmup_rounds + args.repeat):  # interleaved: drift hits every configuration
            for impl, py in impls.items():
                for config in ("none", "raw", "reductions"):
                    t = run(py, config, str(base / f"{impl}-{config}"), args.steps)
                    if rep >= args.warmup_rounds:
                        res.setdefault(f"{impl}/{config}", []).append(t)
    finally:
        shutil.rmtree(base, ignore_errors=True)  # the raw runs leave gigabytes
    print(f"\nmachine: at the start {start}; at the end {machine()}")
    print(
        f"MLP 256-512-512-512-10, batch 128, 1 thread, {args.steps} steps, median of {args.repeat} interleaved rounds"
    )
    rows, med_all = [], {}
    for measure, title in (
        ("wall", "wall-clock step time"),
        ("train_cpu", "training-thread CPU time per step"),
        ("proc_cpu", "process CPU time per step (all threads)"),
    ):
        med = med_all[measure] = {k: statistics.median(x[measure] for x in v) for k, v in res.items()}
        print(f"\n{title}")
        print(f"{'configuration':<40}{'ours':>12}{'1.0.34':>12}")
        for config, label in (
            ("none", "no hook (ms/step)"),
            ("raw", "(a) raw tensors (ms/step)"),
            ("reductions", "(b) reductions only (ms/step)"),
        ):
            print(f"{label:<40}{med[f'ours/{config}'] * 1e3:>12.2f}{med[f'1.0.34/{config}'] * 1e3:>12.2f}")
        for config, label in (("raw", "(a) raw: x hookless step"), ("reductions", "(b) reductions: x hookless step")):
            ours = med[f"ours/{config}"] / med["ours/none"]
            theirs = med[f"1.0.34/{config}"] / med["1.0.34/none"]
            rows.append({"measure": measure, "configuration": label, "ours": ours, "smdebug_1_0_34": theirs})
            print(f"{label:<40}{ours:>11.2f}x{theirs:>11.2f}x")
    (HERE / "out").mkdir(exist_ok=True)
    (HERE / "out" / "hook.json").write_text(
        json.dumps({"machine": start, "median_s": med_all, "ratios": rows, "runs": res}, indent=1)
    )


if __name__ == "__main__":
    main()
