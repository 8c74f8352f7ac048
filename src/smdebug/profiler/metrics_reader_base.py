"""1.0.34's ``MetricsReaderBase``: the shared surface of the system and framework readers, over
:class:`~smdebug.profiler.reading.ProfilerTrial` (the columnar reader).

What differs from 1.0.34, on purpose: a parsed file is kept (and parsed again only when it
changed) whatever ``use_in_memory_cache`` says, so a query never re-reads the run; results are
sorted by time (1.0.34's came in file order); no environment variable can crash the reader
(1.0.34 subtracted ``$TIME_BUFFER_MICROSECONDS``, a string, from an int).
"""

from __future__ import annotations

from smdebug.profiler.reading.trial import ProfilerTrial
from smdebug.profiler.utils import TimeUnits, convert_utc_timestamp_to_microseconds

__all__ = ["MetricsReaderBase"]


class MetricsReaderBase:
    stream = ""  # "system" or "framework"

    def __init__(self, path, use_in_memory_cache=False):
        self._cache_events_in_memory = use_in_memory_cache
        self._trial = ProfilerTrial(path, streams=(self.stream,))
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

    def _refresh_if_needed(self, end_us) -> None:
        # 1.0.34: the listing is refreshed when the query reaches past the newest file
        if end_us >= self.get_timestamp_of_latest_available_file():
            self._trial.refresh()

    def get_events(
        self, start_time, end_time, unit=TimeUnits.MICROSECONDS, event_type=None, file_suffix_filter=None
    ) -> list:
        """The events of ``[start_time, end_time]`` (inclusive, in ``unit``), sorted by time."""
        end_us = convert_utc_timestamp_to_microseconds(end_time, unit)
        self._refresh_if_needed(end_us)
        return self._events(start_time, end_time, unit, event_type, file_suffix_filter)

    def _events(self, start_time, end_time, unit, event_type, file_suffix_filter) -> list:
        raise NotImplementedError

    def _get_time_interval_for_step(self, start_step, end_step):
        """``(start of the first event of start_step, start of the first event of end_step - 1)``
        from the python timeline files, or ``(0, 0)`` when either step is not found (as 1.0.34)."""
        trial = self._trial if self.stream == "framework" else ProfilerTrial(self._trial.path, streams=("framework",))
        events = trial.framework_events(suffixes=["pythontimeline.json"])
        start_us = end_us = None
        hits = events.step == int(start_step)
        if hits.any():
            start_us = int(events.start_us[hits.argmax()])
        hits = events.step == int(end_step)
        if hits.any():
            end_us = int(events.start_us[hits.argmax()]) - 1
        if start_us is None or end_us is None:
            return 0, 0
        return start_us, end_us

    def get_events_by_step(self, start_step, end_step, event_type=None, file_suffix_filter=None) -> list:
        """The events from the start of ``start_step`` to just before ``end_step`` starts.

        The step bounds come from the framework files under the same root, also for the system
        reader (1.0.34's system reader looked for them among the system files and found nothing)."""
        start_us, end_us = self._get_time_interval_for_step(start_step, end_step)
        return self.get_events(start_us, end_us, TimeUnits.MICROSECONDS, event_type, file_suffix_filter)
