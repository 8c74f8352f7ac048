"""MXNet hook overhead: the Gluon training step with our hook and with smdebug 1.0.34's, against
no hook.

MLP 256-512-512-512-10, batch 128, CPU, one thread, saving every step weights, biases, gradients
and losses (a) as raw tensors, (b) as reductions only (min, max, mean, abs mean, l2). Each
run is a fresh process (bench/mxnet_workload.py); the step time counts the training loop plus
hook.close(), divided by the steps. Runs are interleaved; the median of --repeat runs is shown.

usage: python bench/bench_mxnet_hook.py [--steps 200] [--repeat 3]
needs .venv-mxnet (make mxnet-venv) and, for 1.0.34's hook, .venv-mxnet-peer (make mxnet-fixture)
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PYTHONS = {"ours": REPO / ".venv-mxnet" / "bin" / "python", "1.0.34": REPO / ".venv-mxnet-peer" / "bin" / "python"}


def run(python: Path, config: str, out_dir: str, steps: int) -> float:
    shutil.rmtree(out_dir, ignore_errors=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", MXNET_CPU_WORKER_NTHREADS="1")
    p = subprocess.run([str(python), str(HERE / "mxnet_workload.py"), config, out_dir, str(steps)],
                       capture_output=True, text=True, env=env, check=False)
    if p.returncode != 0:
        raise RuntimeError(f"{python} {config} failed:\n{p.stderr[-3000:]}")
    return float(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    pythons = {k: v for k, v in PYTHONS.items() if v.exists()}
    cases = [("none", "ours")] + [(c, who) for c in ("raw", "reductions") for who in pythons]
    times: dict = {case: [] for case in cases}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeat):
            for config, who in cases:
                times[(config, who)].append(run(pythons[who], config, f"{tmp}/{config}-{who}", args.steps))
    base = statistics.median(times[("none", "ours")])
    print(f"{'config':<12}{'hook':<8}{'ms/step':>9}{'x no hook':>11}")
    for (config, who), ts in times.items():
        m = statistics.median(ts)
        print(f"{config:<12}{who if config != 'none' else '-':<8}{m * 1e3:>9.2f}{m / base:>11.2f}")


if __name__ == "__main__":
    main()
