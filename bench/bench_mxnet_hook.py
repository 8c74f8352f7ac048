"""MXNet hook overhead: the Gluon training step with our hook and with smdebug 1.0.34's, against
no hook.

MLP 256-512-512-512-10, batch 128, CPU, one thread, saving every step weights, biases, gradients
and losses (a) as raw tensors, (b) as reductions only (min, max, mean, abs mean, l2). Each
run is a fresh process (bench/mxnet_workload.py); the step time counts the training loop plus
hook.close(), divided by the steps: wall clock, CPU time of the main thread, of the process (all
threads: MXNet's engine and the hook's writer) and per thread. CPU ratios hold on a machine
loaded by other work where wall-clock ratios do not. Runs are interleaved (--warmup-rounds
untimed rounds first); the median of --repeat runs is shown. Prints the machine (lscpu model,
cores, load average) and writes bench/out/mxnet_hook.json.

usage: python bench/bench_mxnet_hook.py [--steps 200] [--repeat 5] [--warmup-rounds 1]
needs .venv-mxnet (make mxnet-venv) and, for 1.0.34's hook, .venv-mxnet-peer (make mxnet-fixture);
SMDEBUG_MXNET_PYTHON / SMDEBUG_MXNET_PEER_PYTHON name other interpreters (a git worktree
without its own venvs). Ours runs with this checkout's src/ first on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

from benchutil import machine, median_threads

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PYTHONS = {
    "ours": Path(os.environ.get("SMDEBUG_MXNET_PYTHON") or REPO / ".venv-mxnet" / "bin" / "python"),
    "1.0.34": Path(os.environ.get("SMDEBUG_MXNET_PEER_PYTHON") or REPO / ".venv-mxnet-peer" / "bin" / "python"),
}


def run(who: str, python: Path, config: str, out_dir: str, steps: int) -> dict:
    shutil.rmtree(out_dir, ignore_errors=True)
    os.sync()  # the previous run's writeback does not land in this one's timing
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if who == "ours":
        env["PYTHONPATH"] = str(REPO / "src")
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", MXNET_CPU_WORKER_NTHREADS="1")
    p = subprocess.run(
        [str(python), str(HERE / "mxnet_workload.py"), config, out_dir, str(steps)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if p.returncode != 0:
        raise RuntimeError(f"{python} {config} failed:\n{p.stderr[-3000:]}")
    shutil.rmtree(out_dir, ignore_errors=True)
    r = json.loads(p.stdout.strip().splitlines()[-1])
    n = r["steps"]
    return {
        "wall": r["wall_s"] / n,
        "main_cpu": r["thread_cpu_s"] / n,
        "cpu": r["proc_cpu_s"] / n,
        "threads": {k: v / n for k, v in r["threads_cpu_s"].items()},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--warmup-rounds", type=int, default=1)
    args = ap.parse_args()
    pythons = {k: v for k, v in PYTHONS.items() if v.exists()}
    if "ours" not in pythons:
        raise SystemExit(f"no MXNet virtualenv at {PYTHONS['ours']}: make mxnet-venv, or set SMDEBUG_MXNET_PYTHON")
    cases = [("none", "ours")] + [(c, who) for c in ("raw", "reductions") for who in pythons]
    times: dict = {case: [] for case in cases}
    start = machine()
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.warmup_rounds + args.repeat):
            for config, who in cases:
                r = run(who, pythons[who], config, f"{tmp}/{config}-{who}", args.steps)
                if rep >= args.warmup_rounds:
                    times[(config, who)].append(r)
                print(
                    f"  round {rep}{' (warm-up)' if rep < args.warmup_rounds else ''}: {config:<11} {who:<7} "
                    f"wall {r['wall'] * 1e3:7.2f} ms, process CPU {r['cpu'] * 1e3:7.2f} ms per step",
                    flush=True,
                )
    end = machine()
    print(f"\nmachine: at the start {start}; at the end {end}")
    print(
        f"Gluon MLP 256-512-512-512-10, batch 128, 1 thread, {args.steps} steps, median of {args.repeat} "
        "interleaved runs in fresh processes"
    )
    med = {
        case: {k: statistics.median(r[k] for r in v) for k in ("wall", "main_cpu", "cpu")} for case, v in times.items()
    }
    base = med[("none", "ours")]
    print(
        f"\n{'config':<12}{'hook':<8}{'wall ms':>9}{'ratio':>7}{'main CPU':>10}{'ratio':>7}{'proc CPU':>10}{'ratio':>7}"
    )
    for (config, who), m in med.items():
        line = f"{config:<12}{who if config != 'none' else '-':<8}"
        for k, width in (("wall", 9), ("main_cpu", 10), ("cpu", 10)):
            line += f"{m[k] * 1e3:{width}.2f}{m[k] / base[k]:6.2f}x"
        print(line)
    threads = {case: median_threads([r["threads"] for r in v]) for case, v in times.items()}
    print("\nCPU ms per step by thread (median):")
    for (config, who), t in threads.items():
        busy = {n: s for n, s in t.items() if s >= 5e-5}
        print(
            f"  {config:<11} {who:<7} "
            + ", ".join(f"{n} {s * 1e3:.2f}" for n, s in sorted(busy.items(), key=lambda kv: -kv[1]))
        )
    (HERE / "out").mkdir(exist_ok=True)
    (HERE / "out" / "mxnet_hook.json").write_text(
        json.dumps(
            {
                "machine": [start, end],
                "steps": args.steps,
                "repeat": args.repeat,
                "median_s": {f"{c}/{w}": m for (c, w), m in med.items()},
                "threads_s": {f"{c}/{w}": t for (c, w), t in threads.items()},
                "runs": {f"{c}/{w}": v for (c, w), v in times.items()},
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
