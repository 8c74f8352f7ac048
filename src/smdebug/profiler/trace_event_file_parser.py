"""1.0.34's framework event classes (``TraceEvent``, ``ProcessInfo``, ``ThreadInfo``), built only by
the compatibility readers from :class:`~smdebug.profiler.reading.frames.FrameworkEvents` rows."""

from __future__ import annotations

import json

__all__ = ["TraceEvent", "ProcessInfo", "ThreadInfo"]


class ThreadInfo:
    def __init__(self, tid, thread_name):
        self.tid = tid
        self.thread_name = thread_name

    def __repr__(self):
        return f"tid:{self.tid} name:{self.thread_name}"


class ProcessInfo:
    """A phase (the "process" row of a trace viewer): its pid in the file and its name."""

    def __init__(self, id, name):
        self.id = id
        self.name = name
        self._threads = {}

    def add_thread(self, threadid, thread_name):
        self._threads.setdefault(threadid, ThreadInfo(threadid, thread_name))

    def get_thread_info(self, threadid):
        return self._threads[threadid]

    def __repr__(self):
        return f"id:{self.id} name:{self.name} threads:{self._threads}"


class TraceEvent:
    """One framework event; times in microseconds since the epoch."""

    def __init__(
        self,
        ts,
        name,
        dur,
        phase_pid,
        phase_tid,
        event_args,
        node_id,
        phase,
        file_type,
        event_phase="",
        pid=0,
        tid=0,
        process_info=None,
    ):
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

    def to_json(self):
        out = {"name": self.event_name, "pid": self.pid, "tid": self.tid, "ph": self.phase, "ts": self.start_time}
        args = dict(self.event_args) if self.event_args else None
        if self.phase == "i":
            out["s"] = args.pop("s", "t") if args else "t"
        elif self.phase == "X":
            out["dur"] = self.duration
        if args:
            out["args"] = args
        return json.dumps(out)

    def __repr__(self):
        return (
            f"TraceEvent({self.event_phase!r}, {self.event_name!r}, start={self.start_time}, "
            f"dur={self.duration}, node={self.node_id!r})"
        )
