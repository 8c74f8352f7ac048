"""Stop latency of ``smdebug run``: a NaN at step K, ExplodingTensor with the StopTraining action.

Runs tests/launch/scripts/mlp.py (an unmodified PyTorch MLP, steps of --step-time seconds, the
input of step K holding a NaN) under ``smdebug.launch`` with ``--rule exploding_tensor --action
stop`` and every step saved, --repeat times. Per run: the steps the job started after step K
(the stop lands at the start of a step) and the seconds from the start of step K to the job's end
(the script's own timeline); the rule's status and step. Prints a table; writes bench/out/launch.json.

usage: python bench/bench_launch.py [--step-time 0.05] [--nan-at 10] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MLP = HERE.parent / "tests" / "launch" / "scripts" / "mlp.py"


def one(tmp: Path, i: int, step_time: float, k: int) -> dict:
    import smdebug

    timeline = tmp / f"timeline-{i}.txt"
    result = smdebug.launch(
        [
            sys.executable,
            str(MLP),
            "--steps",
            "100000",
            "--nan-at",
            str(k),
            "--step-time",
            str(step_time),
            "--timeline",
            str(timeline),
        ],
        run_dir=str(tmp / f"run-{i}"),
        name=f"bench-{i}",
        rules=["exploding_tensor"],
        actions=["stop"],
        collection_configs=["weights:save_interval=1", "gradients:save_interval=1", "losses:save_interval=1"],
        echo=lambda _m: None,
    )
    ended = time.time()
    starts = {int(s): float(t) for s, t in (line.split() for line in timeline.read_text().splitlines())}
    last = max(starts)
    (rule,) = result.rules
    return {
        "status": result.status,
        "rule": rule["RuleEvaluationStatus"],
        "fired_at": result.stop_step,
        "steps_started_after_k": last - k,
        "seconds_k_to_end": round(ended - starts[k], 3),
    }


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--step-time", type=float, default=0.05)
    p.add_argument("--nan-at", type=int, default=10)
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()
    runs = []
    with tempfile.TemporaryDirectory() as d:
        for i in range(args.repeat):
            runs.append(one(Path(d), i, args.step_time, args.nan_at))
            print(json.dumps(runs[-1]), flush=True)
    after = [r["steps_started_after_k"] for r in runs]
    secs = [r["seconds_k_to_end"] for r in runs]
    summary = {
        "step_time": args.step_time,
        "nan_at": args.nan_at,
        "runs": runs,
        "steps_after_k": {"max": max(after), "median": statistics.median(after)},
        "seconds_k_to_end": {"max": max(secs), "median": statistics.median(secs)},
        "python": platform.python_version(),
        "machine": platform.machine(),
    }
    print(
        f"\nsteps started after the NaN step: median {statistics.median(after)}, max {max(after)} "
        f"(of {args.repeat} runs, {args.step_time * 1000:g} ms steps)"
    )
    print(
        f"seconds from the NaN step to the job's end (process exit, statuses written): median "
        f"{statistics.median(secs)}, max {max(secs)}"
    )
    out = HERE / "out"
    out.mkdir(exist_ok=True)
    (out / "launch.json").write_text(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
