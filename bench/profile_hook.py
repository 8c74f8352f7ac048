"""Where the hook's time goes, with measures that hold on a loaded machine: CPU time per thread
(training, writer, copy threads) and each thread's voluntary context switches per step (times it
blocked: waiting for the GIL, a lock or a queue), and what the training thread does in one step
(Python calls by cProfile, torch ops by torch.profiler). With ``--calls``: Python calls per step
of every thread (cProfile in each thread from its start; slower, so no CPU times then).

usage: PYTHONPATH=src python bench/profile_hook.py CONFIG [STEPS] [--calls]   CONFIG: none | raw | reductions
Same model and hook as bench/hook_workload.py (MLP 256-512-512-512-10, batch 128, 1 thread).
"""

from __future__ import annotations

import cProfile
import logging
import pstats
import sys
import tempfile
import threading
import time

logging.disable(logging.CRITICAL)
import torch  # noqa: E402

from hook_workload import build  # noqa: E402


def thread_cpu() -> dict:
    out = {}
    for t in threading.enumerate():
        try:
            out[t.name] = time.clock_gettime(time.pthread_getcpuclockid(t.ident))
        except (OSError, TypeError):
            pass
    return out


def thread_waits() -> dict:
    """Voluntary context switches of each thread so far (Linux; empty elsewhere)."""
    out = {}
    for t in threading.enumerate():
        try:
            with open(f"/proc/self/task/{t.native_id}/status") as f:
                status = f.read()
        except (OSError, TypeError):
            continue
        out[t.name] = int(status.split("voluntary_ctxt_switches:")[1].split()[0])
    return out


_PROFILES: dict = {}


def _profile_threads() -> None:
    """cProfile in every thread started from now on, from its start (--calls)."""
    run = threading.Thread.run

    def profiled(self):
        prof = _PROFILES[self.name] = cProfile.Profile()
        prof.enable()
        try:
            run(self)
        finally:
            prof.disable()

    threading.Thread.run = profiled


def main() -> None:
    config = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2] != "--calls" else 200
    calls = "--calls" in sys.argv
    if calls:
        _profile_threads()
    step, hook = build(config, tempfile.mkdtemp(prefix="smdebug-prof-"))
    for _ in range(20):
        step()
    if calls:
        main_prof = _PROFILES["MainThread"] = cProfile.Profile()
        main_prof.enable()
        for _ in range(steps):
            step()
        main_prof.disable()
        if hook is not None:
            hook.close()  # the hook's threads end: their profiles are complete
        print(
            f"{config}: Python calls per step by thread (cProfile; the hook's threads from their start, "
            f"{steps} + 20 warm-up steps)"
        )
        for name, prof in _PROFILES.items():
            n = steps if name == "MainThread" else steps + 20
            print(f"  {name:<24}{pstats.Stats(prof).total_calls / n:8.0f}")
        return
    before, waits, t0 = thread_cpu(), thread_waits(), time.perf_counter()
    for _ in range(steps):
        step()
    if hook is not None:
        hook.flush() if hasattr(hook, "flush") else None
    after, waits_after, wall = thread_cpu(), thread_waits(), time.perf_counter() - t0
    print(f"{config}: wall {wall / steps * 1e3:.2f} ms/step (machine load makes this noisy)")
    for name in after:
        d = after[name] - before.get(name, 0.0)
        w = waits_after.get(name, 0) - waits.get(name, 0)
        print(f"  CPU {name:<24}{d / steps * 1e3:8.3f} ms/step, {w / steps:6.2f} voluntary switches/step")
    prof = cProfile.Profile()
    prof.enable()
    step()
    prof.disable()
    st = pstats.Stats(prof)
    print(f"  training thread, one step: {st.total_calls} Python calls (cProfile)")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as p:
        step()
    ops = [e for e in p.events() if e.name.startswith("aten::") and e.cpu_parent is None]
    print(f"  training thread, one step: {len(ops)} top-level torch ops (torch.profiler)")
    if hook is not None:
        hook.close()


if __name__ == "__main__":
    main()
