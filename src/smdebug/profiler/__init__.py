"""The profiler, part 1: record system metrics, framework events and Python profiles in smdebug
1.0.34's profiler layout (see profiler.locations), so that 1.0.34's readers and ours read them.

* :class:`ProfilerConfig` — SageMaker's ProfilerConfig JSON (``$SMPROFILER_CONFIG_PATH`` or
  ``/opt/ml/input/config/profilerconfig.json``) or keyword arguments.
* :class:`Profiler` — one recording session; the framework hooks report steps and events to it.
* :class:`SystemMetricsSampler`, :class:`TimelineWriter`, :class:`PythonProfiling` — its parts;
  profiler.recording.upload.RemoteUpload sends their finished files to an ``s3://`` root through
  smdebug.storage.

Written against smdebug.core and the standard library only: no framework imports here (the
framework glue lives in smdebug.<framework>).

The other rooms, imported only by who reads a profile (the hooks load none of them):

* :mod:`smdebug.profiler.reading` — part 2: the files read into columns (``ProfileFolder``).
* :mod:`smdebug.profiler.trial` — :class:`~smdebug.profiler.trial.ProfilerTrial`, the one trial of
  a profile (``create_trial(path, profiler=True)``; ``smdebug.trials.profiler_trial`` names it).
* :mod:`smdebug.profiler.views` — part 3: the HTML report and the Chrome-trace timeline.
* 1.0.34's import paths: ``metrics_reader_base``, ``system_metrics_reader``,
  ``algorithm_metrics_reader``, ``system_profiler_file_parser``, ``trace_event_file_parser``,
  ``utils``, ``python_profile_utils`` and ``analysis`` (its pandas and Python-profile analysis).

pyproject.toml's import-linter contracts keep the rooms' order, lowest first: locations (the
format's names) < recording < reading < 1.0.34's paths < trial < views.
"""

from smdebug.profiler.recording.config import ProfilerConfig, ProfilingRange
from smdebug.profiler.recording.python_profiler import PythonProfiling
from smdebug.profiler.recording.session import Profiler, profiler_for_hook, step_phase
from smdebug.profiler.recording.system import HostSampler, SystemMetricsSampler
from smdebug.profiler.recording.timeline import TimelineWriter

__all__ = [
    "ProfilerConfig",
    "ProfilingRange",
    "Profiler",
    "profiler_for_hook",
    "step_phase",
    "SystemMetricsSampler",
    "HostSampler",
    "TimelineWriter",
    "PythonProfiling",
]
