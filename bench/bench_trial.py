"""Trial benchmark: ours against smdebug 1.0.34 (its own virtualenv), in one run.

Writes a trial of STEPS x WORKERS x TENSORS (256 float32 each; mean, abs mean and l2 reductions on
even steps; every 4th step EVAL) through each FileWriter, then times on the folder written by
1.0.34, with each implementation in a fresh process: open+list (create_trial + steps() +
tensor_names() + workers()), one tensor's values(), its reductions over all steps, and every
tensor of every worker at the last step. Prints a table and writes bench/out/trial.json.

usage: python bench/bench_trial.py [--steps 1000] [--workers 4] [--tensors 50] [--repeat 3]
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


def run(python: str, *args: str) -> dict:
    env = dict(os.environ)
    if python == sys.executable:
        env["PYTHONPATH"] = str(REPO / "src")
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
        print(f"writing with {name} ...", flush=True)
        results[f"write_s[{name}]"] = run(py, "write", str(base / f"written_by_{name}"), *shape)["write_s"]
    folder = str(base / "written_by_1.0.34")
    reads: dict = {}
    for name, py in impls.items():
        runs = [run(py, "read", folder) for _ in range(args.repeat)]
        reads[name] = {k: statistics.median(r[k] for r in runs) for k in runs[0] if k.endswith("_s")}
        reads[name]["checksum"] = runs[0]["checksum"]
        reads[name]["counts"] = runs[0]["counts"]
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
        print(f"{label:<34}{theirs:>12.3f}{ours:>12.3f}{theirs / ours:>9.1f}x")
    results["table"] = [
        {"operation": r[0], "smdebug_1_0_34_s": r[1], "ours_s": r[2], "speedup": r[1] / r[2]} for r in rows
    ]
    (HERE / "out").mkdir(exist_ok=True)
    (HERE / "out" / "trial.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
