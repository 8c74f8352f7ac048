"""1.0.34's objects for Python-profile stats: one profiled interval (:class:`StepPythonProfileStats`),
cProfile's aggregate (:class:`cProfileStats`, :class:`cProfileFunctionStats`), pyinstrument's
(:class:`PyinstrumentStepStats`) and the sort keys (:class:`Metrics`).

What differs from 1.0.34, on purpose: :meth:`cProfileStats.get_function_stats` returns one column
per measure (``function name``, ``# of primitive calls``, ``# of total calls``, ``total time``,
``cumulative time``); 1.0.34's held one column of ``repr`` strings. A stats folder whose name is
not ``<mode>-<step>-<phase>-<time>_<mode>-<step>-<phase>-<time>`` raises a ValueError naming it
(1.0.34 raised a bare unpacking error).
"""

from __future__ import annotations

import pstats
from collections.abc import Callable
from enum import Enum
from typing import TYPE_CHECKING, Any

from smdebug.profiler.python_profile_utils import PythonProfileModes, StepPhase, str_to_python_profile_mode

if TYPE_CHECKING:
    import pandas as pd  # no stubs here: a DataFrame is Any to mypy

__all__ = [
    "Metrics",
    "StepPythonProfileStats",
    "cProfileStats",
    "cProfileFunctionStats",
    "PyinstrumentStepStats",
    "FUNCTION_STATS_COLUMNS",
    "PythonProfileModes",
    "StepPhase",
]  # (the last two: imported from here in 1.0.34)

# pstats' key of a function: (file, line, function name); its value: (primitive calls, total calls,
# total time, cumulative time, {caller key: the same four numbers})
FunctionKey = tuple[str, int, str]
FunctionValue = tuple[int, int, float, float, dict[FunctionKey, Any]]

# in pstats since Python 2 and used by its own printing, but not in typeshed
_func_std_string: Callable[[FunctionKey], str] = pstats.func_std_string  # type: ignore[attr-defined]

FUNCTION_STATS_COLUMNS = ["function name", "# of primitive calls", "# of total calls", "total time", "cumulative time"]


class Metrics(Enum):
    """What :meth:`cProfileStats.print_top_n_functions` sorts by (``pstats`` sort keys)."""

    TOTAL_TIME = "tottime"  # in the function alone, seconds
    CUMULATIVE_TIME = "cumtime"  # in the function and what it called, seconds
    PRIMITIVE_CALLS = "pcalls"  # non-recursive calls
    TOTAL_CALLS = "ncalls"


def _side(text: str, where: str) -> tuple[PythonProfileModes, str, StepPhase, float]:
    parts = text.split("-")
    if len(parts) != 4:
        raise ValueError(
            f"{where}: a Python-profile stats folder is named <mode>-<step>-<phase>-<time_us>"
            f"_<mode>-<step>-<phase>-<time_us>, not {text!r}"
        )
    mode, step, phase, time_us = parts
    try:
        return str_to_python_profile_mode(mode), step, StepPhase(phase), float(time_us)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


