"""1.0.34's names for the Python profiler's intervals: modes, step phases, profiler names, timers.

A stats folder is named ``<start>_<end>`` with each side ``<mode>-<step>-<phase>-<time_us>``
(``train-4-stepstart-1795561153594045.8``): :class:`PythonProfileModes` as the lower-case words of
:func:`python_profile_mode_to_str`, ``*`` for "no step" (before step 0, after the hook closed), and a
:class:`StepPhase` value. The analysis classes that read those folders are in
:mod:`smdebug.profiler.analysis.python_profile_analysis`.
"""

from __future__ import annotations

from enum import Enum, IntEnum

from smdebug.modes import ModeKeys

__all__ = [
    "PythonProfileModes",
    "StepPhase",
    "PythonProfilerName",
    "cProfileTimer",
    "CPROFILE_NAME",
    "PYINSTRUMENT_NAME",
    "CPROFILE_STATS_FILENAME",
    "PYINSTRUMENT_JSON_FILENAME",
    "PYINSTRUMENT_HTML_FILENAME",
    "STATS_FILES",
    "str_to_python_profile_mode",
    "python_profile_mode_to_str",
    "mode_keys_to_python_profile_mode",
]

CPROFILE_NAME = "cprofile"
PYINSTRUMENT_NAME = "pyinstrument"
CPROFILE_STATS_FILENAME = "python_stats"
PYINSTRUMENT_JSON_FILENAME = "python_stats.json"
PYINSTRUMENT_HTML_FILENAME = "python_stats.html"
# the files of a stats folder -> the profiler that writes them (pyinstrument writes two)
STATS_FILES = {
    CPROFILE_STATS_FILENAME: CPROFILE_NAME,
    PYINSTRUMENT_JSON_FILENAME: PYINSTRUMENT_NAME,
    PYINSTRUMENT_HTML_FILENAME: PYINSTRUMENT_NAME,
}


class PythonProfileModes(IntEnum):
    TRAIN = 1
    EVAL = 2
    PREDICT = 3
    GLOBAL = 4
    PRE_STEP_ZERO = 5  # from the hook's import to step 0 (1.0.34's profiler; ours profiles steps only)
    POST_HOOK_CLOSE = 6  # from hook.close() to the interpreter's exit (1.0.34's profiler)


class StepPhase(Enum):
    START = "start"  # before step 0
    STEP_START = "stepstart"
    FORWARD_PASS_END = "forwardpassend"
    STEP_END = "stepend"
    END = "end"  # the end of the script


class PythonProfilerName(Enum):
    CPROFILE = CPROFILE_NAME
    PYINSTRUMENT = PYINSTRUMENT_NAME


class cProfileTimer(Enum):  # noqa: N801 - 1.0.34's name
    TOTAL_TIME = "total_time"
    CPU_TIME = "cpu_time"
    OFF_CPU_TIME = "off_cpu_time"
    DEFAULT = "default"


_MODE_WORDS = {
    PythonProfileModes.TRAIN: "train",
    PythonProfileModes.EVAL: "eval",
    PythonProfileModes.PREDICT: "predict",
    PythonProfileModes.GLOBAL: "global",
    PythonProfileModes.PRE_STEP_ZERO: "prestepzero",
    PythonProfileModes.POST_HOOK_CLOSE: "posthookclose",
}
_WORD_MODES = {w: m for m, w in _MODE_WORDS.items()}


def str_to_python_profile_mode(mode_str: str) -> PythonProfileModes:
    """``"train"`` -> ``PythonProfileModes.TRAIN``; a ValueError names any other word."""
    try:
        return _WORD_MODES[mode_str]
    except (KeyError, TypeError):
        raise ValueError(f"{mode_str!r} is no Python-profile mode (one of {', '.join(_WORD_MODES)})") from None


def python_profile_mode_to_str(mode: int) -> str:
    """``PythonProfileModes.TRAIN`` (or 1) -> ``"train"``."""
    try:
        return _MODE_WORDS[PythonProfileModes(mode)]
    except ValueError:
        raise ValueError(f"{mode!r} is no Python-profile mode") from None


def mode_keys_to_python_profile_mode(mode: ModeKeys) -> PythonProfileModes:
    """A :class:`smdebug.modes.ModeKeys` (TRAIN=1 ... GLOBAL=4) -> the same Python-profile mode."""
    return PythonProfileModes(mode.value)
