"""ProfilerTrial: the one trial of a job's profiler data. ``create_trial(path, profiler=True)``
returns it; the profiler rules, the report and timeline views and ``smdebug profile`` read it;
``smdebug.trials.profiler_trial`` (1.0.34's path) names this class.

::

    trial = ProfilerTrial("/opt/ml/output/profiler")   # or s3://bucket/job/profiler-output
    trial.system_series(type="cpu")                     # the columnar queries of ProfileFolder
    trial.framework_events(start_us, end_us)
    trial.get_system_metrics(start_us, end_us)          # 1.0.34's event objects, through its readers

It is a :class:`~smdebug.profiler.reading.folder.ProfileFolder` (the columns, listed and parsed
as queries need them) with 1.0.34's trial on top: ``temp_dir``, the two readers
(``system_metrics_reader``, ``framework_metrics_reader``), ``get_first_timestamp``,
``get_latest_timestamp``, ``wait_for_data``, ``get_system_metrics`` and ``get_framework_metrics``.

What differs from 1.0.34, on purpose:

* The path alone opens it: ``ProfilerTrial(path)`` (1.0.34 had no one-argument form). 1.0.34's
  ``ProfilerTrial(name, trial_dir, output_dir)``, by position or keyword, works as before.
* Opening never waits: 1.0.34 slept 10 s at construction and looped forever on a folder without
  system metrics. ``first_timestamp`` is the earliest sample or event in the data (None without
  data; 1.0.34 took the first system file's minute).
* ``wait_for_data`` polls every ``poll_s`` (1 s, not 10 s) and gives up after ``timeout_s`` when
  one is given (1.0.34 waited until the job wrote its end marker, forever for a killed job).
* ``output_dir`` (and its ``.sagemaker-ignore`` temp folder) is created when a rule first writes
  there (:meth:`ensure_output_dir`), not at construction: opening a trial on a laptop does not need
  rights on ``/opt/ml/processing/outputs/`` (``create_trial``'s default).
"""

from __future__ import annotations

import logging
import os
import time

from smdebug.exceptions import NoMoreProfilerData, SMDebugTypeError, SMDebugValueError
from smdebug.profiler.algorithm_metrics_reader import (
    AlgorithmMetricsReader,
    LocalAlgorithmMetricsReader,
    S3AlgorithmMetricsReader,
)
from smdebug.profiler.reading.folder import ProfileFolder
from smdebug.profiler.system_metrics_reader import LocalSystemMetricsReader, S3SystemMetricsReader, SystemMetricsReader
from smdebug.profiler.system_profiler_file_parser import ProfilerSystemEvent
from smdebug.profiler.trace_event_file_parser import TraceEvent
from smdebug.storage import is_remote

__all__ = ["ProfilerTrial"]

logger = logging.getLogger("smdebug")


class ProfilerTrial(ProfileFolder):
    """The profiler data under ``path`` (``<root>/system/...`` and ``<root>/framework/...``);
    ``output_dir`` is where profiler rules write (None: the rules choose)."""

    def __init__(self, name: str | None = None, trial_dir: str | None = None, output_dir: str | None = None) -> None:
        # 1.0.34's signature; without trial_dir, the one argument is the folder: ProfilerTrial(path)
        if trial_dir is None:
            if name is None:
                raise SMDebugTypeError(
                    "ProfilerTrial needs the profiler folder: ProfilerTrial(path), or 1.0.34's "
                    "ProfilerTrial(name, trial_dir, output_dir)"
                )
            trial_dir = name
            name = None
        super().__init__(trial_dir, name=name, output_dir=output_dir)
        self.temp_dir = os.path.join(output_dir, ".sagemaker-ignore") if output_dir else None
        self._readers: tuple[SystemMetricsReader, AlgorithmMetricsReader] | None = None

    # ------------------------------------------------------------------ 1.0.34's readers
    def _make_readers(self) -> tuple[SystemMetricsReader, AlgorithmMetricsReader]:
        if self._readers is None:
            if is_remote(self.path):
                self._readers = (S3SystemMetricsReader(self.path), S3AlgorithmMetricsReader(self.path))
            else:
                self._readers = (LocalSystemMetricsReader(self.path), LocalAlgorithmMetricsReader(self.path))
        return self._readers

    @property
    def system_metrics_reader(self) -> SystemMetricsReader:
        """1.0.34's system reader over the same folder (made on first use)."""
        return self._make_readers()[0]

    @property
    def framework_metrics_reader(self) -> AlgorithmMetricsReader:
        """1.0.34's framework reader over the same folder (made on first use)."""
        return self._make_readers()[1]

    def ensure_output_dir(self) -> str:
        """Create ``output_dir`` and its ``.sagemaker-ignore`` folder (where rules write)."""
        if not self.output_dir or self.temp_dir is None:
            raise SMDebugValueError("this profiler trial has no output_dir: pass create_trial(..., output_dir=...)")
        os.makedirs(self.temp_dir, exist_ok=True)
        return self.output_dir

    # ------------------------------------------------------------------ 1.0.34's methods
    def get_first_timestamp(self) -> int | None:
        """:attr:`first_timestamp` (µs), without waiting; None when there is no data yet."""
        return self.first_timestamp

    def get_latest_timestamp(self) -> int:
        """List the files again, then the time (µs) up to which every stream has data (see
        :meth:`ProfileFolder.get_latest_timestamp`); 0 without data, as 1.0.34."""
        self.refresh()
        return super().get_latest_timestamp() or 0

    def wait_for_data(
        self, end_time: float, start_time: float, *, timeout_s: float | None = None, poll_s: float = 1.0
    ) -> bool:
        """Return True once data reaches past ``end_time`` (µs). When the job has finished: raise
        :class:`~smdebug.exceptions.NoMoreProfilerData` if ``start_time`` is at or past the last data,
        else return True (the window holds the last data). While the job runs, look again every
        ``poll_s`` seconds; after ``timeout_s`` (None: no limit, as 1.0.34) return False."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            latest = self.get_latest_timestamp()
            if end_time < latest:
                return True
            if self.job_finished():
                if start_time >= latest:
                    raise NoMoreProfilerData(end_time)
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
            logger.info("smdebug: profiler: waiting for data past %s (latest %s)", end_time, latest)
            time.sleep(poll_s if deadline is None else max(0.0, min(poll_s, deadline - time.monotonic())))

    def get_system_metrics(self, start_time: float, end_time: float) -> list[ProfilerSystemEvent]:
        """1.0.34's ProfilerSystemEvent objects of ``[start_time, end_time]`` (µs, inclusive)."""
        return self.system_metrics_reader.get_events(start_time, end_time)

    def get_framework_metrics(self, start_time: float, end_time: float) -> list[TraceEvent]:
        """1.0.34's TraceEvent objects overlapping ``[start_time, end_time]`` (µs, inclusive)."""
        return self.framework_metrics_reader.get_events(start_time, end_time)
