"""1.0.34's analysis of Python-profile stats: :class:`cProfileAnalysis` and :class:`PyinstrumentAnalysis`.

::

    from smdebug.profiler.analysis.python_profile_analysis import cProfileAnalysis
    from smdebug.profiler.python_profile_utils import PythonProfileModes, StepPhase

    a = cProfileAnalysis(local_profile_dir="<profiler root>/framework/pytorch/cprofile")
    a.list_profile_stats()                 # a DataFrame, a row per profiled interval
    stats = a.fetch_profile_stats_by_step(4, 5)   # cProfileStats of steps 4..5 (TRAIN)
    stats.print_top_n_functions(Metrics.CUMULATIVE_TIME, 20)
    a = cProfileAnalysis(local_profile_dir="/tmp/dl", s3_path="s3://bucket/job/profiler-output")

Every query re-lists the folder first unless ``refresh_stats=False``, and looks at one node's
intervals: ``node_id="any"`` is the node of the earliest interval. cProfile's queries return a
:class:`~smdebug.profiler.analysis.utils.python_profile_analysis_utils.cProfileStats` adding up the
intervals found, pyinstrument's a list of ``PyinstrumentStepStats`` (one per interval); None when
no interval matches (logged; 1.0.34 printed it).

What differs from 1.0.34, on purpose: :meth:`cProfileAnalysis.fetch_profile_stats_by_job_phase`
files an interval that ends after the hook closed under ``finalization`` (1.0.34 filed every interval
starting before step 0 under ``initialization``, so the post-close stats, which start there too,
overwrote it and ``finalization`` never appeared); an interval starting before step 0 and ending in
training is ``initialization``. Our own profiler profiles the configured steps only, so its folders
have no ``prestepzero``/``posthookclose`` intervals: those queries return None on them.
"""

from __future__ import annotations

import json
import logging
import os
import pstats
from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVar

from smdebug.profiler.analysis.python_stats_reader import LocalPythonStatsReader, S3PythonStatsReader
from smdebug.profiler.analysis.utils.python_profile_analysis_utils import (
    PyinstrumentStepStats,
    StepPythonProfileStats,
    cProfileStats,
)
from smdebug.profiler.python_profile_utils import (
    CPROFILE_NAME,
    PYINSTRUMENT_NAME,
    PythonProfileModes,
    StepPhase,
    python_profile_mode_to_str,
)

if TYPE_CHECKING:
    import pandas as pd  # no stubs here: a DataFrame is Any to mypy

__all__ = ["PythonProfileAnalysis", "cProfileAnalysis", "PyinstrumentAnalysis", "LIST_COLUMNS"]

logger = logging.getLogger("smdebug")

# StepPythonProfileStats' attributes: each side of an interval has a mode, step, phase and time
_SIDE_COLUMNS = ("mode", "step", "phase", "time_since_epoch_in_micros")
LIST_COLUMNS = [
    "profiler_name",
    "framework",
    "node_id",
    *(f"{side}_{column}" for side in ("start", "end") for column in _SIDE_COLUMNS),
    "stats_path",
]

R = TypeVar("R")  # what a query returns (cProfileStats | None, list[PyinstrumentStepStats] | None)


