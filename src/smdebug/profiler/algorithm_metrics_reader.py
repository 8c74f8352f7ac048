"""1.0.34's framework metrics readers (``LocalAlgorithmMetricsReader``, ``S3AlgorithmMetricsReader``):
the events of ``<root>/framework/pevents/...`` as :class:`TraceEvent` objects, made on demand from
the columns of :class:`~smdebug.profiler.reading.ProfileFolder` (:meth:`AlgorithmMetricsReader.get_frame`
gives the columns themselves)."""

from __future__ import annotations

from smdebug.profiler.metrics_reader_base import LocalReader, MetricsReaderBase, S3Reader, SuffixFilter, us_window
from smdebug.profiler.reading.frames import FrameworkEvents
from smdebug.profiler.reading.trace_files import FILE_TYPES
from smdebug.profiler.trace_event_file_parser import ProcessInfo, TraceEvent
from smdebug.profiler.utils import TimeUnits

__all__ = ["AlgorithmMetricsReader", "LocalAlgorithmMetricsReader", "S3AlgorithmMetricsReader", "trace_events"]


def trace_events(events: FrameworkEvents) -> list[TraceEvent]:
    """1.0.34's event objects for the rows of ``events`` (in their order)."""
    processes: dict[tuple[int, str], ProcessInfo] = {}
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


class AlgorithmMetricsReader(MetricsReaderBase[TraceEvent]):
    stream = "framework"

    def get_frame(
        self,
        start_time: float,
        end_time: float,
        unit: TimeUnits = TimeUnits.MICROSECONDS,
        file_suffix_filter: SuffixFilter = None,
    ) -> FrameworkEvents:
        """The events of the window as columns (no object per event)."""
        start_us, end_us = us_window(start_time, end_time, unit)
        self._refresh_if_needed(end_us)
        return self._trial.framework_events(start_us, end_us, suffixes=file_suffix_filter)

    def _events(
        self, start: float, end: float, unit: TimeUnits, kind: str | None, suffixes: SuffixFilter
    ) -> list[TraceEvent]:
        start_us, end_us = us_window(start, end, unit)
        events = self._trial.framework_events(start_us, end_us, suffixes=suffixes)
        if kind is not None:  # 1.0.34 raised TypeError here; we filter on the phase
            events = events.take(events.phase == kind)
        return trace_events(events)

    def get_current_time_range_for_event_query(self) -> tuple[int, int]:
        """``(first, latest)`` file timestamps (µs), ``(0, 0)`` without files (1.0.34's was broken)."""
        return self.get_timestamp_of_first_available_file(), self.get_timestamp_of_latest_available_file()


class LocalAlgorithmMetricsReader(LocalReader[TraceEvent], AlgorithmMetricsReader):
    """The framework events under a local folder (``<trace_root_folder>/framework/pevents/...``)."""


class S3AlgorithmMetricsReader(S3Reader[TraceEvent], AlgorithmMetricsReader):
    """The framework events under ``s3://bucket/prefix/framework/pevents/...``."""
