"""Python profiling (cProfile, or pyinstrument when installed) of the configured steps, in 1.0.34's layout.

Each profiled interval is one folder
``<root>/framework/<framework>/<cprofile|pyinstrument>/<node>/<start>_<end>/`` where ``start`` and
``end`` are ``<mode>-<step>-<phase>-<time_us>`` (mode ``train|eval|predict|global``, phase
``stepstart|forwardpassend|stepend``), holding ``python_stats`` (cProfile: a ``pstats`` dump) or
``python_stats.json`` and ``python_stats.html`` (pyinstrument). The profiler is stopped at every
step boundary the framework glue reports and started again only if the step is in the configured
range, so steps outside it cost nothing. (1.0.34 also profiled from import to step 0 and after
``hook.close()``; we profile the configured steps only.)

``cProfileTimer``: ``total_time`` (wall clock), ``cpu_time`` (process CPU time), ``off_cpu_time``
(wall minus CPU); ``default`` is taken as ``total_time`` (1.0.34 cycled the three over steps).
"""

from __future__ import annotations

import cProfile
import logging
import os
import time
from collections.abc import Callable

from smdebug.profiler.locations import python_stats_dir

__all__ = ["PythonProfiling", "boundary_label"]

logger = logging.getLogger("smdebug")


def _timer(name: str) -> Callable[[], float]:
    if name == "cpu_time":
        return time.process_time
    if name == "off_cpu_time":
        return lambda: time.perf_counter() - time.process_time()
    return time.perf_counter


def boundary_label(mode: str, step: int | str, phase: str, time_us: float) -> str:
    return f"{mode}-{step}-{phase}-{time_us}"


class _CProfile:
    name = "cprofile"

    def __init__(self, timer: str):
        self.prof = cProfile.Profile(_timer(timer))
        self.prof.enable()

    def stop(self, folder: str) -> None:
        self.prof.disable()
        self.prof.dump_stats(os.path.join(folder, "python_stats"))


class _Pyinstrument:
    name = "pyinstrument"

    def __init__(self, timer: str):
        from pyinstrument import Profiler

        self.prof = Profiler()
        self.prof.start()

    def stop(self, folder: str) -> None:
        from pyinstrument.renderers import HTMLRenderer, JSONRenderer

        session = self.prof.stop()
        with open(os.path.join(folder, "python_stats.json"), "w", encoding="utf-8") as f:
            f.write(JSONRenderer().render(session))
        with open(os.path.join(folder, "python_stats.html"), "w", encoding="utf-8") as f:
            f.write(HTMLRenderer().render(session))


class PythonProfiling:
    """Starts and stops the Python profiler at step boundaries (``boundary``)."""

    def __init__(
        self,
        root: str,
        framework: str,
        node_id: str,
        profiler: str = "cprofile",
        timer: str = "total_time",
        on_file: Callable[[str], None] | None = None,
    ):
        if profiler == "pyinstrument":
            try:
                import pyinstrument  # noqa: F401
            except ImportError:
                from smdebug.exceptions import MissingDependency

                raise MissingDependency(
                    "pyinstrument", "profiler", "for PythonProfilingConfig.ProfilerName='pyinstrument'"
                ) from None
        self.root = root
        self.framework = framework
        self.node_id = node_id
        self.kind: type[_CProfile | _Pyinstrument] = _Pyinstrument if profiler == "pyinstrument" else _CProfile
        self.timer = timer
        self.on_file = on_file  # called with each stats file written (the profiler uploads it)
        self._running: _CProfile | _Pyinstrument | None = None
        self._start_label = ""
        self.folders: list[str] = []

    @property
    def running(self) -> bool:
        return self._running is not None

    def boundary(self, mode: str, step: int, phase: str, profile_next: bool) -> None:
        """A step boundary: stop (and save) the current interval; start the next one if wanted."""
        label = boundary_label(mode, step, phase, time.time() * 1e6)
        self._stop(label)
        if profile_next:
            try:
                self._running = self.kind(self.timer)
            except ValueError as exc:  # another profiler holds the interpreter's profiling hook
                logger.warning("smdebug: profiler: python profiling of %s step %s is skipped: %s", mode, step, exc)
                return
            self._start_label = label

    def _stop(self, end_label: str) -> None:
        running, self._running = self._running, None
        if running is None:
            return
        folder = python_stats_dir(self.root, self.framework, running.name, self.node_id, self._start_label, end_label)
        os.makedirs(folder, exist_ok=True)
        running.stop(folder)
        self.folders.append(folder)
        if self.on_file is not None:
            for name in sorted(os.listdir(folder)):
                self.on_file(os.path.join(folder, name))

    def close(self, mode: str = "global", step: int | str = "*") -> None:
        self._stop(boundary_label(mode, step, "end", time.time() * 1e6))
