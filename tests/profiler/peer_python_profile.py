"""Run by smdebug 1.0.34's interpreter (no PYTHONPATH): write Python-profile stats with 1.0.34's own
profiler classes, in the order its PyTorch hook starts and stops them (no torch needed): before step
0 (from the hook's import), steps 2 and 3 (``PythonProfilingConfig`` StartStep 2, NumSteps 2: each
step's forward pass, then from its end to the next step's start) and after ``hook.close()``.
Usage: peer_python_profile.py <root> (both profilers, one after the other; prints the node id)"""

import os
import sys

os.environ["SMDEBUG_LOG_LEVEL"] = "error"

from smdebug.core.utils import FRAMEWORK, get_node_id  # noqa: E402
from smdebug.profiler.python_profile_utils import PythonProfileModes, StepPhase, cProfileTimer  # noqa: E402
from smdebug.profiler.python_profiler import PyinstrumentPythonProfiler, cProfilePythonProfiler  # noqa: E402


def forward(n):
    return sum(i * i for i in range(n))


def backward(n):
    return sum(i % 7 for i in range(n))


def write(root, name):
    if name == "cprofile":
        p = cProfilePythonProfiler(root, FRAMEWORK.PYTORCH, cProfileTimer.TOTAL_TIME)
    else:
        p = PyinstrumentPythonProfiler(root, FRAMEWORK.PYTORCH)
    n = 20000 if name == "cprofile" else 100000
    p.start_profiling(StepPhase.START)
    forward(n // 4)
    p.stop_profiling(StepPhase.STEP_START, PythonProfileModes.TRAIN, 0)
    for step in range(6):
        if step in (2, 3):
            p.start_profiling(StepPhase.STEP_START, PythonProfileModes.TRAIN, step)
        forward(n)
        p.stop_profiling(StepPhase.FORWARD_PASS_END, PythonProfileModes.TRAIN, step)
        if step in (2, 3):
            p.start_profiling(StepPhase.FORWARD_PASS_END, PythonProfileModes.TRAIN, step)
        backward(n)
        p.stop_profiling(StepPhase.STEP_START, PythonProfileModes.TRAIN, step + 1)
    p.start_profiling(StepPhase.END)  # hook.close(): the default mode and step, as 1.0.34's hook
    backward(n // 4)
    p.stop_profiling(StepPhase.END)


for profiler in ("cprofile", "pyinstrument"):
    write(sys.argv[1], profiler)
print(get_node_id())
