"""Processes of a job that left its process group: found by the environment the launcher gave the job.

A process that calls ``setsid`` (a daemonised data server, a grandchild started with
``start_new_session=True``) escapes the process group the launcher ends when the command exits.
Every process the job starts inherits its environment, and the launcher put its run folder in it
(``SMDEBUG_LAUNCH_RUN_DIR``): on Linux, ``/proc/<pid>/environ`` of each process of this user says
which ones belong to the run. Elsewhere (no /proc) nothing is found: the process group is all.
"""

from __future__ import annotations

import os
import signal
import time

__all__ = ["processes_with_env", "end_processes"]


def processes_with_env(key: str, value: str) -> list[int]:
    """The live processes (not this one) whose environment holds ``key=value`` exactly."""
    needle = f"{key}={value}".encode() + b"\0"
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return []
    me = os.getpid()
    found = []
    for pid in pids:
        if pid == me:
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = b"\0" + f.read()
        except OSError:  # gone, or another user's
            continue
        if b"\0" + needle in env + b"\0" and _alive(pid):
            found.append(pid)
    return found


def _alive(pid: int) -> bool:
    """Running, and not a zombie waiting for its parent to reap it."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rpartition(b")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state not in (b"Z", b"X")


def end_processes(pids: list[int], grace: float) -> list[int]:
    """SIGTERM to ``pids``, SIGKILL to those still running after ``grace`` seconds; the pids that
    were signalled."""
    signalled = []
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
            signalled.append(pid)
        except (ProcessLookupError, PermissionError):
            pass
    deadline = time.monotonic() + grace
    while any(_alive(p) for p in signalled) and time.monotonic() < deadline:
        time.sleep(0.05)  # not our children: nothing to wait on but their state, bounded
    for pid in signalled:
        if _alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    return signalled
