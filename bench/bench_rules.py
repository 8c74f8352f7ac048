"""Rule benchmark: ExplodingTensor and VanishingGradient over every step, ours against smdebug 1.0.34.

Writes the trial of bench_trial.py (STEPS x WORKERS x TENSORS of 256 float32; mean, abs mean and
l2 reductions on even steps; every 4th step EVAL) with workload.py's writer, run by smdebug 1.0.34
(as bench_trial.py times its reads; --writer ours is quicker to write), and adds a
``gradients`` collection holding every tensor to each worker's collections file, so that
VanishingGradient has gradients to read. Then, each in a fresh process on that one folder, it
times ``invoke_rule`` from step 0 to the last step with: ours, the built-in rules; 1.0.34, the
same logic written as custom Rules (its built-ins are not public). Both look at every tensor of
every worker at every step (1.0.34: ``tensor.value(step, worker=w)`` / ``reduction_value(...,
"mean", abs=True)``, which uses the saved reduction on even steps and the raw value on odd ones).
Opening the trial is not timed; each is run --repeat times, interleaved, and the fastest run counts
(the machine may be shared). The data are standard normal: neither rule fires, so every step
is evaluated. Prints a table and writes bench/out/rules.json.

usage: python bench/bench_rules.py [--steps 1000] [--workers 4] [--tensors 50] [--repeat 3]
                                  [--writer {1.0.34,ours}] [--dir DIR]
       python bench/bench_rules.py run {ours,1.0.34} TRIAL RULE STEPS     (one timed run, JSON out)
environment: SMDEBUG_PEER_PYTHON = the python of the 1.0.34 virtualenv (make peer creates .venv-peer)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RULES = ("ExplodingTensor", "VanishingGradient")


def peer_rule(name, trial):
    """The custom Rule running the built-in rule's logic on smdebug 1.0.34."""
    import numpy as np

    from smdebug.rules.rule import Rule

    class ExplodingTensor(Rule):
        def __init__(self, base_trial):
            super().__init__(base_trial, action_str="")
            self.checked = 0

        def invoke_at_step(self, step):
            tr = self.base_trial
            for n in tr.tensor_names(step=step):
                t = tr.tensor(n)
                for w in t.workers(step):
                    self.checked += 1
                    if not np.isfinite(t.value(step, worker=w)).all():
                        return True
            return False

    class VanishingGradient(Rule):
        def __init__(self, base_trial, threshold=1e-7):
            super().__init__(base_trial, action_str="")
            self.threshold = threshold
            self.checked = 0

        def invoke_at_step(self, step):
            tr = self.base_trial
            for n in tr.tensor_names(step=step, collection="gradients"):
                t = tr.tensor(n)
                for w in t.workers(step):
                    self.checked += 1
                    if t.reduction_value(step, "mean", worker=w, abs=True) < self.threshold:
                        return True
            return False

    return {"ExplodingTensor": ExplodingTensor, "VanishingGradient": VanishingGradient}[name](trial)


def run_one(impl: str, path: str, rule_name: str, steps: int) -> dict:
    import logging

    logging.disable(logging.CRITICAL)
    from smdebug.exceptions import RuleEvaluationConditionMet
    from smdebug.rules.rule_invoker import invoke_rule
    from smdebug.trials import create_trial

    trial = create_trial(path)
    trial.steps()
    if impl == "ours":
        from smdebug.rules.builtin import get_rule_class

        rule = get_rule_class(rule_name)(trial)
    else:
        rule = peer_rule(rule_name, trial)
    fired = None
    t0 = time.perf_counter()
    try:
        invoke_rule(rule, start_step=0, end_step=steps, raise_eval_cond=True)
    except RuleEvaluationConditionMet as exc:
        fired = exc.step
    elapsed = time.perf_counter() - t0
    return {"seconds": elapsed, "fired": fired, "checked": getattr(rule, "checked", None)}