class PythonProfileAnalysis(Generic[R]):
    """The intervals of one profiler's stats folder (local, or downloaded from ``s3_path``)."""

    name = ""  # the profiler whose intervals a subclass keeps

    def __init__(
        self, local_profile_dir: str | os.PathLike[str] = "/tmp/python_stats", s3_path: str | None = None
    ) -> None:
        self.python_stats_reader = (
            S3PythonStatsReader(local_profile_dir, s3_path) if s3_path else LocalPythonStatsReader(local_profile_dir)
        )
        self.python_profile_stats: list[StepPythonProfileStats] = []
        self._refresh_python_profile_stats(True)

    def _refresh_python_profile_stats(self, refresh_stats: bool) -> None:
        if refresh_stats:
            stats = self.python_stats_reader.load_python_profile_stats()
            self.python_profile_stats = [s for s in stats if not self.name or s.profiler_name == self.name]

    def _fetch_profile_stats_by_node_id(self, node_id: str) -> list[StepPythonProfileStats]:
        if not self.python_profile_stats:
            return []
        if node_id == "any":
            node_id = self.python_profile_stats[0].node_id
        return [s for s in self.python_profile_stats if s.node_id == node_id]

    def _select(self, keep: Callable[[StepPythonProfileStats], bool], node_id: str, refresh_stats: bool) -> R:
        self._refresh_python_profile_stats(refresh_stats)
        return self._aggregate_stats([s for s in self._fetch_profile_stats_by_node_id(node_id) if keep(s)])

    def _aggregate_stats(self, requested_stats: list[StepPythonProfileStats]) -> R:
        # 1.0.34's placeholder, for the base class used alone: the intervals themselves (R is theirs)
        return requested_stats  # type: ignore[return-value]  # each subclass returns its own R

    def fetch_profile_stats_by_step(
        self,
        start_step: int,
        end_step: int | None = None,
        mode: PythonProfileModes = PythonProfileModes.TRAIN,
        start_phase: StepPhase = StepPhase.STEP_START,
        end_phase: StepPhase = StepPhase.STEP_END,
        node_id: str = "any",
        refresh_stats: bool = True,
    ) -> R:
        """The intervals of mode ``mode`` (start and end) inside steps ``start_step..end_step``
        (inclusive; ``end_step`` defaults to ``start_step``), by 1.0.34's test
        (:meth:`StepPythonProfileStats.in_step_interval`)."""
        last_step = start_step if end_step is None else end_step
        return self._select(
            lambda s: (
                s.in_step_interval(start_step, last_step, start_phase, end_phase)
                and s.has_start_and_end_mode(mode, mode)
            ),
            node_id,
            refresh_stats,
        )

    def fetch_profile_stats_by_time(
        self,
        start_time_since_epoch_in_secs: float,
        end_time_since_epoch_in_secs: float,
        node_id: str = "any",
        refresh_stats: bool = True,
    ) -> R:
        """The intervals that start or end in ``[start, end]`` (seconds since the epoch)."""
        lo, hi = start_time_since_epoch_in_secs * 1e6, end_time_since_epoch_in_secs * 1e6
        return self._select(lambda s: s.in_time_interval(lo, hi), node_id, refresh_stats)

    def fetch_profile_stats_between_modes(
        self, start_mode: int, end_mode: int, node_id: str = "any", refresh_stats: bool = True
    ) -> R:
        """The intervals that start in ``start_mode`` and end in ``end_mode``."""
        return self._select(lambda s: s.has_start_and_end_mode(start_mode, end_mode), node_id, refresh_stats)

    def fetch_pre_step_zero_profile_stats(self, node_id: str = "any", refresh_stats: bool = True) -> R:
        """The intervals profiled from before step 0 (1.0.34's profiler: from the hook's import)."""
        return self._select(lambda s: s.has_pre_step_zero_profile_stats(), node_id, refresh_stats)

    def fetch_post_hook_close_profile_stats(self, node_id: str = "any", refresh_stats: bool = True) -> R:
        """The intervals profiled to the end of the script (1.0.34's profiler: after hook.close())."""
        return self._select(lambda s: s.has_post_hook_close_profile_stats(), node_id, refresh_stats)

    def list_profile_stats(self, refresh_stats: bool = True) -> pd.DataFrame:
        """A DataFrame with a row per interval (and file: pyinstrument's ``.json`` and ``.html`` are
        two rows) and the columns of ``LIST_COLUMNS``; modes as words (``train``), phases as
        :class:`StepPhase`. Empty (no columns) when there are none, as in 1.0.34."""
        import pandas as pd

        self._refresh_python_profile_stats(refresh_stats)
        if not self.python_profile_stats:
            logger.info("smdebug: no Python-profile stats in %s", self.python_stats_reader.profile_dir)
            return pd.DataFrame()
        df = pd.DataFrame(
            [{c: getattr(s, c) for c in LIST_COLUMNS} for s in self.python_profile_stats], columns=LIST_COLUMNS
        )
        df["start_mode"] = df["start_mode"].map(python_profile_mode_to_str)
        df["end_mode"] = df["end_mode"].map(python_profile_mode_to_str)
        return df

    def list_available_node_ids(self, refresh_stats: bool = True) -> list[str]:
        """The nodes with stats, sorted."""
        self._refresh_python_profile_stats(refresh_stats)
        return sorted({s.node_id for s in self.python_profile_stats})


