"""1.0.34's ``PandasFrame``: a job's system metrics and framework events as pandas DataFrames, with
1.0.34's column names. Built from the columnar reader in one pass per query (1.0.34 re-read the
files in ``scan_interval`` chunks and built an object per event).

Columns: system ``timestamp, timestamp_us, value, system_metric, dimension, nodeID, type``;
framework ``start_time, end_time, start_time_us, end_time_us, tid, pid, framework_metric, step,
bytes, process, nodeID``; data loader ``start_time, end_time, start_time_us, end_time_us,
duration_us, pid, framework_metric, step, worker_id, num_workers, pin_memory, process, node_id``.
``*_us`` columns are relative to :attr:`PandasFrame.start_time`; ``timestamp``/``start_time``/
``end_time`` are UTC strings ``%Y-%m-%dT%H:%M:%S:%f``.

``start_time`` is 1.0.34's: the time in the name of the first system-metrics file (the minute its
samples belong to: a sample at hh:02:35.166657 has ``timestamp_us`` 35166657), so every ``*_us``
column and ``PandasFrameAnalysis.get_job_statistics()`` agree with 1.0.34's.

What differs from 1.0.34, on purpose: without system files ``start_time`` is the earliest framework
event (1.0.34 took 0, which made its frame walk from 1970 and never finish); "all" means all the
data (1.0.34 stopped the framework events at the newest file's name and started them at the first
system file's).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from smdebug.exceptions import MissingDependency

try:
    import pandas as pd  # no stubs here: to mypy a DataFrame, and all it holds, is Any
except ImportError:
    raise MissingDependency("pandas", "profiler", "for PandasFrame") from None
from smdebug.profiler.algorithm_metrics_reader import (
    AlgorithmMetricsReader,
    LocalAlgorithmMetricsReader,
    S3AlgorithmMetricsReader,
)
from smdebug.profiler.reading.frames import FrameworkEvents
from smdebug.profiler.system_metrics_reader import LocalSystemMetricsReader, S3SystemMetricsReader, SystemMetricsReader
from smdebug.profiler.utils import convert_utc_datetime_to_microseconds
from smdebug.storage import is_remote

__all__ = ["PandasFrame", "SYSTEM_COLUMNS", "FRAMEWORK_COLUMNS", "DATALOADER_COLUMNS"]

SYSTEM_COLUMNS = ["timestamp", "timestamp_us", "value", "system_metric", "dimension", "nodeID", "type"]
FRAMEWORK_COLUMNS = [
    "start_time",
    "end_time",
    "start_time_us",
    "end_time_us",
    "tid",
    "pid",
    "framework_metric",
    "step",
    "bytes",
    "process",
    "nodeID",
]
DATALOADER_COLUMNS = [
    "start_time",
    "end_time",
    "start_time_us",
    "end_time_us",
    "duration_us",
    "pid",
    "framework_metric",
    "step",
    "worker_id",
    "num_workers",
    "pin_memory",
    "process",
    "node_id",
]
_FAR_US = 2**62


def _human(us: np.ndarray) -> np.ndarray:
    """µs since the epoch -> ``%Y-%m-%dT%H:%M:%S:%f`` (UTC), vectorised."""
    if len(us) == 0:
        return np.empty(0, dtype=object)
    return (
        pd.to_datetime(np.asarray(us, dtype=np.int64), unit="us", utc=True)
        .strftime("%Y-%m-%dT%H:%M:%S:%f")
        .to_numpy(dtype=object)
    )


def _arg(args: Iterable[Mapping[str, Any] | None], key: str, default: object) -> list[object]:
    return [a[key] if a and key in a else default for a in args]


class PandasFrame:
    def __init__(
        self, path: str | os.PathLike[str], use_in_memory_cache: bool = False, scan_interval: int = 5000000000
    ) -> None:
        self.path = str(path)
        self.interval = scan_interval  # kept for 1.0.34's callers; one pass needs no chunks
        self.system_metrics_reader: SystemMetricsReader
        self.framework_metrics_reader: AlgorithmMetricsReader
        if is_remote(self.path):
            self.system_metrics_reader = S3SystemMetricsReader(self.path)
            self.framework_metrics_reader = S3AlgorithmMetricsReader(self.path, use_in_memory_cache)
        else:
            self.system_metrics_reader = LocalSystemMetricsReader(self.path)
            self.framework_metrics_reader = LocalAlgorithmMetricsReader(self.path, use_in_memory_cache)
        self.step_time_mapping: dict[int, tuple[int, int]] = {}  # 1.0.34's attribute, never filled (there either)
        self.system_metrics: list[pd.DataFrame] = []  # frames kept by cache_metrics=True
        self.framework_metrics: list[pd.DataFrame] = []
        self.start_time = self.system_metrics_reader.get_timestamp_of_first_available_file()
        if not self.start_time:  # no system files: 1.0.34 took 0 and never finished; the earliest event here
            first = self.framework_metrics_reader._trial.first_timestamp
            self.start_time = first if first is not None else 0

    # ------------------------------------------------------------------ whole job
    def get_all_system_metrics(self, selected_system_metrics: Sequence[str] = []) -> pd.DataFrame:  # noqa: B006
        sys_df, _ = self.get_profiler_data_by_time(
            0, _FAR_US, selected_system_metrics=selected_system_metrics, get_framework_metrics=False
        )
        return sys_df

    def get_all_framework_metrics(self, selected_framework_metrics: Sequence[str] = []) -> pd.DataFrame:  # noqa: B006
        _, fw_df = self.get_profiler_data_by_time(
            0, _FAR_US, selected_framework_metrics=selected_framework_metrics, get_system_metrics=False
        )
        return fw_df

    def get_all_dataloader_metrics(self, selected_framework_metrics: Sequence[str] = []) -> pd.DataFrame:  # noqa: B006
        """The framework events whose name or phase matches one of the regular expressions of
        ``selected_framework_metrics`` (anywhere in the string; all events when empty)."""
        ev = self._events(0, _FAR_US)
        if selected_framework_metrics:
            pats = [re.compile(p) for p in selected_framework_metrics]
            keep = np.array(
                [any(p.search(n) or p.search(ph) for p in pats) for n, ph in zip(ev.name, ev.phase)], dtype=bool
            )
            ev = ev.take(keep)
        args = ev.args if ev.args else [None] * len(ev)
        df = pd.DataFrame(
            {
                "start_time": _human(ev.start_us),
                "end_time": _human(ev.end_us),
                "start_time_us": ev.start_us - self.start_time,
                "end_time_us": ev.end_us - self.start_time,
                "duration_us": ev.end_us - ev.start_us,
                "pid": ev.pid,
                "framework_metric": self._metric_names(ev),
                "step": ev.step,
                "worker_id": _arg(args, "worker_id", -1),
                "num_workers": _arg(args, "num_workers", -1),
                "pin_memory": [
                    "NA" if not a or "pin_memory" not in a else ("True" if a["pin_memory"] is True else "False")
                    for a in args
                ],
                "process": ev.phase,
                "node_id": ev.node_id,
            },
            columns=DATALOADER_COLUMNS,
        )
        return df[~df.duplicated()]

    # ------------------------------------------------------------------ by time / step
    def _events(self, start_us: float, end_us: float) -> FrameworkEvents:
        return self.framework_metrics_reader.get_frame(start_us, end_us)

    @staticmethod
    def _metric_names(ev: FrameworkEvents) -> list[str]:
        args = ev.args if ev.args else [None] * len(ev)
        return [
            a["layer_name"] if a and "layer_name" in a else a["name"] if a and "name" in a else n
            for a, n in zip(args, ev.name.tolist())
        ]

    def _system_df(self, start_us: float, end_us: float, selected: Sequence[str]) -> pd.DataFrame:
        parts = []
        # the samples' times are whole µs: t >= start is t >= ceil(start), t <= end is t <= floor(end)
        first_us, last_us = math.ceil(start_us), math.floor(end_us)
        for s in self.system_metrics_reader.get_series(start_us, end_us):
            s = s.window(first_us, last_us)
            name = s.name if s.name != "" else None
            if selected and name not in selected:
                continue
            parts.append(
                pd.DataFrame(
                    {
                        "timestamp": _human(s.timestamp_us),
                        "timestamp_us": s.timestamp_us - self.start_time,
                        "value": s.value,
                        "system_metric": name,
                        "dimension": s.dimension,
                        "nodeID": s.node_id,
                        "type": s.type,
                    },
                    columns=SYSTEM_COLUMNS,
                )
            )
        if not parts:
            return pd.DataFrame(columns=SYSTEM_COLUMNS)
        df = pd.concat(parts, ignore_index=True).sort_values("timestamp_us", kind="stable", ignore_index=True)
        return df

    def _framework_df(self, start_us: float, end_us: float, selected: Sequence[str]) -> pd.DataFrame:
        ev = self._events(start_us, end_us)
        if selected:
            wanted = set(selected)
            ev = ev.take(np.array([n in wanted or p in wanted for n, p in zip(ev.name, ev.phase)], dtype=bool))
        args = ev.args if ev.args else [None] * len(ev)
        return pd.DataFrame(
            {
                "start_time": _human(ev.start_us),
                "end_time": _human(ev.end_us),
                "start_time_us": ev.start_us - self.start_time,
                "end_time_us": ev.end_us - self.start_time,
                "tid": ev.tid,
                "pid": ev.pid,
                "framework_metric": self._metric_names(ev),
                "step": ev.step,
                "bytes": _arg(args, "bytes_fetched", -1),
                "process": ev.phase,
                "nodeID": ev.node_id,
            },
            columns=FRAMEWORK_COLUMNS,
        )

    def get_profiler_data_by_time(
        self,
        start_time_us: float,
        end_time_us: float,
        cache_metrics: bool = False,
        selected_framework_metrics: Sequence[str] = [],  # noqa: B006 - 1.0.34's signature
        selected_system_metrics: Sequence[str] = [],  # noqa: B006
        get_framework_metrics: bool = True,
        get_system_metrics: bool = True,
    ) -> tuple[pd.DataFrame, pd.DataFrame]:
        """``(system DataFrame, framework DataFrame)`` of ``[start_time_us, end_time_us]`` (µs since
        the epoch): samples in the window, events overlapping it. ``cache_metrics=True`` returns
        everything asked so far with ``cache_metrics=True``."""
        sys_df = (
            self._system_df(start_time_us, end_time_us, selected_system_metrics)
            if get_system_metrics
            else pd.DataFrame(columns=SYSTEM_COLUMNS)
        )
        fw_df = (
            self._framework_df(start_time_us, end_time_us, selected_framework_metrics)
            if get_framework_metrics
            else pd.DataFrame(columns=FRAMEWORK_COLUMNS)
        )
        if cache_metrics:
            if get_system_metrics:
                self.system_metrics.append(sys_df)
                sys_df = pd.concat(self.system_metrics, ignore_index=True)
            if get_framework_metrics:
                self.framework_metrics.append(fw_df)
                fw_df = pd.concat(self.framework_metrics, ignore_index=True)
        return sys_df[~sys_df.duplicated()], fw_df[~fw_df.duplicated()]

    def get_profiler_data_by_step(
        self, start_step: int, end_step: int, cache_metrics: bool = False
    ) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The framework events of steps ``start_step..end_step`` (inclusive) and the system
        samples between the first of them and the last."""
        sys_df, fw_df = self.get_all_system_metrics(), self.get_all_framework_metrics()
        fw_df = fw_df[fw_df["step"].between(start_step, end_step)]
        start, end = fw_df["start_time_us"].min(), fw_df["end_time_us"].max()
        return sys_df[sys_df["timestamp_us"].between(start, end)], fw_df

    # ------------------------------------------------------------------ by timestamps
    def convert_datetime_to_timestamp(self, timestamp: str | datetime) -> int:
        """A ``%Y-%m-%dT%H:%M:%S:%f`` string (or a datetime) -> µs since the epoch."""
        return convert_utc_datetime_to_microseconds(pd.to_datetime(timestamp, format="%Y-%m-%dT%H:%M:%S:%f", utc=True))

    def _selected(self, ev: FrameworkEvents, selected: Sequence[str]) -> FrameworkEvents:
        if not selected:
            return ev
        wanted = set(selected)
        return ev.take(np.array([n in wanted or p in wanted for n, p in zip(ev.name, ev.phase)], dtype=bool))

    def get_framework_metrics_by_timesteps(
        self,
        timestep_list: Sequence[str | datetime] = [],  # noqa: B006 - 1.0.34's signature
        selected_framework_metrics: Sequence[str] = [],  # noqa: B006
    ) -> tuple[dict[str, float], dict[str, int], dict[str, int]]:
        """For the instants of ``timestep_list``: the time of the events running at each
        (strictly), summed per phase (non-step phases scaled to the largest), per event name
        (step events excluded) and per step phase: ``(framework_metrics, detailed, training_phase)``."""
        stamps = sorted(self.convert_datetime_to_timestamp(t) for t in timestep_list)
        results: dict[str, int] = {}
        detailed: dict[str, int] = {}
        if stamps:
            ev = self._selected(self._events(stamps[0], stamps[-1]), selected_framework_metrics)
            for t in stamps[:-1]:  # 1.0.34 never reached the last one
                hit = ev.take((ev.start_us < t) & (ev.end_us > t))
                for phase, name, dur in zip(hit.phase, hit.name, hit.duration_us.tolist()):
                    results[phase] = results.get(phase, 0) + dur
                    if "Step" not in name:
                        detailed[name] = detailed.get(name, 0) + dur
        training = {k: v for k, v in results.items() if "Step" in k}
        framework: dict[str, float] = {k: v for k, v in results.items() if "Step" not in k}
        if framework:
            top = float(max(framework.values()))
            framework = {k: v / top for k, v in framework.items()}
        return framework, detailed, training

    def get_framework_metrics_by_begin_and_end_timesteps(
        self,
        begin_timestep_list: Sequence[str | datetime],
        end_timestep_list: Sequence[str | datetime],
        selected_framework_metrics: Sequence[str] = [],  # noqa: B006
    ) -> tuple[dict[str, float], dict[str, float]]:
        """For the intervals ``(begin, end)``: the time of the non-step events overlapping each,
        summed per phase and per event name, both scaled to their largest: ``(per_phase, per_name)``."""
        begins = [self.convert_datetime_to_timestamp(t) for t in begin_timestep_list]
        ends = [self.convert_datetime_to_timestamp(t) for t in end_timestep_list]
        per_phase: dict[str, float] = {}
        per_name: dict[str, float] = {}
        if begins:
            ev = self._selected(self._events(min(begins), max(ends)), selected_framework_metrics)
            for b, e in zip(begins, ends):
                hit = ev.take((ev.end_us >= b) & (ev.start_us <= e))
                for phase, name, dur in zip(hit.phase, hit.name, hit.duration_us.tolist()):
                    if "Step" in name:
                        continue
                    per_phase[phase] = per_phase.get(phase, 0) + dur
                    per_name[name] = per_name.get(name, 0) + dur
        for d in (per_phase, per_name):
            if d:
                top = float(max(d.values()))
                for k in d:
                    d[k] = d[k] / top
        return per_phase, per_name
