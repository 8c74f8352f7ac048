"""SystemMetricsSampler: host (and GPU) metrics every ``interval_ms``, on its own thread, in the
layout SageMaker's profiler agent wrote and 1.0.34's ``SystemMetricsReader`` reads.

``<root>/system/incremental/<YYYYMMDDHH>/<minute_s>.algo-<n>.json``, JSON Lines, one row per metric
per sample, every row of a sample with the same timestamp (epoch seconds)::

    {"Type":"cpu","Name":"cpu0","Dimension":"CPUUtilization","Value":4.76,"NodeId":"algo-1","Timestamp":1591160699.457}

Rows (units as SageMaker's): ``cpu``/``cpu<i>``: ``CPUUtilization`` and ``I/OWaitPercentage`` (% of that
core); ``memory``/``MemoryUsedPercent`` (% of host RAM); ``i/o``/``IOPS`` (operations/s),
``ReadThroughputInBytesPerSecond``, ``WriteThroughputInBytesPerSecond``; ``network``/
``ReceiveBytesPerSecond``, ``TransmitBytesPerSecond`` (dimension ``Algorithm``); ``gpu``/``gpu<i>``:
``GPUUtilization``, ``GPUMemoryUtilization`` (only where NVML sees a GPU, see profiler.gpu); ``job``/
``cpu`` ``JobCPUDemand``, ``JobCPUUtilization`` and ``job``/``memory`` ``JobMemoryUsedPercent``: the
job's own processes (Linux, see profiler.job_metrics).
Rates and percentages cover the time since the previous sample. The thread wakes on a fixed
schedule (``start + k * interval``), so samples do not drift; a tick missed because the machine
was busy is skipped, not made up.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, BinaryIO, Literal, Protocol

import orjson

from smdebug.profiler.locations import system_file

if TYPE_CHECKING:
    from smdebug.profiler.recording.gpu import GpuSampler
    from smdebug.profiler.recording.job_metrics import JobSampler

__all__ = ["HostSampler", "SystemMetricsSampler"]

logger = logging.getLogger("smdebug")
MAX_FAILURES = 3
Row = tuple[str, str, str, float]  # (Type, Name, Dimension, Value) of one metric


class Psutil(Protocol):
    """What is used of psutil (the module, or a stand-in with its functions); the counters are
    psutil's named tuples."""

    def cpu_times(self, percpu: bool) -> Any: ...
    def disk_io_counters(self, perdisk: bool) -> Any: ...
    def net_io_counters(self, pernic: bool) -> Any: ...
    def virtual_memory(self) -> Any: ...


class HostSampler:
    """CPU per core, memory, disk and network through psutil; ``rows()`` covers the time since the
    previous call (the first call primes the counters and returns the memory row only)."""

    def __init__(self, psutil_module: Psutil | None = None):
        if psutil_module is None:
            try:
                import psutil
            except ImportError:
                from smdebug.exceptions import MissingDependency

                raise MissingDependency("psutil", "profiler", "for system metrics") from None
            psutil_module = psutil
        self.ps = psutil_module
        self._cpu: list[Any] = []  # psutil's counters at the previous call
        self._disk: Any = None
        self._net: Any = None
        self._t: float | None = None

    @staticmethod
    def _cpu_fractions(before: Any, after: Any) -> tuple[float, float]:  # psutil's scputimes
        def total(t: Any) -> float:
            d: dict[str, float] = t._asdict()
            return sum(d.values()) - d.get("guest", 0.0) - d.get("guest_nice", 0.0)

        span = total(after) - total(before)
        if span <= 0:
            return 0.0, 0.0
        idle = after.idle - before.idle
        iowait = getattr(after, "iowait", 0.0) - getattr(before, "iowait", 0.0)
        busy = span - idle - iowait
        return max(0.0, min(100.0, 100.0 * busy / span)), max(0.0, min(100.0, 100.0 * iowait / span))

    def rows(self, now: float) -> list[Row]:
        ps = self.ps
        cpu = ps.cpu_times(percpu=True)
        disk = ps.disk_io_counters(perdisk=False)
        net = ps.net_io_counters(pernic=False)
        out: list[Row] = []
        if self._t is not None and now > self._t:
            dt = now - self._t
            for i, (b, a) in enumerate(zip(self._cpu, cpu)):
                util, iowait = self._cpu_fractions(b, a)
                out.append(("cpu", f"cpu{i}", "CPUUtilization", util))
                out.append(("cpu", f"cpu{i}", "I/OWaitPercentage", iowait))
            if disk is not None and self._disk is not None:
                ops = (disk.read_count - self._disk.read_count) + (disk.write_count - self._disk.write_count)
                out.append(("i/o", "IOPS", "", max(0, ops) / dt))
                out.append(
                    ("i/o", "ReadThroughputInBytesPerSecond", "", max(0, disk.read_bytes - self._disk.read_bytes) / dt)
                )
                out.append(
                    (
                        "i/o",
                        "WriteThroughputInBytesPerSecond",
                        "",
                        max(0, disk.write_bytes - self._disk.write_bytes) / dt,
                    )
                )
            if net is not None and self._net is not None:
                out.append(
                    (
                        "network",
                        "ReceiveBytesPerSecond",
                        "Algorithm",
                        max(0, net.bytes_recv - self._net.bytes_recv) / dt,
                    )
                )
                out.append(
                    (
                        "network",
                        "TransmitBytesPerSecond",
                        "Algorithm",
                        max(0, net.bytes_sent - self._net.bytes_sent) / dt,
                    )
                )
        out.append(("memory", "MemoryUsedPercent", "", float(ps.virtual_memory().percent)))
        self._cpu, self._disk, self._net, self._t = cpu, disk, net, now
        return out


