"""1.0.34's system metrics readers (``LocalSystemMetricsReader``, ``S3SystemMetricsReader``): the
samples under ``<root>/system/`` as :class:`ProfilerSystemEvent` objects, made on demand from the
columns of :class:`~smdebug.profiler.reading.ProfilerTrial` (:meth:`SystemMetricsReader.get_series`
gives the columns themselves)."""

from __future__ import annotations

import numpy as np

from smdebug.exceptions import SMDebugValueError
from smdebug.profiler.metrics_reader_base import MetricsReaderBase
from smdebug.profiler.system_profiler_file_parser import ProfilerSystemEvent
from smdebug.profiler.utils import (
    TimeUnits,
    convert_utc_timestamp_to_microseconds,
    convert_utc_timestamp_to_nanoseconds,
)
from smdebug.storage import is_remote

__all__ = ["SystemMetricsReader", "LocalSystemMetricsReader", "S3SystemMetricsReader"]


class SystemMetricsReader(MetricsReaderBase):
    stream = "system"

    def get_series(self, start_time, end_time, unit=TimeUnits.MICROSECONDS, event_type=None):
        """The samples of the window as columns: list of
        :class:`~smdebug.profiler.reading.frames.Series` (no object per sample)."""
        start_us = convert_utc_timestamp_to_microseconds(start_time, unit)
        end_us = convert_utc_timestamp_to_microseconds(end_time, unit)
        self._refresh_if_needed(end_us)
        # one microsecond of slack: the exact bound below is 1.0.34's, in nanoseconds of the float
        return self._trial.system_series(int(start_us) - 1, int(end_us) + 1, type=event_type)

    def _events(self, start_time, end_time, unit, event_type, file_suffix_filter) -> list:
        start_ns = convert_utc_timestamp_to_nanoseconds(start_time, unit)
        end_ns = convert_utc_timestamp_to_nanoseconds(end_time, unit)
        if file_suffix_filter is not None:
            suffixes = tuple(file_suffix_filter)
            if not any(s.endswith(".json") for s in suffixes):
                return []  # 1.0.34: system files end in .json; any other suffix selects none
        rows: list = []
        for s in self._trial.system_series(int(start_ns // 1000) - 1, int(end_ns // 1000) + 1, type=event_type):
            ns = (s.timestamp_s * 1e9).astype(np.int64)
            keep = (ns >= start_ns) & (ns <= end_ns)
            name = s.name if s.name != "" else None
            rows.extend(
                (ts, s.type, name, s.dimension, v, s.node_id)
                for ts, v in zip(s.timestamp_s[keep].tolist(), s.value[keep].tolist())
            )
        rows.sort(key=lambda r: r[0])
        return [ProfilerSystemEvent(t, n, d, v, node, ts) for ts, t, n, d, v, node in rows]


class LocalSystemMetricsReader(SystemMetricsReader):
    """The system metrics under a local folder (``<trace_root_folder>/system/...``)."""

    def __init__(self, trace_root_folder, use_in_memory_cache=False):
        self.trace_root_folder = trace_root_folder
        super().__init__(trace_root_folder, use_in_memory_cache)


class S3SystemMetricsReader(SystemMetricsReader):
    """The system metrics under ``s3://bucket/prefix/system/...``."""

    def __init__(self, s3_trial_path, use_in_memory_cache=False):
        if not is_remote(str(s3_trial_path)):
            raise SMDebugValueError(f"S3SystemMetricsReader({s3_trial_path!r}): expected s3://bucket/prefix")
        self.s3_trial_path = s3_trial_path
        super().__init__(s3_trial_path, use_in_memory_cache)