def add_gradients_collection(path: Path) -> None:
    """Each worker's collections file gets a ``gradients`` collection matching every tensor."""
    for f in sorted((path / "collections").rglob("*_collections.json")):
        doc = json.loads(f.read_text())
        grads = dict(doc["collections"]["weights"])
        grads["name"] = "gradients"
        grads["include_regex"] = ["^layer"]
        grads["tensor_names"] = []
        doc["collections"]["gradients"] = grads
        f.write_text(json.dumps(doc))


def call(python: str, *args: str) -> dict:
    env = dict(os.environ)
    if python == sys.executable:
        env["PYTHONPATH"] = str(REPO / "src")
    out = subprocess.run([python, str(Path(__file__).resolve()), *args], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise SystemExit(f"{python} {args} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--tensors", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=3, help="runs of each (interleaved); the fastest counts")
    ap.add_argument("--writer", choices=["1.0.34", "ours"], default="1.0.34", help="which FileWriter writes the trial")
    ap.add_argument("--dir", default=None, help="where to write the trial (default: a temp folder)")
    ap.add_argument("--reuse", action="store_true", help="use DIR/trial if a finished one is there (same sizes!)")
    args = ap.parse_args()
    peer = os.environ.get("SMDEBUG_PEER_PYTHON") or str(REPO / ".venv-peer" / "bin" / "python")
    if not Path(peer).exists():
        raise SystemExit(f"smdebug 1.0.34 interpreter not found at {peer}: run `make peer`")
    base = Path(args.dir or tempfile.mkdtemp(prefix="smdebug-bench-rules-"))
    trial = base / "trial"
    impls = {"1.0.34": peer, "ours": sys.executable}
    if args.reuse and (trial / "training_job_end.ts").exists():
        print(f"reusing {trial}", flush=True)
    else:
        print(f"writing {args.steps} x {args.workers} x {args.tensors} with {args.writer} to {trial} ...", flush=True)
        env = dict(os.environ)
        if args.writer == "ours":
            env["PYTHONPATH"] = str(REPO / "src")
        subprocess.run(
            [
                impls[args.writer],
                str(HERE / "workload.py"),
                "write",
                str(trial),
                str(args.steps),
                str(args.workers),
                str(args.tensors),
            ],
            check=True,
            env=env,
            capture_output=True,
        )
    add_gradients_collection(trial)
    results: dict = {
        "workload": {"steps": args.steps, "workers": args.workers, "tensors": args.tensors, "written_by": args.writer},
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "runs": {},
    }
    for rule in RULES:
        for _ in range(args.repeat):
            for impl, py in impls.items():
                r = call(py, "run", impl, str(trial), rule, str(args.steps))
                print(f"{rule:<18} {impl:<7} {r['seconds']:8.3f} s  fired: {r['fired']}", flush=True)
                if r["fired"] is not None:
                    raise SystemExit(f"{rule} fired at step {r['fired']} with {impl}: the benchmark data must not fire")
                best = results["runs"].get(f"{rule}[{impl}]")
                results["runs"].setdefault(f"{rule}[{impl}]:all", []).append(r["seconds"])
                if best is None or r["seconds"] < best["seconds"]:
                    results["runs"][f"{rule}[{impl}]"] = r
    print(
        f"\n{args.steps} steps x {args.workers} workers x {args.tensors} tensors (written by {args.writer}), "
        f"{results['machine']}, fastest of {args.repeat}"
    )
    print(f"{'rule, every step':<26}{'1.0.34 (s)':>12}{'ours (s)':>12}{'speed-up':>10}")
    table = []
    for rule in RULES:
        theirs, ours = results["runs"][f"{rule}[1.0.34]"]["seconds"], results["runs"][f"{rule}[ours]"]["seconds"]
        print(f"{rule:<26}{theirs:>12.3f}{ours:>12.3f}{theirs / ours:>9.1f}x")
        table.append({"rule": rule, "smdebug_1_0_34_s": theirs, "ours_s": ours, "speedup": theirs / ours})
    results["table"] = table
    (HERE / "out").mkdir(exist_ok=True)
    (HERE / "out" / "rules.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "run":
        print(json.dumps(run_one(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))))
    else:
        main()