def format_rows(rows: list[Row], node_id: str, timestamp: float) -> bytes:
    """JSON lines of one sample (values with 2 decimals, as SageMaker's agent wrote them; the time
    to the microsecond: 16 digits, which the bulk reader reads in doubles on any platform,
    profiler/reading/system_bulk.py)."""
    timestamp = round(timestamp, 6)
    return b"".join(
        orjson.dumps(
            {"Type": t, "Name": n, "Dimension": d, "Value": round(v, 2), "NodeId": node_id, "Timestamp": timestamp}
        )
        + b"\n"
        for t, n, d, v in rows
    )


class SystemMetricsSampler:
    """Samples every ``interval_ms`` on a daemon thread until :meth:`stop`. ``gpus``: a
    profiler.gpu.GpuSampler, None for no GPU rows, or "auto" (NVML if it finds a GPU). ``job``: a
    profiler.job_metrics.JobSampler, None for no job rows, or "auto" (where the kernel gives them)."""

    def __init__(
        self,
        root: str,
        interval_ms: int = 500,
        node_id: str = "algo-1",
        gpus: GpuSampler | Literal["auto"] | None = "auto",
        host: HostSampler | None = None,
        on_file: Callable[[str], None] | None = None,
        job: JobSampler | Literal["auto"] | None = "auto",
    ):
        self.root = root
        self.on_file = on_file  # called with each finished minute file (the profiler uploads it)
        self.interval = interval_ms / 1000.0
        self.node_id = node_id
        self.host = host if host is not None else HostSampler()
        if gpus == "auto":
            from smdebug.profiler.recording.gpu import open_gpus

            gpus = open_gpus()
        self.gpus: GpuSampler | None = gpus
        if job == "auto":
            from smdebug.profiler.recording.job_metrics import open_job

            job = open_job(lookup_s=max(1.0, 5 * self.interval))
        self.job: JobSampler | None = job
        self.samples = 0
        self.rows_written = 0
        self.files: list[str] = []
        self._f: BinaryIO | None = None  # the minute file being written
        self._path = ""
        self._stop = threading.Event()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self.failed: BaseException | None = None

    def start(self) -> SystemMetricsSampler:
        now = time.time()
        self.host.rows(now)  # prime the counters: the first sample covers one interval
        if self.job is not None:
            self.job.rows(now)
        self._thread = threading.Thread(target=self._run, name="smdebug-system-metrics", daemon=True)
        self._thread.start()
        return self

    def wait_for_samples(self, n: int, timeout: float) -> bool:
        """Block until ``n`` samples are written (or the sampler stopped, or ``timeout``)."""
        with self._cond:
            return self._cond.wait_for(lambda: self.samples >= n or self._stop.is_set(), timeout)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._f is not None:
            self._f.close()
            self._f = None
            self._finished(self._path)
        if self.gpus is not None:
            self.gpus.close()
            self.gpus = None
        with self._cond:
            self._cond.notify_all()

    # ------------------------------------------------------------------ thread
    def _run(self) -> None:
        start = time.monotonic()
        k = 0
        failures = 0
        while True:
            k += 1
            delay = start + k * self.interval - time.monotonic()
            if delay < 0:  # late by more than a tick: skip to the next one on the schedule
                k += int(-delay / self.interval)
                delay = start + k * self.interval - time.monotonic()
            if self._stop.wait(max(0.0, delay)):
                return
            try:
                self.sample_once()
                failures = 0
            except Exception as exc:  # noqa: BLE001 - the sampler must never take training down
                failures += 1
                logger.warning("smdebug: profiler: a system-metrics sample failed: %s", exc)
                if failures >= MAX_FAILURES:
                    self.failed = exc
                    logger.error("smdebug: profiler: system metrics stopped after %d failures in a row", failures)
                    self._stop.set()
                    with self._cond:
                        self._cond.notify_all()
                    return

    def _finished(self, path: str) -> None:
        if self.on_file is not None:
            self.on_file(path)

    def sample_once(self) -> None:
        now = time.time()
        rows = self.host.rows(now)
        if self.job is not None:
            rows += self.job.rows(now)
        if self.gpus is not None:
            rows += self.gpus.rows()
        path = system_file(self.root, now, self.node_id)
        if path != self._path:
            if self._f is not None:
                self._f.close()
                self._f = None
                self._finished(self._path)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            self._f = open(path, "ab")  # noqa: SIM115 - one file a minute, kept open for the minute
            self._path = path
            self.files.append(path)
        f = self._f
        if f is None:  # stopped in this minute: its file is finished
            raise RuntimeError(f"SystemMetricsSampler({self.root}): sample_once() after stop()")
        f.write(format_rows(rows, self.node_id, now))
        f.flush()  # whole lines for a reader that tails the file
        with self._cond:
            self.samples += 1
            self.rows_written += len(rows)
            self._cond.notify_all()
