"""Trial benchmark: ours against smdebug 1.0.34 (its own virtualenv), in one run.

Writes a trial of STEPS x WORKERS x TENSORS (256 float32 each; mean, abs mean and l2 reductions on
even steps; every 4th step EVAL) through each FileWriter, then times on the folder written by
1.0.34, with each implementation in a fresh process: open+list (create_trial + steps() +
tensor_names() + workers()), one tensor's values(), its reductions over all steps, and every
tensor of every worker at the last step. Reads run interleaved (ours, 1.0.34, ours, ...), the median
of --repeat runs counts. Prints a table and writes bench/out/trial.json.

usage: python bench/bench_trial.py [--steps 1000] [--workers 4] [--tensors 50] [--repeat 3] [--dir D --reuse]
       [--before SRC]   (another version of ours, e.g. git archive REV src | tar -x -C X; SRC = X/src)
environment: SMDEBUG_PEER_PYTHON = the python of the 1.0.34 virtualenv (make peer creates .venv-peer)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
WORKLOAD = HERE / "workload.py"


def run(python: str, *args: str, src: str | None = None) -> dict:
    """workload.py under ``python``; ours (sys.executable) imports smdebug from ``src`` (default: this tree's)."""
    env = dict(os.environ)
    if python == sys.executable:
        env["PYTHONPATH"] = src or str(REPO / "src")
    out = subprocess.run([python, str(WORKLOAD), *args], capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{python} {args} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--tensors", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", default=None, help="where to write the trials (default: a temp folder)")
    ap.add_argument("--reuse", action="store_true", help="use the trials in DIR where finished ones are (same sizes!)")
    ap.add_argument(
        "--before",
        default=None,
        help="a src folder of another version of ours (git archive REV src | tar -x -C X: X/src), read interleaved too",
    )
    args = ap.parse_args()
    peer = os.environ.get("SMDEBUG_PEER_PYTHON") or str(REPO / ".venv-peer" / "bin" / "python")
    if not Path(peer).exists():
        raise SystemExit(f"smdebug 1.0.34 interpreter not found at {peer}: run `make peer`")
    base = Path(args.dir or tempfile.mkdtemp(prefix="smdebug-bench-"))
    shape = [str(args.steps), str(args.workers), str(args.tensors)]
    impls = {"ours": sys.executable, "1.0.34": peer}
    results: dict = {
        "workload": {"steps": args.steps, "workers": args.workers, "tensors": args.tensors},
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
    }
    for name, py in impls.items():
        out = base / f"written_by_{name}"
        if args.reuse and (out / "training_job_end.ts").exists():
            print(f"reusing {out} (its write not timed)", flush=True)
            results[f"write_s[{name}]"] = None
            continue
        print(f"writing with {name} ...", flush=True)
        results[f"write_s[{name}]"] = run(py, "write", str(out), *shape)["write_s"]
    folder = str(base / "written_by_1.0.34")
    # reads interleaved (ours, 1.0.34, ours, ...), each a fresh process: a change in the machine's
    # load during the run then weighs on both sides alike
    readers = dict(impls, **({"before": sys.executable} if args.before else {}))
    runs: dict = {name: [] for name in readers}
    for _ in range(args.repeat):
        for name, py in readers.items():
            runs[name].append(run(py, "read", folder, src=args.before if name == "before" else None))
            print(f"read with {name}: open+list {runs[name][-1]['open_list_s']:.3f} s", flush=True)
    reads: dict = {}
    for name, rs in runs.items():
        reads[name] = {k: statistics.median(r[k] for r in rs) for k in rs[0] if k.endswith("_s")}
        reads[name]["open_list_runs_s"] = [r["open_list_s"] for r in rs]
        reads[name]["checksum"] = rs[0]["checksum"]
        reads[name]["counts"] = rs[0]["counts"]
        print(f"read with {name}: {reads[name]}", flush=True)
    if abs(reads["ours"]["checksum"] - reads["1.0.34"]["checksum"]) > 1e-6 * max(1.0, abs(reads["ours"]["checksum"])):
        raise SystemExit("the two implementations read different values")
    results["reads"] = reads
    rows = [("write the trial", results["write_s[1.0.34]"], results["write_s[ours]"])]
    for key, label in [
        ("open_list_s", "open + list"),
        ("values_s", "one tensor's values()"),
        ("reductions_s", "its reductions, all steps"),
        ("last_step_s", "all tensors x workers, last step"),
    ]:
        rows.append((label, reads["1.0.34"][key], reads["ours"][key]))
    print(f"\n{args.steps} steps x {args.workers} workers x {args.tensors} tensors, {results['machine']}")
    print(f"{'operation':<34}{'1.0.34 (s)':>12}{'ours (s)':>12}{'speed-up':>10}")
    for label, theirs, ours in rows:
        if theirs is None or ours is None:
            print(f"{label:<34}{'(reused)':>12}{'(reused)':>12}")
            continue
        print(f"{label:<34}{theirs:>12.3f}{ours:>12.3f}{theirs / ours:>9.1f}x")
    if args.before:
        theirs = reads["1.0.34"]["open_list_s"]
        print(f"{'open + list, ours before':<34}{theirs:>12.3f}{reads['before']['open_list_s']:>12.3f}", end="")
        print(f"{theirs / reads['before']['open_list_s']:>9.1f}x   ({args.before})")
    results["table"] = [
        {"operation": r[0], "smdebug_1_0_34_s": r[1], "ours_s": r[2], "speedup": r[1] / r[2] if r[1] and r[2] else None}
        for r in rows
    ]
    (HERE / "out").mkdir(exist_ok=True)
    (HERE / "out" / "trial.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
