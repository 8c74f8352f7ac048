"""Profiler: one recording session — system metrics, framework events and Python profiling.

A framework hook makes one and reports its events; it works alone too::

    from smdebug.profiler import Profiler, ProfilerConfig

    with Profiler(ProfilerConfig(local_path="/tmp/prof", interval_millis=100)) as prof:
        for step, batch in enumerate(data):
            prof.step_start("train", step)
            train_step(batch)
        # close() ends the last step, stops the sampler, writes training_job_end.ts

Step events are ``Step:ModeKeys.<MODE>`` (name = phase, ``args`` = ``{"pid", "step_num"}`` with the
step as a string, as 1.0.34's hooks wrote them); a step lasts until the next one starts or
:meth:`step_end`. Other events: :meth:`record` (any phase and name). Every public method follows
the hooks' error policy: an error is logged once and disables the profiler (training goes on),
unless errors propagate (``$SMDEBUG_PROPAGATE_ERRORS=1``).
"""

from __future__ import annotations

import atexit
import functools
import logging
import os
import tempfile
import threading
import weakref
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any, Literal

from smdebug.core.engine.guard import guarded, propagate_default
from smdebug.exceptions import SMDebugValueError
from smdebug.modes import ModeKeys
from smdebug.profiler.locations import END_MARKER, framework_node_id, system_node_id
from smdebug.profiler.recording.config import ProfilerConfig
from smdebug.profiler.recording.timeline import TimelineWriter, now_us

if TYPE_CHECKING:
    from smdebug.profiler.recording.gpu import GpuSampler
    from smdebug.profiler.recording.python_profiler import PythonProfiling
    from smdebug.profiler.recording.system import SystemMetricsSampler
    from smdebug.profiler.recording.upload import RemoteUpload

__all__ = ["Profiler", "step_phase", "profiler_for_hook"]

logger = logging.getLogger("smdebug")


def _mode_name(mode: ModeKeys | str) -> str:
    """'TRAIN' for ModeKeys.TRAIN, 'train' or 'TRAIN'."""
    return (getattr(mode, "name", None) or str(mode)).upper()


def step_phase(mode: ModeKeys | str) -> str:
    return f"Step:ModeKeys.{_mode_name(mode)}"


def _close_at_exit(ref: weakref.ref[Profiler]) -> None:
    """A profiler left open is closed when the interpreter exits (its timeline finished, renamed)."""
    prof = ref()
    if prof is not None:
        prof.close()


def _register_exit(ref: weakref.ref[Profiler], remote: bool) -> None:
    """Close the profiler at exit. A remote root uploads then, through asyncio and thread pools,
    which refuse new work once the interpreter's atexit handlers run ("cannot schedule new
    futures after interpreter shutdown"): such a profiler closes at threading's exit instead
    (``threading._register_atexit``, run before thread pools shut down)."""
    if remote and hasattr(threading, "_register_atexit"):
        threading._register_atexit(_close_at_exit, ref)
    else:
        atexit.register(_close_at_exit, ref)


def _local_rank() -> int:
    for var in ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"):
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return 0