class cProfileAnalysis(PythonProfileAnalysis[cProfileStats | None]):  # noqa: N801 - 1.0.34's name
    """cProfile's intervals; queries return a ``cProfileStats`` adding them up, or None."""

    name = CPROFILE_NAME

    def _aggregate_stats(self, requested_stats: list[StepPythonProfileStats]) -> cProfileStats | None:
        if not requested_stats:
            logger.info("smdebug: no cProfile stats for the requested interval")
            return None
        ps = pstats.Stats()
        for s in requested_stats:
            ps.add(s.stats_path)
        return cProfileStats(ps)

    def fetch_profile_stats_by_training_phase(
        self, node_id: str = "any", refresh_stats: bool = True
    ) -> dict[tuple[PythonProfileModes, PythonProfileModes], cProfileStats]:
        """``{(start_mode, end_mode): cProfileStats}`` for each pair of modes with intervals."""
        self._refresh_python_profile_stats(refresh_stats)
        out = {}
        for start_mode in PythonProfileModes:
            for end_mode in PythonProfileModes:
                stats = self.fetch_profile_stats_between_modes(start_mode, end_mode, node_id, refresh_stats=False)
                if stats is not None:
                    out[(start_mode, end_mode)] = stats
        return out

    def fetch_profile_stats_by_job_phase(
        self, node_id: str = "any", refresh_stats: bool = True
    ) -> dict[str, cProfileStats]:
        """``{"initialization", "training_loop", "finalization"}`` -> ``cProfileStats``: before step 0,
        the steps, after the hook closed (a phase without intervals is left out, except
        ``training_loop``, always there)."""
        by_mode = self.fetch_profile_stats_by_training_phase(node_id, refresh_stats)
        out: dict[str, cProfileStats] = {}
        parts: dict[str, list[pstats.Stats]] = {"initialization": [], "training_loop": [], "finalization": []}
        for (start_mode, end_mode), stats in by_mode.items():
            if end_mode == PythonProfileModes.POST_HOOK_CLOSE:
                parts["finalization"].append(stats.ps)
            elif start_mode == PythonProfileModes.PRE_STEP_ZERO:
                parts["initialization"].append(stats.ps)
            else:
                parts["training_loop"].append(stats.ps)
        for phase, pss in parts.items():
            if pss or phase == "training_loop":
                ps = pstats.Stats()
                for p in pss:
                    ps.add(p)
                out[phase] = cProfileStats(ps)
        return out


class PyinstrumentAnalysis(PythonProfileAnalysis[list[PyinstrumentStepStats] | None]):
    """pyinstrument's intervals; queries return a list of ``PyinstrumentStepStats``, or None."""

    name = PYINSTRUMENT_NAME

    def _aggregate_stats(self, requested_stats: list[StepPythonProfileStats]) -> list[PyinstrumentStepStats] | None:
        if not requested_stats:
            logger.info("smdebug: no pyinstrument stats for the requested interval")
            return None
        by_interval: dict[tuple[str, float], list[StepPythonProfileStats]] = {}
        for s in requested_stats:
            by_interval.setdefault((s.node_id, s.start_time_since_epoch_in_micros), []).append(s)
        out = []
        for files in by_interval.values():
            html = [s.stats_path for s in files if os.path.basename(s.stats_path).endswith(".html")]
            js = [s.stats_path for s in files if os.path.basename(s.stats_path).endswith(".json")]
            if not js:
                raise ValueError(
                    f"{os.path.dirname(files[0].stats_path)}: a pyinstrument interval without python_stats.json"
                )
            with open(js[0], encoding="utf-8") as f:
                try:
                    doc = json.load(f)
                except ValueError as exc:
                    raise ValueError(f"{js[0]}: not pyinstrument's JSON ({exc})") from None
            out.append(PyinstrumentStepStats(html[0] if html else None, doc))
        return out
