"""Where a step's extra time goes on the training thread, per entry point of the PyTorch hook.

Each entry point torch calls (the model's forward pre-hook that starts a step, the layers'
forward hooks, the gradient hooks, the end-of-backward callback, the optimizer's pre-hook) is
timed with ``time.thread_time`` (CPU) and ``time.perf_counter`` (wall); the difference is
waiting (for the copy thread at the end of backward, mostly). The rest of the step's extra time
is outside the hook: the model's own ops running slower beside the hook's threads, and
waits for the GIL between ops. Fresh processes, alternating hookless and hooked, minimum over
rounds of each figure.

usage: PYTHONPATH=src python bench/hook_parts.py CONFIG [STEPS] [ROUNDS]   CONFIG: raw | reductions
($SMDEBUG_BENCH_ABLATE applies, see bench/hook_ablate.py)
"""

from __future__ import annotations

import os
import sys

from benchutil import alternate

HERE = os.path.dirname(os.path.abspath(__file__))
CHILD = r"""
import json, logging, sys, tempfile, time
logging.disable(logging.CRITICAL)
sys.path.insert(0, sys.argv[3])
from hook_workload import build
config, steps = sys.argv[1], int(sys.argv[2])
from benchutil import EntryTimes
tt, pc = time.thread_time_ns, time.perf_counter_ns
times = EntryTimes()
timed = times.timed

if config != "none":
    import smdebug.pytorch.hook as ph
    H = ph.Hook
    grad_hook = H._grad_hook
    H._grad_hook = lambda self, pname: timed("gradient hooks", grad_hook(self, pname))
    H._forward_hook = timed("layer forward hooks", H._forward_hook)
    H._forward_pre_hook = timed("step start", H._forward_pre_hook)
    ph._end_of_backward = timed("end of backward", ph._end_of_backward)
    ph._sync_ref = timed("optimizer pre-hook", ph._sync_ref)
step, hook = build(config, tempfile.mkdtemp(prefix="smdebug-parts-"))
for _ in range(50):
    step()
times.acc.clear()
c0, w0 = tt(), pc()
for _ in range(steps):
    step()
out = {"step": [(tt() - c0) / steps / 1e3, (pc() - w0) / steps / 1e3]}
out.update(times.per_step(steps))
if hook is not None:
    hook.close()
print(json.dumps(out))
"""


def main() -> None:
    config = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    runs = alternate(CHILD, [str(steps), HERE], ("none", config), rounds, dict(os.environ, OMP_NUM_THREADS="1"))
    base_cpu = min(r["step"][0] for r in runs["none"])
    base_wall = min(r["step"][1] for r in runs["none"])
    hooked = runs[config]
    cpu, wall = min(r["step"][0] for r in hooked), min(r["step"][1] for r in hooked)
    print(f"{config}: {steps} steps x {rounds} rounds, minimum over rounds, us per step; load {os.getloadavg()}")
    print(f"  hookless step: wall {base_wall:8.1f}  training-thread CPU {base_cpu:8.1f}")
    print(f"  hooked step:   wall {wall:8.1f}  training-thread CPU {cpu:8.1f}   (+{wall - base_wall:.1f} wall)")
    in_hook_cpu = in_hook_wall = 0.0
    for label in ("step start", "layer forward hooks", "gradient hooks", "end of backward", "optimizer pre-hook"):
        vals = [r[label] for r in hooked if label in r]
        if not vals:
            continue
        c, w, n = min(v[0] for v in vals), min(v[1] for v in vals), vals[0][2]
        in_hook_cpu, in_hook_wall = in_hook_cpu + c, in_hook_wall + w
        print(f"    {label:<22} CPU {c:7.1f}  waiting {max(w - c, 0.0):7.1f}  calls/step {n:4.1f}")
    print(f"  in the hook's callbacks: CPU {in_hook_cpu:.1f}, waiting {max(in_hook_wall - in_hook_cpu, 0.0):.1f}")
    print(
        f"  outside them: training-thread CPU +{cpu - base_cpu - in_hook_cpu:.1f} (the model's ops slower), "
        f"other waiting {max((wall - cpu) - (base_wall - base_cpu) - (in_hook_wall - in_hook_cpu), 0.0):.1f}"
    )


if __name__ == "__main__":
    main()
