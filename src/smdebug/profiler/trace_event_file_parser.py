"""1.0.34's framework event classes (``TraceEvent``, ``ProcessInfo``, ``ThreadInfo``), built only by
the compatibility readers from :class:`~smdebug.profiler.reading.frames.FrameworkEvents` rows."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["TraceEvent", "ProcessInfo", "ThreadInfo"]


class ThreadInfo:
    def __init__(self, tid: int, thread_name: str) -> None:
        self.tid = tid
        self.thread_name = thread_name

    def __repr__(self) -> str:
        return f"tid:{self.tid} name:{self.thread_name}"


class ProcessInfo:
    """A phase (the "process" row of a trace viewer): its pid in the file and its name."""

    def __init__(self, id: int, name: str) -> None:
        self.id = id
        self.name = name
        self._threads: dict[int, ThreadInfo] = {}

    def add_thread(self, threadid: int, thread_name: str) -> None:
        self._threads.setdefault(threadid, ThreadInfo(threadid, thread_name))

    def get_thread_info(self, threadid: int) -> ThreadInfo:
        return self._threads[threadid]

    def __repr__(self) -> str:
        return f"id:{self.id} name:{self.name} threads:{self._threads}"


class TraceEvent:
    """One framework event; times in microseconds since the epoch."""

    def __init__(
        self,
        ts: int,
        name: str,
        dur: int,
        phase_pid: int,
        phase_tid: int,
        event_args: dict[str, Any] | None,
        node_id: str,
        phase: str,
        file_type: str,
        event_phase: str = "",
        pid: int = 0,
        tid: int = 0,
        process_info: ProcessInfo | None = None,
    ) -> None:
        self.start_time = ts
        self.event_name = name
        self.duration = dur
        self.end_time = ts + dur
        self.phase_pid = phase_pid
        self.phase_tid = phase_tid
        self.pid = pid
        self.tid = tid
        self.event_args = event_args
        self.node_id = node_id
        self.phase = phase
        self.event_phase = event_phase
        self.process_info = process_info
        self.file_type = file_type

    def to_json(self) -> str:
        out: dict[str, Any] = {
            "name": self.event_name,
            "pid": self.pid,
            "tid": self.tid,
            "ph": self.phase,
            "ts": self.start_time,
        }
        args = dict(self.event_args) if self.event_args else None
        if self.phase == "i":
            out["s"] = args.pop("s", "t") if args else "t"
        elif self.phase == "X":
            out["dur"] = self.duration
        if args:
            out["args"] = args
        return json.dumps(out)

    def __repr__(self) -> str:
        return (
            f"TraceEvent({self.event_phase!r}, {self.event_name!r}, start={self.start_time}, "
            f"dur={self.duration}, node={self.node_id!r})"
        )
