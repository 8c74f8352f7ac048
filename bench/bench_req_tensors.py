"""1.0.34-style custom rules over the benchmark trial, ours against smdebug 1.0.34, same folder, one
run: every tensor required at every step through req_tensors and checked for NaN/inf (an
ExplodingTensor written as a custom Rule; ours also without req_tensors), and the abs-mean
reduction of every tensor at every step (VanishingGradient's logic).

usage: python bench/bench_req_tensors.py [STEPS WORKERS TENSORS]   (default 1000 4 50)
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RULE = r"""
import json, logging, sys, time
logging.disable(logging.CRITICAL)
import numpy as np
from smdebug.exceptions import NoMoreData
from smdebug.rules import Rule, invoke_rule
from smdebug.trials import create_trial

class AllFinite(Rule):
    def __init__(self, base_trial, use_req):
        super().__init__(base_trial, action_str="")
        self.names = [n for n in base_trial.tensor_names() if n.startswith("layer")]
        self.use_req, self.evaluated = use_req, 0

    def set_required_tensors(self, step):
        if self.use_req is True:
            for n in self.names:
                self.req_tensors.add(n, steps=[step])

    def invoke_at_step(self, step):
        self.evaluated += 1
        if self.use_req == "abs_mean":  # VanishingGradient's logic, reductions (saved or computed)
            for n in self.names:
                if self.base_trial.tensor(n).reduction_value(step, "mean", abs=True) < 1e-7:
                    return True
            return False
        for n in self.names:
            if not np.isfinite(self.base_trial.tensor(n).value(step)).all():
                return True
        return False

t0 = time.perf_counter()
rule = AllFinite(create_trial(sys.argv[1]), {"req": True, "plain": False}.get(sys.argv[2], sys.argv[2]))
try:
    invoke_rule(rule)
except NoMoreData:
    pass
print(json.dumps({"s": time.perf_counter() - t0, "evaluated": rule.evaluated}))
"""


def run(python, trial, mode, env):
    out = subprocess.run([python, "-c", RULE, trial, mode], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    steps, workers, tensors = sys.argv[1:4] + ["1000", "4", "50"][len(sys.argv[1:4]) :]
    ours = sys.executable
    peer = os.environ.get("SMDEBUG_PEER_PYTHON", str(REPO / ".venv-peer" / "bin" / "python"))
    ours_env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    peer_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    with tempfile.TemporaryDirectory() as tmp:
        trial = os.path.join(tmp, "trial")
        subprocess.run(
            [ours, str(HERE / "workload.py"), "write", trial, steps, workers, tensors],
            env=ours_env,
            check=True,
            capture_output=True,
        )
        res = {
            "ours_req_tensors": run(ours, trial, "req", ours_env),
            "ours_value_reads": run(ours, trial, "plain", ours_env),
            "smdebug_1.0.34_req_tensors": run(peer, trial, "req", peer_env),
            "ours_abs_mean": run(ours, trial, "abs_mean", ours_env),
            "smdebug_1.0.34_abs_mean": run(peer, trial, "abs_mean", peer_env),
        }
    for k, v in res.items():
        base = res["smdebug_1.0.34_" + ("abs_mean" if "abs_mean" in k else "req_tensors")]["s"]
        print(f"{k:30s} {v['s']:8.2f} s  ({v['evaluated']} steps)  {base / v['s']:6.1f}x vs 1.0.34")


if __name__ == "__main__":
    main()