class StepPythonProfileStats:
    """One profiled interval: where its stats are and what its folder's name says.

    Attributes (1.0.34's): ``profiler_name`` (``cprofile``/``pyinstrument``), ``framework``,
    ``node_id``, ``start_mode``/``end_mode`` (:class:`PythonProfileModes`), ``start_step`` (-1 for
    ``*``, before step 0), ``end_step`` (``inf`` for ``*``, after the hook closed),
    ``start_phase``/``end_phase`` (:class:`StepPhase`), ``start_time_since_epoch_in_micros``,
    ``end_time_since_epoch_in_micros`` (floats) and ``stats_path``.
    """

    def __init__(self, framework: str, profiler_name: str, node_id: str, stats_dir: str, stats_path: str) -> None:
        start, sep, end = stats_dir.partition("_")
        if not sep or "_" in end:
            raise ValueError(f"{stats_path}: a Python-profile stats folder is named <start>_<end>, not {stats_dir!r}")
        start_mode, start_step, start_phase, start_us = _side(start, stats_path)
        end_mode, end_step, end_phase, end_us = _side(end, stats_path)
        self.profiler_name = profiler_name
        self.framework = framework
        self.node_id = node_id
        self.start_mode = start_mode
        try:
            self.start_step: int = -1 if start_step == "*" else int(start_step)
            self.end_step: float = float("inf") if end_step == "*" else int(end_step)  # an int but for "*"
        except ValueError:
            raise ValueError(f"{stats_path}: a step is a number or '*', not in {stats_dir!r}") from None
        self.start_phase = start_phase
        self.start_time_since_epoch_in_micros = start_us
        self.end_mode = end_mode
        self.end_phase = end_phase
        self.end_time_since_epoch_in_micros = end_us
        self.stats_path = stats_path

    def has_start_and_end_mode(self, start_mode: int, end_mode: int) -> bool:
        return self.start_mode == start_mode and self.end_mode == end_mode

    def in_time_interval(self, start_time_since_epoch_in_micros: float, end_time_since_epoch_in_micros: float) -> bool:
        """Whether the interval starts or ends inside ``[start, end]`` (µs), as 1.0.34 tests it."""
        lo, hi = start_time_since_epoch_in_micros, end_time_since_epoch_in_micros
        return lo <= self.start_time_since_epoch_in_micros <= hi or lo <= self.end_time_since_epoch_in_micros <= hi

    def in_step_interval(
        self, start_step: float, end_step: float, start_phase: StepPhase, end_phase: StepPhase
    ) -> bool:
        """1.0.34's test: inside when it starts after ``start_step`` and ends before ``end_step``;
        outside when it starts before or ends after; on a boundary step the phases decide (an
        interval starting at ``start_step`` in another phase than a ``stepend``/``forwardpassend``
        ``start_phase`` is out, one ending at ``end_step`` in another phase than a ``stepstart``
        ``end_phase`` is out)."""
        if start_step < self.start_step and end_step > self.end_step:
            return True
        if start_step > self.start_step or end_step < self.end_step:
            return False
        if (
            start_step == self.start_step
            and start_phase in (StepPhase.STEP_END, StepPhase.FORWARD_PASS_END)
            and self.start_phase != start_phase
        ):
            return False
        if end_step == self.end_step and end_phase == StepPhase.STEP_START and self.end_phase != end_phase:
            return False
        return True

    def has_pre_step_zero_profile_stats(self) -> bool:
        return self.start_phase == StepPhase.START

    def has_post_hook_close_profile_stats(self) -> bool:
        return self.end_phase == StepPhase.END

    def has_node_id(self, node_id: str) -> bool:
        return self.node_id == node_id

    def __repr__(self) -> str:
        return repr(self.__dict__)


class cProfileFunctionStats:  # noqa: N801 - 1.0.34's name
    """One function of a cProfile aggregate: ``function_name`` (``file:line(function)``),
    ``prim_calls``, ``total_calls``, ``total_time`` and ``cumulative_time`` (seconds), and
    ``callers`` (function names)."""

    def __init__(self, key: FunctionKey, value: FunctionValue) -> None:
        self.function_name = _func_std_string(key)
        self.prim_calls, self.total_calls, self.total_time, self.cumulative_time, callers = value
        self.callers = [_func_std_string(k) for k in callers]

    def as_row(self) -> dict[str, object]:
        return dict(
            zip(
                FUNCTION_STATS_COLUMNS,
                (self.function_name, self.prim_calls, self.total_calls, self.total_time, self.cumulative_time),
            )
        )

    def __repr__(self) -> str:
        return repr(self.as_row())


class cProfileStats:  # noqa: N801 - 1.0.34's name
    """cProfile's stats of the intervals asked for: ``ps`` (a :class:`pstats.Stats` adding them up)
    and ``function_stats_list`` (a :class:`cProfileFunctionStats` per function)."""

    def __init__(self, ps: pstats.Stats) -> None:
        self.ps = ps
        # Stats.stats (key -> FunctionValue) is what pstats itself reads, but not in typeshed
        self.function_stats_list = [cProfileFunctionStats(k, v) for k, v in ps.stats.items()]  # type: ignore[attr-defined]

    def print_top_n_functions(self, by: Metrics, n: int = 10) -> None:
        """Print the ``n`` first functions sorted by ``by`` (a :class:`Metrics`)."""
        if not isinstance(by, Metrics):
            raise TypeError(f"by: give a Metrics member (Metrics.CUMULATIVE_TIME...), not {by!r}")
        if not isinstance(n, int) or isinstance(n, bool):
            raise TypeError(f"n: give an integer, not {n!r}")
        self.ps.sort_stats(by.value).print_stats(n)

    def get_function_stats(self) -> pd.DataFrame:
        """A DataFrame with a row per function and the columns of ``FUNCTION_STATS_COLUMNS``."""
        import pandas as pd

        return pd.DataFrame([f.as_row() for f in self.function_stats_list], columns=FUNCTION_STATS_COLUMNS)


class PyinstrumentStepStats:
    """One pyinstrument interval: ``html_file_path`` and ``json_stats`` (the JSON renderer's dict:
    ``root_frame`` with ``function``, ``time``, ``children``...; ``{"root_frame": None}`` when
    pyinstrument failed)."""

    def __init__(self, html_file_path: str | None, json_stats: dict[str, Any]) -> None:
        self.html_file_path = html_file_path
        self.json_stats = json_stats
