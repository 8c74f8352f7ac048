"""Profiler overhead: the same PyTorch training with and without profiling.

MLP 256-512-512-512-10, batch 128, CPU, one thread, SGD, a DataLoader, the PyTorch hook with its
defaults in every configuration (see bench/profiler_workload.py). Each configuration runs in a
fresh process, interleaved with the others, after one untimed round; the step time counts the
training loop plus hook.close() (which ends the sampler and closes the timeline), divided by the
steps. Two measures, because the 2-vCPU VM this was written on is shared and its wall clock
moves by 2x between runs: the process's CPU time (all its threads, the sampler included), as the
median of per-round ratios (profiled / hook of the same round); and the wall clock, as the ratio
of the fastest runs (the least disturbed). Prints a table and writes bench/out/profiler.json.

usage: python bench/bench_profiler.py [--steps 300] [--repeat 7] [--warmup-rounds 1] [--configs hook,profiled,...]

Long rounds resolve a few percent: `--steps 3000 --configs hook,profiled` (about 25 s a round).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CONFIGS = ("hook", "profiled", "profiled100", "python")


def run(config: str, out_dir: str, steps: int) -> dict:
    shutil.rmtree(out_dir, ignore_errors=True)
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONPATH=str(REPO / "src"))
    p = subprocess.run(
        [sys.executable, str(HERE / "profiler_workload.py"), config, out_dir, str(steps)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if p.returncode != 0:
        raise SystemExit(f"{config} failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def _spread(values: list) -> dict:
    q = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
    return {"median": statistics.median(values), "q1": q[0], "q3": q[2], "min": min(values), "max": max(values)}


def _fmt(s: dict) -> str:
    return f"{s['median']:.3f}x [{s['q1']:.3f}-{s['q3']:.3f}] ({s['min']:.3f}-{s['max']:.3f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--warmup-rounds", type=int, default=1)
    ap.add_argument(
        "--configs",
        default=",".join(CONFIGS),
        help=f"comma-separated, from {','.join(CONFIGS)}; 'hook' (the reference) is always run",
    )
    args = ap.parse_args()
    configs = ["hook"] + [c for c in args.configs.split(",") if c and c != "hook"]
    unknown = sorted(set(configs) - set(CONFIGS))
    if unknown:
        ap.error(f"--configs: unknown {', '.join(unknown)} (known: {', '.join(CONFIGS)})")
    base = Path(tempfile.mkdtemp(prefix="smdebug-profbench-"))
    step: dict = {c: [] for c in configs}
    ratio: dict = {c: [] for c in configs}
    cpu: dict = {c: [] for c in configs}
    cpu_ratio: dict = {c: [] for c in configs}
    outside: list = []
    try:
        for rep in range(args.warmup_rounds + args.repeat):
            r = {c: run(c, str(base / c), args.steps) for c in configs}
            if rep < args.warmup_rounds:
                continue
            t = {c: (r[c]["loop_s"] + r[c]["close_s"]) / r[c]["steps"] for c in configs}
            for c in configs:
                step[c].append(t[c])
                ratio[c].append(t[c] / t["hook"])
                cpu[c].append(r[c]["cpu_s"] / r[c]["steps"])
                cpu_ratio[c].append(r[c]["cpu_s"] / r["hook"]["cpu_s"])
            # python profiling: the steps outside its two configured steps, against the hook's loop
            if "python" in r:
                py = r["python"]
                outside.append((py["outside_s"] / py["outside_steps"]) / (r["hook"]["loop_s"] / r["hook"]["steps"]))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    fastest = {c: min(v) for c, v in step.items()}
    wall_x = {c: fastest[c] / fastest["hook"] for c in configs}
    cpu_med = {c: statistics.median(v) for c, v in cpu.items()}
    cpu_x = {c: statistics.median(v) for c, v in cpu_ratio.items()}
    labels = {
        "hook": "hook, no profiling",
        "profiled": "system 500 ms + framework every step",
        "profiled100": "system 100 ms + framework every step",
        "python": "as 500 ms + cProfile of 2 steps (whole run)",
    }
    print(
        f"\n{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, {args.steps} steps, "
        f"median of {args.repeat} rounds"
    )
    print(f"{'configuration':<46}{'CPU ms/step':>12}{'CPU x hook':>11}{'wall ms/step':>13}{'wall x hook':>12}")
    for c in configs:
        print(f"{labels[c]:<46}{cpu_med[c] * 1e3:>12.2f}{cpu_x[c]:>10.3f}x{fastest[c] * 1e3:>13.2f}{wall_x[c]:>11.3f}x")
    print("\nper-round ratios to the hook-only run of the same round: median [quartiles] (min-max)")
    spread = {}
    for c in configs[1:]:
        spread[c] = {"cpu": _spread(cpu_ratio[c]), "wall": _spread(ratio[c])}
        print(f"{labels[c]:<46} CPU {_fmt(spread[c]['cpu'])}   wall {_fmt(spread[c]['wall'])}")
    out_ratio = statistics.median(outside) if outside else float("nan")
    if outside:
        print(f"{'python: wall of the steps outside its 2 steps':<46}{'':>12}{'':>11}{'':>13}{out_ratio:>11.3f}x")
    (HERE / "out").mkdir(exist_ok=True)
    (HERE / "out" / "profiler.json").write_text(
        json.dumps(
            {
                "cpu_ms_per_step": {c: cpu_med[c] * 1e3 for c in configs},
                "cpu_x_hook": cpu_x,
                "fastest_wall_ms_per_step": {c: fastest[c] * 1e3 for c in configs},
                "wall_x_hook": wall_x,
                "python_outside_x_hook": out_ratio,
                "spread": spread,
                "cpu_ratios_per_round": cpu_ratio,
                "wall_ratios_per_round": ratio,
                "steps": args.steps,
                "repeat": args.repeat,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
