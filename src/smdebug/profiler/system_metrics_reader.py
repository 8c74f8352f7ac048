"""1.0.34's system metrics readers (``LocalSystemMetricsReader``, ``S3SystemMetricsReader``): the
samples under ``<root>/system/`` as :class:`ProfilerSystemEvent` objects, made on demand from the
columns of :class:`~smdebug.profiler.reading.ProfileFolder` (:meth:`SystemMetricsReader.get_series`
gives the columns themselves)."""

from __future__ import annotations

import numpy as np

from smdebug.exceptions import SMDebugValueError
from smdebug.profiler.metrics_reader_base import LocalReader, MetricsReaderBase, S3Reader, SuffixFilter
from smdebug.profiler.reading.frames import Series
from smdebug.profiler.system_profiler_file_parser import ProfilerSystemEvent
from smdebug.profiler.utils import (
    TimeUnits,
    convert_utc_timestamp_to_microseconds,
    convert_utc_timestamp_to_nanoseconds,
)

__all__ = ["SystemMetricsReader", "LocalSystemMetricsReader", "S3SystemMetricsReader"]


class SystemMetricsReader(MetricsReaderBase[ProfilerSystemEvent]):
    stream = "system"

    def get_series(
        self,
        start_time: float,
        end_time: float,
        unit: TimeUnits = TimeUnits.MICROSECONDS,
        event_type: str | None = None,
    ) -> list[Series]:
        """The samples of the window as columns: list of
        :class:`~smdebug.profiler.reading.frames.Series` (no object per sample)."""
        start_us = convert_utc_timestamp_to_microseconds(start_time, unit)
        end_us = convert_utc_timestamp_to_microseconds(end_time, unit)
        self._refresh_if_needed(end_us)
        # one microsecond of slack: the exact bound below is 1.0.34's, in nanoseconds of the float
        return self._trial.system_series(int(start_us) - 1, int(end_us) + 1, type=event_type)

    def _events(
        self, start: float, end: float, unit: TimeUnits, kind: str | None, suffixes: SuffixFilter
    ) -> list[ProfilerSystemEvent]:
        start_ns = convert_utc_timestamp_to_nanoseconds(start, unit)
        end_ns = convert_utc_timestamp_to_nanoseconds(end, unit)
        if suffixes is not None and not any(s.endswith(".json") for s in suffixes):
            return []  # 1.0.34: system files end in .json; any other suffix selects none
        events: list[ProfilerSystemEvent] = []
        for s in self._trial.system_series(int(start_ns // 1000) - 1, int(end_ns // 1000) + 1, type=kind):
            seconds = s.timestamp_s
            if seconds is None:  # the folder keeps every sample's own seconds; a series without them is no file's
                raise SMDebugValueError(f"system series {s.key}: no file timestamps (timestamp_s) to make events of")
            ns = (seconds * 1e9).astype(np.int64)
            keep = (ns >= start_ns) & (ns <= end_ns)
            name = s.name if s.name != "" else None
            events.extend(
                ProfilerSystemEvent(s.type, name, s.dimension, v, s.node_id, ts)
                for ts, v in zip(seconds[keep].tolist(), s.value[keep].tolist())
            )
        events.sort(key=lambda e: e.timestamp)
        return events


class LocalSystemMetricsReader(LocalReader[ProfilerSystemEvent], SystemMetricsReader):
    """The system metrics under a local folder (``<trace_root_folder>/system/...``)."""


class S3SystemMetricsReader(S3Reader[ProfilerSystemEvent], SystemMetricsReader):
    """The system metrics under ``s3://bucket/prefix/system/...``."""
