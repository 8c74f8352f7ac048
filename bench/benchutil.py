"""Shared by the hook benchmarks: the machine they ran on, and CPU time per thread.

On a shared machine wall-clock ratios move with other people's load; CPU time (of a thread, of
the process) does not wait for a core, so the benchmarks print both, and the machine beside them.
"""

from __future__ import annotations

import contextlib
import cProfile
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator


def machine() -> str:
    """``lscpu``'s model name and CPU count, and the load average now."""
    model = cores = "?"
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
        for line in out.splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "Model name":
                model = value.strip()
            elif key.strip() == "CPU(s)":
                cores = value.strip()
    except OSError:
        pass
    return f"{model}, {cores} cores, load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}"


def thread_cpu() -> dict[str, float]:
    """CPU seconds of every thread of this process, summed by thread name: Python threads by
    their ``threading`` name (``MainThread``, the hook's writer), native ones (TensorFlow's,
    MXNet's engine, XGBoost's) by their kernel name. From ``/proc/self/task/*/schedstat``
    (nanoseconds); empty where /proc has no such file."""
    py_names = {t.native_id: t.name for t in threading.enumerate()}
    out: dict[str, float] = {}
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                ns = int(f.read().split()[0])
            name = py_names.get(int(tid))
            if name is None:
                with open(f"/proc/self/task/{tid}/comm") as f:
                    name = f.read().strip()
        except (OSError, ValueError, IndexError):
            continue  # the thread ended while we looked
        out[name] = out.get(name, 0.0) + ns / 1e9
    return out


class CpuClock:
    """Wall clock, the calling thread's CPU, the process's CPU and each thread's, from start()."""

    def start(self) -> None:
        self._wall, self._thread = time.perf_counter(), time.thread_time()
        self._proc, self._threads = time.process_time(), thread_cpu()

    def stop(self) -> dict:
        """``{"wall_s", "thread_cpu_s", "proc_cpu_s", "threads_cpu_s": {name: s}}`` since start();
        the CPU time of threads that ended in between is ``threads_cpu_s["(ended threads)"]``."""
        after, proc = thread_cpu(), time.process_time() - self._proc
        threads = {k: v - self._threads.get(k, 0.0) for k, v in after.items() if v - self._threads.get(k, 0.0) > 0}
        ended = proc - sum(threads.values())  # threads that ended before stop() (a writer after close())
        if ended > 1e-3 * proc:
            threads["(ended threads)"] = ended
        return {
            "wall_s": time.perf_counter() - self._wall,
            "thread_cpu_s": time.thread_time() - self._thread,
            "proc_cpu_s": proc,
            "threads_cpu_s": threads,
        }


def median_threads(runs: list[dict]) -> dict[str, float]:
    """The median over ``runs`` of each thread's CPU seconds (0 in a run where it did not run)."""
    names = sorted({n for r in runs for n in r})
    return {n: statistics.median(r.get(n, 0.0) for r in runs) for n in names}


@contextlib.contextmanager
def maybe_profiled() -> Iterator[None]:
    """cProfile of the calling thread inside the block when SMDEBUG_BENCH_PROFILE names a file
    (the stats are dumped there: ``python -m pstats FILE``); nothing otherwise. Its clock is the
    thread's CPU time, not wall clock: waiting (for a core, for the framework's threads) costs
    nothing, as it costs no CPU, so the profile holds on a loaded machine."""
    path = os.environ.get("SMDEBUG_BENCH_PROFILE")
    if not path:
        yield
        return
    prof = cProfile.Profile(time.thread_time)
    prof.enable()
    try:
        yield
    finally:
        prof.disable()
        prof.dump_stats(path)


def alternate(child: str, args: list[str], configs: tuple[str, str], rounds: int, env: dict) -> dict[str, list]:
    """``python -c child CONFIG *args`` for each of two configurations, ``rounds`` times each in
    fresh processes, the one that goes first alternating; each run's last line of output read as
    JSON. A run that fails stops the benchmark with its error."""
    runs: dict[str, list] = {c: [] for c in configs}
    for r in range(rounds):
        for cfg in configs if r % 2 == 0 else configs[::-1]:
            p = subprocess.run(
                [sys.executable, "-c", child, cfg, *args], env=env, capture_output=True, text=True, check=False
            )
            if p.returncode:
                raise SystemExit(f"{cfg} failed:\n{p.stderr[-2000:]}")
            runs[cfg].append(json.loads(p.stdout.strip().splitlines()[-1]))
    return runs


class EntryTimes:
    """The CPU time (``time.thread_time``) and wall time of the calls of functions wrapped by
    :meth:`timed`, per label: where a step's time goes, entry point by entry point."""

    def __init__(self) -> None:
        self.acc: dict[str, list[int]] = {}  # label -> [CPU ns, wall ns, calls]

    def timed(self, label: str, fn):
        def wrapper(*a, **k):
            c0, w0 = time.thread_time_ns(), time.perf_counter_ns()
            try:
                return fn(*a, **k)
            finally:
                c = self.acc.setdefault(label, [0, 0, 0])
                c[0] += time.thread_time_ns() - c0
                c[1] += time.perf_counter_ns() - w0
                c[2] += 1

        return wrapper

    def per_step(self, steps: int) -> dict[str, list[float]]:
        """``{label: [CPU µs, wall µs, calls]}`` per step."""
        return {k: [c / steps / 1e3, w / steps / 1e3, n / steps] for k, (c, w, n) in self.acc.items()}
