"""CPU time per thread of bench/hook_workload.py, for an interleaved A/B of two source trees.

The writer and copy threads' CPU is what the hook costs beside the training thread; a loaded
machine stretches wall time but hardly these (the writer's page-cache writes excepted: the
kernel charges them by the state of memory, which the run before leaves behind). Each run is a
fresh process; the trees alternate A, B, B, A, A, B, ... so that neither always runs after the
other, and a change in the machine's load hits both alike.

usage: python bench/hook_threads.py CONFIG STEPS ROUNDS TREE [TREE ...]
       (CONFIG: raw | reductions; TREE: a checkout whose src/ is put first on PYTHONPATH)
prints, per tree, the median over the rounds of ms/step: training thread, each smdebug thread
(its whole life: the warm-up steps and close included, divided by the measured steps plus the
warm-up; ``:user`` and ``:sys`` split it into user space and kernel, at 10 ms resolution), the
process, and the wall time of the loop; and each round's figures as JSON lines.
"""

from __future__ import annotations

import json
import os
import runpy
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _user_system() -> tuple[float, float]:
    """This thread's CPU seconds in user space and in the kernel (Linux; clock ticks, 10 ms):
    the writer's kernel time is its page-cache writes, which vary with the machine's memory."""
    try:
        with open("/proc/thread-self/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0, 0.0
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def child(config: str, steps: int) -> None:
    """Run hook_workload.py here, recording the CPU time of every thread when it ends."""
    cpu: dict[str, float] = {}
    lock = threading.Lock()
    run = threading.Thread.run

    def timed_run(self):
        try:
            run(self)
        finally:
            user, system = _user_system()
            with lock:
                name = self.name.rstrip("0123456789").rstrip("_-")
                cpu[name] = cpu.get(name, 0.0) + time.thread_time()
                cpu[name + ":user"] = cpu.get(name + ":user", 0.0) + user
                cpu[name + ":sys"] = cpu.get(name + ":sys", 0.0) + system

    threading.Thread.run = timed_run
    out = tempfile.mkdtemp(prefix="smdebug-hook-threads-")
    sys.argv = ["hook_workload.py", config, out, str(steps)]
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        runpy.run_path(str(HERE / "hook_workload.py"), run_name="__main__")
    res = json.loads(buf.getvalue().strip().splitlines()[-1])
    import shutil

    shutil.rmtree(out, ignore_errors=True)
    res["threads_cpu_s"] = cpu
    print(json.dumps(res))


def main() -> None:
    if sys.argv[1] == "--child":
        return child(sys.argv[2], int(sys.argv[3]))
    config, steps, rounds, trees = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
    from_workload = 20  # hook_workload.py's warm-up steps
    runs: dict[str, list[dict]] = {t: [] for t in trees}
    for r in range(rounds):
        for tree in trees if r % 2 == 0 else trees[::-1]:
            env = dict(os.environ, PYTHONPATH=str(Path(tree) / "src"))
            got = subprocess.run(
                [sys.executable, __file__, "--child", config, str(steps)],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            res = json.loads(got.stdout.strip().splitlines()[-1])
            per = {
                "train": res["train_cpu_s"] / steps,
                "process": res["proc_cpu_s"] / steps,
                "wall": res["loop_s"] / steps,
            }
            for name, s in res["threads_cpu_s"].items():
                per[name] = s / (steps + from_workload)
            runs[tree].append(per)
            print(json.dumps({"round": r, "tree": tree, **{k: round(v * 1e3, 3) for k, v in per.items()}}), flush=True)
    for tree, rs in runs.items():
        keys = sorted({k for d in rs for k in d})
        med = {k: round(statistics.median(d.get(k, 0.0) for d in rs) * 1e3, 3) for k in keys}
        print(f"{tree}: median ms/step over {len(rs)} rounds: {json.dumps(med)}")


if __name__ == "__main__":
    main()
