"""The profiler, part 1: record system metrics, framework events and Python profiles in smdebug
1.0.34's profiler layout (see profiler.locations), so that 1.0.34's readers and ours read them.

* :class:`ProfilerConfig` — SageMaker's ProfilerConfig JSON (``$SMPROFILER_CONFIG_PATH`` or
  ``/opt/ml/input/config/profilerconfig.json``) or keyword arguments.
* :class:`Profiler` — one recording session; the framework hooks report steps and events to it.
* :class:`SystemMetricsSampler`, :class:`TimelineWriter`, :class:`PythonProfiling` — its parts;
  profiler.upload.RemoteUpload sends their finished files to an ``s3://`` root through
  smdebug.storage.

Written against smdebug.core and the standard library only: no framework imports here (the
framework glue lives in smdebug.<framework>).
"""

from smdebug.profiler.config import ProfilerConfig, ProfilingRange
from smdebug.profiler.python_profiler import PythonProfiling
from smdebug.profiler.session import Profiler, profiler_for_hook, step_phase
from smdebug.profiler.system import HostSampler, SystemMetricsSampler
from smdebug.profiler.timeline import TimelineWriter

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
