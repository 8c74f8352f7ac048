"""1.0.34's framework metrics readers (``LocalAlgorithmMetricsReader``, ``S3AlgorithmMetricsReader``):
the events of ``<root>/framework/pevents/...`` as :class:`TraceEvent` objects, made on demand from
the columns of :class:`~smdebug.profiler.reading.ProfilerTrial` (:meth:`AlgorithmMetricsReader.get_frame`
gives the columns themselves)."""

from __future__ import annotations

from smdebug.exceptions import SMDebugValueError
from smdebug.profiler.metrics_reader_base import MetricsReaderBase
from smdebug.profiler.reading.frames import FrameworkEvents
from smdebug.profiler.reading.trace_files import FILE_TYPES
from smdebug.profiler.trace_event_file_parser import ProcessInfo, TraceEvent
from smdebug.profiler.utils import TimeUnits, convert_utc_timestamp_to_microseconds
from smdebug.storage import is_remote

__all__ = ["AlgorithmMetricsReader", "LocalAlgorithmMetricsReader", "S3AlgorithmMetricsReader", "trace_events"]


def trace_events(events: FrameworkEvents) -> list[TraceEvent]:
    """1.0.34's event objects for the rows of ``events`` (in their order)."""
    processes: dict = {}
    out = []
    n = len(events)
    phase_pid = events.phase_pid if events.phase_pid is not None else events.pid
    suffix = events.file_suffix if events.file_suffix is not None else [None] * n
    args = events.args if events.args else [None] * n
    for phase, name, start, end, node, pid, tid, ppid, sfx, a in zip(
        events.phase.tolist(),
        events.name.tolist(),
        events.start_us.tolist(),
        events.end_us.tolist(),
        events.node_id.tolist(),
        events.pid.tolist(),
        events.tid.tolist(),
        phase_pid.tolist(),
        list(suffix),
        args,
    ):
        info = processes.get((ppid, phase))
        if info is None:
            info = processes[(ppid, phase)] = ProcessInfo(ppid, phase)
        out.append(
            TraceEvent(
                start,
                name,
                end - start,
                ppid,
                tid,
                a,
                node,
                "X",
                FILE_TYPES.get(sfx, ""),
                event_phase=phase,
                pid=pid,
                tid=tid,
                process_info=info,
            )
        )
    return out


class AlgorithmMetricsReader(MetricsReaderBase):
    stream = "framework"

    def get_frame(self, start_time, end_time, unit=TimeUnits.MICROSECONDS, file_suffix_filter=None) -> FrameworkEvents:
        """The events of the window as columns (no object per event)."""
        start_us = convert_utc_timestamp_to_microseconds(start_time, unit)
        end_us = convert_utc_timestamp_to_microseconds(end_time, unit)
        self._refresh_if_needed(end_us)
        return self._trial.framework_events(start_us, end_us, suffixes=file_suffix_filter)

    def _events(self, start_time, end_time, unit, event_type, file_suffix_filter) -> list:
        start_us = convert_utc_timestamp_to_microseconds(start_time, unit)
        end_us = convert_utc_timestamp_to_microseconds(end_time, unit)
        events = self._trial.framework_events(start_us, end_us, suffixes=file_suffix_filter)
        if event_type is not None:  # 1.0.34 raised TypeError here; we filter on the phase
            events = events.take(events.phase == event_type)
        return trace_events(events)

    def get_current_time_range_for_event_query(self):
        """``(first, latest)`` file timestamps (µs), ``(0, 0)`` without files (1.0.34's was broken)."""
        return self.get_timestamp_of_first_available_file(), self.get_timestamp_of_latest_available_file()


class LocalAlgorithmMetricsReader(AlgorithmMetricsReader):
    """The framework events under a local folder (``<trace_root_folder>/framework/pevents/...``)."""

    def __init__(self, trace_root_folder, use_in_memory_cache=False):
        self.trace_root_folder = trace_root_folder
        super().__init__(trace_root_folder, use_in_memory_cache)


class S3AlgorithmMetricsReader(AlgorithmMetricsReader):
    """The framework events under ``s3://bucket/prefix/framework/pevents/...``."""

    def __init__(self, s3_trial_path, use_in_memory_cache=False):
        if not is_remote(str(s3_trial_path)):
            raise SMDebugValueError(f"S3AlgorithmMetricsReader({s3_trial_path!r}): expected s3://bucket/prefix")
        self.s3_trial_path = s3_trial_path
        super().__init__(s3_trial_path, use_in_memory_cache)
