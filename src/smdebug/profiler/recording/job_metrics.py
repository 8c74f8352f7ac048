"""The profiled job's own CPU and memory, beside the host's (Linux).

Host rows (``cpu<i>`` ``CPUUtilization``, ``MemoryUsedPercent``) count every process on the node:
on a shared host they cannot tell a CPU-bound job from one whose neighbours keep the cores busy,
nor a leak from another process's allocations. These rows count the job only: the process that
records the profile and its descendants (DataLoader workers, for instance), and, under a launcher
that starts one process per local rank (``LOCAL_WORLD_SIZE`` > 1, as ``torchrun`` sets), the
launcher's tree, so that every rank of the node is counted::

    {"Type":"job","Name":"cpu","Dimension":"JobCPUDemand","Value":104.2,...}
    {"Type":"job","Name":"cpu","Dimension":"JobCPUUtilization","Value":13.1,...}
    {"Type":"job","Name":"memory","Dimension":"JobMemoryUsedPercent","Value":2.4,...}

* ``JobCPUDemand``: the time the job's threads ran **or waited for a core** (the kernel's per-task
  ``schedstat``), over the sample period, as % of the host's cores; above 100 when the job has
  more runnable threads than there are cores. A thread that is always runnable counts a whole
  core on a shared host as on a dedicated one, whether or not it got the core; a thread that
  works in short bursts reads higher on a busy host, each burst also waiting for a core (on a
  2-core VM at load average 4 to 7, a training job that slept 30 of each 36 ms step read 50 % on
  average, 3 % of its samples above 90 %).
* ``JobCPUUtilization``: the time they ran, % of the host's cores (what the job got).
* ``JobMemoryUsedPercent``: the job's memory, % of the host's RAM: the resident memory of the root
  process (every sample) plus the private resident memory of each descendant (``smaps_rollup``,
  read at each look-up, below). A forked worker shares its parent's pages until it writes them: its private
  memory counts what it added, so the shared pages count once.

The descendants are looked up every ``lookup_s`` (the sampler: every 5 samples, at least 1 s
apart; a scan of ``/proc``, 1.4 ms of CPU with 150 processes on the host, plus its private memory
for each descendant); a process started since is counted from the next look, a process that
ended up to the last sample that saw it. Reading the run and wait times costs about 0.1 ms a
sample for a handful of threads. Where the kernel has no ``/proc/<pid>/task/<tid>/schedstat``
(not Linux) there are no job rows: :func:`open_job` says why and returns None.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable

__all__ = ["JobSampler", "open_job", "job_root_pid"]

logger = logging.getLogger("smdebug")


def job_root_pid() -> int:
    """The process whose tree is the job: this one, or its parent when a launcher started one
    process per local rank (``LOCAL_WORLD_SIZE`` > 1)."""
    size = os.environ.get("LOCAL_WORLD_SIZE", "")
    if size.isdigit() and int(size) > 1:
        return os.getppid()
    return os.getpid()


class JobSampler:
    """``rows(now)``: the job rows of the time since the previous call (the first call primes the
    CPU counters and returns the memory row only). ``proc``: the proc file system's mount point;
    ``children``: ``pid -> descendant pids`` (default psutil's); ``lookup_s``: how often the
    descendants are looked up."""

    def __init__(
        self,
        root_pid: int | None = None,
        proc: str = "/proc",
        children: Callable[[int], list[int]] | None = None,
        lookup_s: float = 1.0,
    ):
        self.root_pid = root_pid if root_pid is not None else job_root_pid()
        self.proc = proc
        self.lookup_s = lookup_s
        self._children = children or _psutil_descendants
        self.cores = os.cpu_count() or 1
        self.ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        self.page = os.sysconf("SC_PAGE_SIZE")
        self._pids = [self.root_pid]
        self._pids_at = float("-inf")
        self._private = 0  # bytes: the descendants' private resident memory at the last look
        self._tasks: dict[tuple[int, str], tuple[int, int]] = {}  # (pid, tid) -> (run ns, wait ns) at the previous call
        self._t: float | None = None

    def _job_pids(self) -> list[int]:
        now = time.monotonic()
        if now - self._pids_at >= self.lookup_s:
            self._pids = [self.root_pid, *self._children(self.root_pid)]
            self._pids_at = now
            self._private = sum(self._private_bytes(pid) for pid in self._pids[1:])
        return self._pids

    def _private_bytes(self, pid: int) -> int:
        text = self._read(f"{self.proc}/{pid}/smaps_rollup") or ""
        kb = 0
        for line in text.splitlines():
            if line.startswith(("Private_Clean:", "Private_Dirty:")):
                kb += int(line.split()[1])
        return kb * 1024

    def _read(self, path: str) -> str | None:
        try:
            with open(path) as f:
                return f.read()
        except (FileNotFoundError, ProcessLookupError, PermissionError):  # ended, or not ours to read
            return None

    def rows(self, now: float) -> list[tuple[str, str, str, float]]:
        tasks: dict[tuple[int, str], tuple[int, int]] = {}
        pids = self._job_pids()
        statm = self._read(f"{self.proc}/{self.root_pid}/statm")
        resident = self._private + (int(statm.split()[1]) * self.page if statm else 0)
        for pid in pids:
            try:
                tids = os.listdir(f"{self.proc}/{pid}/task")
            except FileNotFoundError:
                continue
            for tid in tids:
                text = self._read(f"{self.proc}/{pid}/task/{tid}/schedstat")
                if text:
                    run_ns, wait_ns = text.split()[:2]
                    tasks[(pid, tid)] = (int(run_ns), int(wait_ns))
        out: list[tuple[str, str, str, float]] = []
        if self._t is not None and now > self._t:
            ran = waited = 0
            for key, (run, wait) in tasks.items():
                before = self._tasks.get(key)
                if before is not None:  # a task seen for the first time counts from the next sample
                    ran += max(0, run - before[0])
                    waited += max(0, wait - before[1])
            span_ns = (now - self._t) * 1e9 * self.cores
            out.append(("job", "cpu", "JobCPUDemand", 100.0 * (ran + waited) / span_ns))
            out.append(("job", "cpu", "JobCPUUtilization", min(100.0, 100.0 * ran / span_ns)))
        out.append(("job", "memory", "JobMemoryUsedPercent", min(100.0, 100.0 * resident / self.ram)))
        self._tasks, self._t = tasks, now
        return out


def _psutil_descendants(pid: int) -> list[int]:
    import psutil

    try:
        return [p.pid for p in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return []


def open_job(proc: str = "/proc", lookup_s: float = 1.0) -> JobSampler | None:
    """A JobSampler for this job, or None (the reason logged once) where the kernel does not give
    per-task run and wait times."""
    pid = os.getpid()
    if not os.path.exists(f"{proc}/{pid}/task/{pid}/schedstat"):
        logger.info(
            "smdebug: profiler: no job CPU and memory rows: %s/<pid>/task/<tid>/schedstat is not "
            "there (not Linux); the profiler rules read the host's rows instead",
            proc,
        )
        return None
    return JobSampler(proc=proc, lookup_s=lookup_s)
