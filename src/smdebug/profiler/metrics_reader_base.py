"""1.0.34's ``MetricsReaderBase``: the shared surface of the system and framework readers, over
:class:`~smdebug.profiler.reading.ProfileFolder` (the columnar reader).

What differs from 1.0.34, on purpose: a parsed file is kept (and parsed again only when it
changed) whatever ``use_in_memory_cache`` says, so a query never re-reads the run; results are
sorted by time (1.0.34's came in file order); no environment variable can crash the reader
(1.0.34 subtracted ``$TIME_BUFFER_MICROSECONDS``, a string, from an int).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Generic, TypeAlias, TypeVar

from smdebug.exceptions import SMDebugValueError
from smdebug.profiler.reading.folder import ProfileFolder
from smdebug.profiler.utils import TimeUnits, convert_utc_timestamp_to_microseconds
from smdebug.storage import is_remote

__all__ = ["MetricsReaderBase", "LocalReader", "S3Reader", "SuffixFilter", "us_window"]

E = TypeVar("E")  # the event class of a reader (ProfilerSystemEvent, TraceEvent)
SuffixFilter: TypeAlias = Sequence[str] | None  # 1.0.34's file_suffix_filter: the file-name endings to read (None: all)


def us_window(start_time: float, end_time: float, unit: TimeUnits) -> tuple[int, int]:
    """``[start_time, end_time]`` (in ``unit``) as whole µs that select the same events: event times
    are whole µs, so ``t >= start`` is ``t >= ceil(start)`` and ``t <= end`` is ``t <= floor(end)``
    (a conversion from nanoseconds keeps a fraction, as 1.0.34's)."""
    start_us = convert_utc_timestamp_to_microseconds(start_time, unit)
    end_us = convert_utc_timestamp_to_microseconds(end_time, unit)
    return math.ceil(start_us), math.floor(end_us)


class MetricsReaderBase(Generic[E]):
    stream = ""  # "system" or "framework"

    def __init__(self, path: str | os.PathLike[str], use_in_memory_cache: bool = False) -> None:
        self._cache_events_in_memory = use_in_memory_cache
        self._trial = ProfileFolder(path, streams=(self.stream,))
        self.prefix = self.stream

    def get_timestamp_of_first_available_file(self) -> int:
        """The time (µs) in the first file's name; 0 when there is none (as 1.0.34)."""
        times = self._trial.file_timestamps(self.stream)
        return times[0] if times else 0

    def get_timestamp_of_latest_available_file(self) -> int:
        """The time (µs) in the newest file's name; 0 when there is none (as 1.0.34)."""
        times = self._trial.file_timestamps(self.stream)
        return times[-1] if times else 0

    def refresh_event_file_list(self) -> None:
        """List the files again (new files and files that changed since they were read)."""
        self._trial.refresh()

    def _refresh_if_needed(self, end_us: float) -> None:
        # 1.0.34: the listing is refreshed when the query reaches past the newest file
        if end_us >= self.get_timestamp_of_latest_available_file():
            self._trial.refresh()

    def get_events(
        self,
        start_time: float,
        end_time: float,
        unit: TimeUnits = TimeUnits.MICROSECONDS,
        event_type: str | None = None,
        file_suffix_filter: SuffixFilter = None,
    ) -> list[E]:
        """The events of ``[start_time, end_time]`` (inclusive, in ``unit``), sorted by time."""
        end_us = convert_utc_timestamp_to_microseconds(end_time, unit)
        self._refresh_if_needed(end_us)
        return self._events(start_time, end_time, unit, event_type, file_suffix_filter)

    def _events(self, start: float, end: float, unit: TimeUnits, kind: str | None, suffixes: SuffixFilter) -> list[E]:
        raise NotImplementedError

    def _get_time_interval_for_step(self, start_step: int, end_step: int) -> tuple[int, int]:
        """``(start of the first event of start_step, start of the first event of end_step - 1)``
        from the python timeline files, or ``(0, 0)`` when either step is not found (as 1.0.34)."""
        trial = self._trial if self.stream == "framework" else ProfileFolder(self._trial.path, streams=("framework",))
        events = trial.framework_events(suffixes=["pythontimeline.json"])
        start_us: int | None = None
        end_us: int | None = None
        hits = events.step == int(start_step)
        if hits.any():
            start_us = int(events.start_us[hits.argmax()])
        hits = events.step == int(end_step)
        if hits.any():
            end_us = int(events.start_us[hits.argmax()]) - 1
        if start_us is None or end_us is None:
            return 0, 0
        return start_us, end_us

    def get_events_by_step(
        self, start_step: int, end_step: int, event_type: str | None = None, file_suffix_filter: SuffixFilter = None
    ) -> list[E]:
        """The events from the start of ``start_step`` to just before ``end_step`` starts.

        The step bounds come from the framework files under the same root, also for the system
        reader (1.0.34's system reader looked for them among the system files and found nothing)."""
        start_us, end_us = self._get_time_interval_for_step(start_step, end_step)
        return self.get_events(start_us, end_us, TimeUnits.MICROSECONDS, event_type, file_suffix_filter)


class LocalReader(MetricsReaderBase[E]):
    """A reader of a local folder (``<trace_root_folder>/system/...``, ``.../framework/...``)."""

    def __init__(self, trace_root_folder: str | os.PathLike[str], use_in_memory_cache: bool = False) -> None:
        self.trace_root_folder = trace_root_folder
        super().__init__(trace_root_folder, use_in_memory_cache)


class S3Reader(MetricsReaderBase[E]):
    """A reader of ``s3://bucket/prefix`` (anything else is a ValueError naming the reader)."""

    def __init__(self, s3_trial_path: str, use_in_memory_cache: bool = False) -> None:
        if not is_remote(str(s3_trial_path)):
            raise SMDebugValueError(f"{type(self).__name__}({s3_trial_path!r}): expected s3://bucket/prefix")
        self.s3_trial_path = s3_trial_path
        super().__init__(s3_trial_path, use_in_memory_cache)
