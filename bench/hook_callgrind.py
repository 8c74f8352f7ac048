"""Instructions per step of each thread of the hook workload, by callgrind: deterministic, so an
A/B of two source trees holds on a loaded machine where CPU times do not.

The workload (bench/hook_workload.py's model and hook) runs under ``valgrind --tool=callgrind
--instr-atstart=no --separate-threads=yes``; after WARMUP steps, with the copy and writer threads
idle, it asks this script (through a pair of FIFOs) to turn instrumentation on, runs STEPS steps,
waits for the hook's threads to finish them, and asks for it to be turned off again. Each
thread's instructions are divided by STEPS. Thread 1 is the training thread; the hook's threads
follow in the order they started (the copy thread with the first step, the writer with the
second). Slow: under valgrind a step takes about a second, and importing torch minutes.

usage: python bench/hook_callgrind.py CONFIG [STEPS] [WARMUP] [TREE]   CONFIG: none | raw | reductions
       (TREE: a checkout whose src/ is put first on PYTHONPATH; default this one)
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = r"""
import logging, sys, tempfile
logging.disable(logging.CRITICAL)
config, warmup, steps, fifo = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
sys.path.insert(0, sys.argv[5])
from hook_workload import build
step, hook = build(config, tempfile.mkdtemp(prefix="smdebug-cg-"))

def settle():  # the hook's threads have done everything handed to them
    if hook is not None:
        hook.adapter.sync()
        if hook._writer is not None:
            hook._writer.flush()

def ask(what):
    with open(fifo + "/to_driver", "w") as f:
        f.write(what + "\n")
    with open(fifo + "/from_driver") as f:
        f.read()

for _ in range(warmup):
    step()
settle()
ask("on")
for _ in range(steps):
    step()
settle()
ask("off")
if hook is not None:
    hook.close()
"""


def main() -> None:
    config = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    warmup = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    tree = Path(sys.argv[4]) if len(sys.argv) > 4 else HERE.parent
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        raise SystemExit("valgrind (with callgrind_control) is not installed")
    work = Path(tempfile.mkdtemp(prefix="smdebug-callgrind-"))
    try:
        for name in ("to_driver", "from_driver"):
            os.mkfifo(work / name)
        env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(tree / "src"))
        proc = subprocess.Popen(
            [
                "valgrind",
                "--tool=callgrind",
                "--instr-atstart=no",
                "--separate-threads=yes",
                f"--callgrind-out-file={work}/cg.%p",
                sys.executable,
                "-c",
                CHILD,
                config,
                str(warmup),
                str(steps),
                str(work),
                str(HERE),
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for switch in ("on", "off"):
            with open(work / "to_driver") as f:
                f.read()
            subprocess.run(["callgrind_control", "-i", switch, str(proc.pid)], check=True, capture_output=True)
            with open(work / "from_driver", "w") as f:
                f.write("go\n")
        _, err = proc.communicate()
        if proc.returncode != 0:
            raise SystemExit(f"the workload failed:\n{err[-3000:]}")
        per_thread = {}
        for path in glob.glob(str(work / "cg.*")):
            suffix = path.rsplit(".", 1)[1]
            thread = int(suffix.split("-")[1]) if "-" in suffix else 1
            with open(path) as f:
                total = next((int(line.split()[1]) for line in f if line.startswith("totals:")), 0)
            per_thread[thread] = per_thread.get(thread, 0) + total
        rows = {t: round(v / steps / 1e6, 3) for t, v in sorted(per_thread.items()) if v}
        print(
            f"{config} ({tree}): M instructions per step by thread: {rows}; all threads "
            f"{round(sum(per_thread.values()) / steps / 1e6, 3)}"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