class Profiler:
    """``config``: a ProfilerConfig (None: read $SMPROFILER_CONFIG_PATH or SageMaker's file; an
    error if there is none). ``out_dir``: where to write when the config names no ``local_path``
    (``<out_dir>/profiler``). Either may be an ``s3://`` URL: the files are then written to a local
    staging folder (:attr:`root`) and uploaded as each is finished (see profiler.upload), under the
    same keys as in a local folder; :attr:`url` names the destination. ``framework``: the folder of Python stats. ``rank``: the distributed
    rank naming framework files (None: the process id). ``system_metrics``: None samples on local
    rank 0 only (one sampler a node)."""

    def __init__(
        self,
        config: ProfilerConfig | None = None,
        out_dir: str | None = None,
        framework: str = "python",
        rank: int | None = None,
        system_metrics: bool | None = None,
        gpus: GpuSampler | Literal["auto"] | None = "auto",
    ):
        if config is None:
            config = ProfilerConfig.load()
            if config is None:
                raise SMDebugValueError("Profiler(): no config given and no profiler config file found")
        if not isinstance(config, ProfilerConfig):
            raise SMDebugValueError(f"Profiler(config={config!r}): config must be a ProfilerConfig")
        root = config.local_path or (os.path.join(str(out_dir), "profiler") if out_dir is not None else None)
        if root is None:
            raise SMDebugValueError("Profiler(): give ProfilerConfig(local_path=...) or out_dir")
        self.upload: RemoteUpload | None = None  # when the root is a URL (s3://...)
        if "://" in root and not root.startswith("file://"):
            from smdebug.profiler.recording.upload import RemoteUpload
            from smdebug.storage import open_store

            store = open_store(root)  # the debug hook's storage layer: a clear error for a bad URL
            self.upload = RemoteUpload(store, tempfile.mkdtemp(prefix="smdebug-profiler-"))
            self.url = store.url
            self.root = self.upload.staging  # written as a local root, uploaded file by file
        else:
            root = root[len("file://") :] if root.startswith("file://") else root
            self.root = os.path.abspath(os.path.expanduser(root))
            self.url = self.root
        self.config = config
        self.framework = framework
        self.disabled = False
        self.propagate_errors = propagate_default()
        self.node_id = framework_node_id(rank)
        self.pid = os.getpid()
        self._closed = False
        self._step: tuple[str, int, int] | None = None  # (phase, step, start_us) of the open step
        # key -> (phase, name, start_us, args) of open spans
        self._spans: dict[Hashable, tuple[str, str, int, dict[str, Any] | None]] = {}
        self.timeline: TimelineWriter | None = None
        if config.framework_metrics and not config.disabled:
            self.timeline = TimelineWriter(
                self.root,
                self.node_id,
                config.rotate_max_file_size,
                config.rotate_close_interval_s,
                config.file_open_fail_threshold,
                on_file=self.file_done,
            )
        self.python: PythonProfiling | None = None
        if config.python is not None and not config.disabled:
            from smdebug.profiler.recording.python_profiler import PythonProfiling

            self.python = PythonProfiling(
                self.root,
                framework,
                self.node_id,
                config.python_profiler,
                config.cprofile_timer,
                on_file=self.file_done,
            )
        self.system: SystemMetricsSampler | None = None
        if system_metrics is None:
            system_metrics = config.system_metrics and _local_rank() == 0
        if system_metrics and not config.disabled:
            from smdebug.profiler.recording.system import SystemMetricsSampler

            self.system = SystemMetricsSampler(
                self.root, config.interval_millis, system_node_id(), gpus=gpus, on_file=self.file_done
            ).start()
        _register_exit(weakref.ref(self), remote=self.upload is not None)
        if self.upload is not None:
            logger.info("smdebug: profiler: recording to %s (staged in %s)", self.url, self.root)
        else:
            logger.info("smdebug: profiler: recording to %s", self.root)

    def file_done(self, path: str) -> None:
        """A part finished the file ``path`` under :attr:`root`: with a remote root it is uploaded
        now (in the background) under the same key."""
        if self.upload is not None:
            self.upload.submit(path)

    def __enter__(self) -> Profiler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ events
    @property
    def recording(self) -> bool:
        return not self.disabled and not self._closed and self.timeline is not None

    @guarded()
    def step_start(self, mode: ModeKeys | str, step: int, start_us: int | None = None) -> None:
        """Step ``step`` of ``mode`` starts (at ``start_us``, default now); the open step ends there."""
        if self._closed:
            return
        t = now_us() if start_us is None else start_us
        if self._step is not None:
            self._end_step(t)
        self._step = (step_phase(mode), step, t)
        if self.python is not None and self.config.python is not None:  # (the one makes the other)
            in_range = self.config.python.has_step(step, t / 1e6)
            self.python.boundary(_mode_name(mode).lower(), step, "stepstart", in_range)

    @guarded()
    def step_end(self, end_us: int | None = None) -> None:
        """The open step ends (at ``end_us``, default now); nothing if no step is open."""
        if self._closed:
            return
        if self._step is not None:
            self._end_step(now_us() if end_us is None else end_us)

    @guarded()
    def phase_boundary(self, phase: str) -> None:
        """A point inside the step where Python profiling restarts (``forwardpassend``)."""
        if self.python is not None and self._step is not None:
            _, step, _ = self._step
            mode = self._step[0].rsplit(".", 1)[-1].lower()
            self.python.boundary(mode, step, phase, self.python.running)

    def _end_step(self, t: int) -> None:
        if self._step is None:
            return
        phase, step, start = self._step
        self._step = None
        if self.python is not None:  # first: the profile does not hold the profiler's own writing
            self.python.boundary(phase.rsplit(".", 1)[-1].lower(), step, "stepend", False)
        if self.timeline is not None:
            self.timeline.complete(phase, phase, start, t, {"pid": self.pid, "step_num": str(step)})

    @guarded()
    def span_start(
        self, key: Hashable, phase: str, name: str, args: dict[str, Any] | None = None, start_us: int | None = None
    ) -> None:
        """Open an event (e.g. an epoch) that :meth:`span_end` with the same ``key`` closes."""
        if self._closed:
            return
        self._spans[key] = (phase, name, now_us() if start_us is None else start_us, args)

    @guarded()
    def span_end(self, key: Hashable, end_us: int | None = None) -> None:
        span = self._spans.pop(key, None)
        if span is not None and self.timeline is not None:
            phase, name, start, args = span
            self.timeline.complete(
                phase, name, start, now_us() if end_us is None else end_us, {"pid": self.pid, **(args or {})}
            )

    @property
    def current_step(self) -> tuple[str, int] | None:
        """(mode phase, step) of the open step, or None."""
        return None if self._step is None else (self._step[0], self._step[1])

    @guarded()
    def record(self, phase: str, name: str, start_us: int, end_us: int, args: dict[str, Any] | None = None) -> None:
        """An event of ``phase`` named ``name`` from ``start_us`` to ``end_us`` (µs since the epoch);
        ``args`` gets this process's ``pid`` and the open step's ``step_num`` unless given."""
        if self.timeline is None:
            return
        a: dict[str, Any] = {"pid": self.pid}
        if self._step is not None:
            a["step_num"] = str(self._step[1])
        if args:
            a.update(args)
        self.timeline.complete(phase, name, start_us, end_us, a)

    def dataloader_wanted(self, metric: str) -> bool:
        """Whether a data-loader event named ``metric`` is recorded at the next step (all of them
        when no DataloaderProfilingConfig is given)."""
        rng = self.config.dataloader
        if self.timeline is None or self.disabled:
            return False
        if rng is None:
            return True
        nxt = self._step[1] + 1 if self._step is not None else 0
        return rng.has_step(nxt, now_us() / 1e6) and self.config.dataloader_metric_wanted(metric)

    # ------------------------------------------------------------------ end
    def close(self) -> None:
        """End the open step, stop the sampler and Python profiling, close the timeline and write
        ``system/training_job_end.ts`` and ``framework/training_job_end.ts`` (with a remote root:
        after the last upload)."""
        if self._closed:
            return
        self._closed = True
        parts: list[tuple[str, Callable[[], object]]] = []
        if self._step is not None and not self.disabled:
            parts.append(("the last step", lambda: self._end_step(now_us())))
        for key in list(self._spans) if not self.disabled else ():
            parts.append((f"span {key}", functools.partial(self.span_end, key)))
        if self.python is not None:
            parts.append((type(self.python).__name__, self.python.close))
        if self.system is not None:
            parts.append((type(self.system).__name__, self.system.stop))
        if self.timeline is not None:
            parts.append((type(self.timeline).__name__, self.timeline.close))
        parts.append(("the end markers", self._write_end_markers))
        for what, fn in parts:
            try:
                fn()
            except Exception:
                if self.propagate_errors:
                    raise
                logger.exception("smdebug: profiler: closing %s failed", what)

    def _write_end_markers(self) -> None:
        if self.upload is not None:  # after every other upload: an end marker means all data is there
            self.upload.close([f"{sub}/{END_MARKER}" for sub in ("system", "framework")])
            return
        for sub in ("system", "framework"):
            os.makedirs(os.path.join(self.root, sub), exist_ok=True)
            open(os.path.join(self.root, sub, END_MARKER), "w").close()


def profiler_for_hook(
    config: ProfilerConfig | dict[str, Any] | None, out_dir: str, framework: str, rank: int | None = None
) -> Profiler | None:
    """A hook's Profiler: ``config``, else the profiler config file ($SMPROFILER_CONFIG_PATH or
    SageMaker's); None when neither asks for profiling (then nothing is recorded)."""
    if config is None:
        config = ProfilerConfig.load()
    elif isinstance(config, dict):  # SageMaker's JSON as a dict
        config = ProfilerConfig.from_dict(config, source="profiler_config")
    elif not isinstance(config, ProfilerConfig):
        from smdebug.exceptions import SMDebugTypeError

        raise SMDebugTypeError(
            f"profiler_config={config!r} must be a smdebug.profiler.ProfilerConfig or a "
            "ProfilerConfig dict (SageMaker's JSON), not a " + type(config).__name__
        )
    if config is None or config.disabled:
        return None
    return Profiler(config, out_dir=out_dir, framework=framework, rank=rank)
