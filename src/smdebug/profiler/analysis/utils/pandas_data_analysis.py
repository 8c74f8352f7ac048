"""1.0.34's ``PandasFrameAnalysis`` (with ``StatsBy``, ``Resource``, ``JobStats``): statistics over
the DataFrames of :class:`~smdebug.profiler.analysis.utils.profiler_data_to_pandas.PandasFrame`.

What differs from 1.0.34, on purpose: an event outside every step keeps step -1 (1.0.34 raised
IndexError); ``get_job_statistics`` gives ``training_loop_duration`` and ``training_loop_%`` as
numbers (1.0.34: one-row pandas Series holding the same values), None for the training-loop
members when there is no step 0 (1.0.34 raised KeyError), and works without system metrics (from
the framework events; 1.0.34 raised ValueError); its ``initialization`` is 1.0.34's: step 0's
``start_time_us``, i.e. from the frame's ``start_time`` (the first system file's minute), so it can
exceed the job's duration measured between the first and last system samples;
invalid arguments raise :class:`~smdebug.exceptions.SMDebugTypeError` instead of logging and
returning None.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

import numpy as np

from smdebug.exceptions import MissingDependency, SMDebugTypeError

try:
    import pandas as pd  # no stubs here: to mypy a DataFrame, and all it holds, is Any
except ImportError:
    raise MissingDependency("pandas", "profiler", "for PandasFrameAnalysis") from None

__all__ = ["StatsBy", "Resource", "JobStats", "PandasFrameAnalysis"]


class StatsBy(Enum):
    TRAINING_PHASE = "training_phase"
    FRAMEWORK_METRICS = "framework_metric"
    PROCESS = "process"


class Resource(Enum):
    CPU = "cpu"
    GPU = "gpu"
    IO = "i/o"
    NETWORK = "network"
    MEMORY = "memory"


class JobStats(dict[str, object]):
    """A dict whose items are also attributes; shown as a one-column table."""

    def __setitem__(self, key: str, item: object) -> None:
        super().__setitem__(key, item)
        self.__dict__[key] = item

    def __getitem__(self, key: str) -> object:
        return self.__dict__[key]

    def __repr__(self) -> str:
        return repr(pd.DataFrame.from_dict({k: [v] for k, v in self.__dict__.items()}).T)


_STAT_COLUMNS = ["mean", "min", "max", "50%", "95%", "99%"]


def _describe(groups: pd.api.typing.SeriesGroupBy) -> pd.DataFrame:
    out = groups.describe(percentiles=[0.5, 0.95, 0.99])
    return out[_STAT_COLUMNS].reset_index()


class PandasFrameAnalysis:
    def __init__(self, system_df: pd.DataFrame, framework_df: pd.DataFrame) -> None:
        self.sys_metrics_df = system_df
        self.framework_metrics_df = framework_df
        self.framework_metrics_df["duration_us"] = framework_df["end_time_us"] - framework_df["start_time_us"]
        self._get_step_numbers()

    # ------------------------------------------------------------------ steps
    def _get_step_time_mapping(self) -> None:
        fw = self.framework_metrics_df
        steps = fw[fw["framework_metric"].astype(str).str.contains("Step:ModeKeys") & (fw["step"] != -1)]
        self.step_time_df = steps.groupby(["step"]).agg({"start_time_us": "min", "end_time_us": "max"}).reset_index()

    def _get_step_numbers(self) -> None:
        """Events without a step get the step whose span strictly contains them (-1 if none)."""
        self._get_step_time_mapping()
        fw = self.framework_metrics_df
        if fw.empty:
            return
        steps = self.step_time_df.sort_values("start_time_us", kind="stable")
        starts = steps["start_time_us"].to_numpy()
        ends = steps["end_time_us"].to_numpy()
        numbers = steps["step"].to_numpy()
        step = fw["step"].to_numpy().copy()
        missing = np.flatnonzero(step == -1)
        if len(missing) and len(starts):
            ev_start = fw["start_time_us"].to_numpy()[missing]
            ev_end = fw["end_time_us"].to_numpy()[missing]
            idx = np.searchsorted(starts, ev_start, side="left") - 1
            ok = idx >= 0
            safe = np.where(ok, idx, 0)
            ok &= ends[safe] > ev_end
            step[missing[ok]] = numbers[safe[ok]]
        self.framework_metrics_df["step"] = step

    # ------------------------------------------------------------------ job
    def get_job_statistics(self) -> JobStats:
        sys_df, fw = self.sys_metrics_df, self.framework_metrics_df
        stats = JobStats()
        has_sys = not sys_df.empty
        stats["start_time"] = min(sys_df["timestamp"]) if has_sys else None
        stats["end_time"] = max(sys_df["timestamp"]) if has_sys else None
        job_start = sys_df["timestamp_us"].min() if has_sys else fw["start_time_us"].min()
        job_end = sys_df["timestamp_us"].max() if has_sys else fw["end_time_us"].max()
        job_duration = job_end - job_start
        stats["job_duration"] = job_duration
        step_0 = fw[(fw["step"] == 0) & fw["framework_metric"].isin(["Step:ModeKeys.TRAIN", "Step:ModeKeys.GLOBAL"])]
        if step_0.empty or fw.empty:
            for k in (
                "training_loop_start",
                "training_loop_end",
                "training_loop_duration",
                "initialization",
                "finalization",
                "initialization_%",
                "training_loop_%",
                "finalization_%",
            ):
                stats[k] = None
            return stats
        first = step_0.iloc[0]
        stats["training_loop_start"] = first["start_time"]
        stats["training_loop_end"] = max(fw["end_time"])
        loop = stats["training_loop_duration"] = int(fw["end_time_us"].max() - first["start_time_us"])
        init = stats["initialization"] = int(first["start_time_us"])  # from the frame's start_time, as 1.0.34
        final = stats["finalization"] = int(job_end - fw["end_time_us"].max())
        for k, part in (("initialization_%", init), ("training_loop_%", loop), ("finalization_%", final)):
            stats[k] = part / job_duration * 100 if job_duration else None
        return stats

    def get_step_statistics(self, by: StatsBy = StatsBy.TRAINING_PHASE) -> pd.DataFrame:
        """Duration statistics (µs) of the steps: per step phase (``StatsBy.TRAINING_PHASE``), or of
        each step's span per framework metric or per process."""
        if not isinstance(by, StatsBy):
            raise SMDebugTypeError(f"get_step_statistics(by={by!r}): use a StatsBy")
        key = by.value
        fw = self.framework_metrics_df
        if by == StatsBy.TRAINING_PHASE:
            fw = fw[fw["framework_metric"].astype(str).str.contains("Step:ModeKeys")]
            key_col = "framework_metric"
        else:
            key_col = key
        spans = fw.groupby(["step", key_col]).agg({"start_time_us": "min", "end_time_us": "max"}).reset_index()
        spans["duration_us"] = spans["end_time_us"] - spans["start_time_us"]
        stats = _describe(spans.groupby([key_col])["duration_us"])
        stats.columns = [
            key,
            "duration_mean_us",
            "duration_min_us",
            "duration_max_us",
            "duration_p50_us",
            "duration_p95_us",
            "duration_p99_us",
        ]
        return stats

    # ------------------------------------------------------------------ utilization
    def _resources(self, resource: Resource | list[Resource] | None, what: str = "resource") -> list[str]:
        if resource is None:
            return [r.value for r in Resource]
        if isinstance(resource, Resource):
            return [resource.value]
        if isinstance(resource, list) and all(isinstance(r, Resource) for r in resource):
            return [r.value for r in resource]
        raise SMDebugTypeError(f"{what}={resource!r}: use a Resource or a list of them")

    def get_utilization_stats(
        self,
        resource: Resource | list[Resource] | None = None,
        by: StatsBy | None = None,
        phase: str | list[str] | None = None,
    ) -> pd.DataFrame:
        """Value statistics per resource and node (``by=StatsBy.TRAINING_PHASE``: also per
        training-phase interval, see :meth:`get_training_phase_intervals`)."""
        if by is not None and not isinstance(by, StatsBy):
            raise SMDebugTypeError(f"get_utilization_stats(by={by!r}): use a StatsBy")
        resources = self._resources(resource)
        if by == StatsBy.TRAINING_PHASE:
            intervals = self.get_training_phase_intervals(phase)
            if intervals is not None:
                for start, end, name in intervals[["start_time_us", "end_time_us", "phase"]].itertuples(index=False):
                    self.sys_metrics_df.loc[self.sys_metrics_df["timestamp_us"].between(start, end), "phase"] = name
        columns = [
            "Resource",
            "nodeID",
            "utilization_mean",
            "utilization_min",
            "utilization_max",
            "utilization_p50",
            "utilization_p95",
            "utilization_p99",
        ]
        parts = []
        for r in resources:
            df = self.sys_metrics_df[self.sys_metrics_df["type"].astype(str).str.contains(r, regex=False)]
            if df.empty:
                continue
            if by == StatsBy.TRAINING_PHASE:
                stats = _describe(df.groupby(["phase", "nodeID"])["value"])
                stats.insert(0, "Resource", r)
            else:
                stats = _describe(df.groupby(["nodeID"])["value"])
                stats.insert(0, "Resource", r)
            parts.append(stats)
        if by == StatsBy.TRAINING_PHASE:
            columns.insert(1, "Training_phase")
        if not parts:
            return pd.DataFrame(columns=columns)
        out = pd.concat(parts).reset_index(drop=True)
        out.columns = columns
        return out

    def get_device_usage_stats(
        self,
        device: Resource | list[Resource] | None = None,
        utilization_ranges: list[tuple[float, float]] | None = None,
    ) -> pd.DataFrame:
        """How many samples per (type, node) fall in each utilization range (default
        ``(90, 100), (10, 90), (0, 10)``; the first range that holds a value counts it)."""
        resources = self._resources(device if device is not None else [Resource.CPU, Resource.GPU], "device")
        ranges = utilization_ranges if utilization_ranges is not None else [(90, 100), (10, 90), (0, 10)]
        if not isinstance(ranges, list) or not ranges or any(len(r) != 2 for r in ranges):
            raise SMDebugTypeError(f"utilization_ranges={ranges!r}: a non-empty list of (start, end)")
        df = self.sys_metrics_df
        values = df["value"].astype(float).to_numpy()
        label = np.full(len(df), -1)
        for i, (lo, hi) in reversed(list(enumerate(ranges))):
            label[(values >= lo) & (values <= hi)] = i
        df = df.assign(_range=label)
        df = df[(df["_range"] >= 0) & df["type"].astype(str).str.contains("|".join(map(str, resources)))]
        if df.empty:
            return pd.DataFrame()
        counts = df.groupby(["type", "nodeID", "_range"]).size().unstack(fill_value=0)
        counts.columns = [tuple(ranges[i]) for i in counts.columns]
        counts = counts[sorted(counts.columns)]  # 1.0.34 pivots on the ranges: columns in ascending order
        counts.columns.name = "ranges"
        return counts.reset_index().astype({c: float for c in counts.columns})

    def get_training_phase_intervals(self, phase: str | list[str] | None = None) -> pd.DataFrame | None:
        """The job split into the spans of the step phases (``Step:ModeKeys.TRAIN``...), what lies
        between two of them, before the first and after the last: columns ``start_time_us,
        end_time_us, phase``; None when no step phase is found."""
        fw = self.framework_metrics_df
        processes = list(fw["process"].unique())
        if phase is None:
            phase = [p for p in processes if "Step:ModeKeys" in str(p)]
        if isinstance(phase, str):
            phase = [phase]
        if not isinstance(phase, list):
            raise SMDebugTypeError(f"phase={phase!r}: a phase name or a list of them")
        phase = [p for p in phase if p in processes]
        if not phase:
            return None
        mode = fw[fw["framework_metric"].isin(phase)]
        if len(phase) > 1:
            run = mode["framework_metric"].ne(mode["framework_metric"].shift()).cumsum()
            mode = (
                mode.groupby(run)
                .agg(
                    start_time_us=("start_time_us", "min"),
                    end_time_us=("end_time_us", "max"),
                    phase=("framework_metric", "first"),
                )
                .reset_index(drop=True)
            )
        else:
            mode = mode[["start_time_us", "end_time_us", "framework_metric"]].reset_index(drop=True)
            mode = mode.rename(columns={"framework_metric": "phase"})
        rows: list[dict[str, Any]] = []  # a record of the frame: its values are pandas'
        seen = set(mode["phase"])
        records = mode.to_dict("records")
        for i, row in enumerate(records):
            rows.append(row)
            if i + 1 < len(records) and row["phase"] in seen and records[i + 1]["phase"] in seen:
                nxt = records[i + 1]
                rows.append(
                    {
                        "start_time_us": row["end_time_us"] + 1,
                        "end_time_us": nxt["start_time_us"] - 1,
                        "phase": "Between " + " and ".join(sorted([row["phase"], nxt["phase"]])),
                    }
                )
        sys_us = self.sys_metrics_df["timestamp_us"]
        rows.insert(
            0,
            {
                "start_time_us": sys_us.min(),
                "end_time_us": rows[0]["start_time_us"] - 1,
                "phase": "Before " + rows[0]["phase"],
            },
        )
        rows.append(
            {
                "start_time_us": rows[-1]["end_time_us"] + 1,
                "end_time_us": sys_us.max(),
                "phase": "After " + rows[-1]["phase"],
            }
        )
        return pd.DataFrame(rows, columns=["start_time_us", "end_time_us", "phase"])
