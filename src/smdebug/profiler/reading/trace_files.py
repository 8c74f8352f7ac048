"""One framework timeline file (a Chrome-trace JSON array, 1.0.34's format) into
:class:`~smdebug.profiler.reading.frames.FrameworkEvents`.

Decoding follows 1.0.34's ``TraceEventParser`` so that both see the same events with the same
values: ``ts`` is relative to the file's ``start_time_since_epoch_in_micros`` (its first
``process_name`` line); a ``pid`` names a phase through its ``process_name`` metadata ("Unknown"
when none was announced); complete events (``ph: "X"``) and ``B``/``E`` pairs (matched per pid; a
negative span is dropped) become rows, instant and counter events are not framework events for
1.0.34 and are skipped here too. The row's ``pid``/``tid`` are ``args.pid``/``args.thread_id``
when present, else the phase's pid and the event's ``tid`` (1.0.34 hashed a salted string for
the latter: it differs in every process, so nobody can depend on it). Node ids
``<pid>-algo-<n>`` are read as ``algo-<n>-<pid>``, as 1.0.34 does.

Unlike 1.0.34, a file that is not valid JSON raises
:class:`~smdebug.exceptions.EventFileCorrupt` naming it instead of being logged and skipped.
"""

from __future__ import annotations

import os
import re

import numpy as np
import orjson

from smdebug.exceptions import EventFileCorrupt
from smdebug.profiler.reading.frames import FrameworkEvents

__all__ = ["trace_file_info", "parse_trace_file", "node_id_from_trace_name", "FILE_TYPES"]

# the suffixes 1.0.34's framework reader parses, with the file_type its parsers give their events
# (merged_timeline.json, the merge tool's output, is not read: 1.0.34 crashed on it)
FILE_TYPES = {
    "pythontimeline.json": "PythontimelineMetrics",
    "model_timeline.json": "DetailedframeworkMetrics",
    "horovod_timeline.json": "",
    "smdataparallel_timeline.json": "SMDataParallelMetrics",
}

_ALGO_NODE = re.compile(r"(.*)-(algo.*)")


def node_id_from_trace_name(basename: str) -> str:
    node = basename.split("_")[1]
    m = _ALGO_NODE.match(node)
    return f"{m.group(2)}-{m.group(1)}" if m else node


def trace_file_info(key: str) -> tuple[int, str, str] | None:
    """``(last_end_us, node_id, suffix)`` of a framework file's key (1.0.34's rule: under
    ``framework/``, in a ``pevents`` folder, ending in ``.json``, ``<T>_<node>_<suffix>``), or None."""
    if "pevents" not in key or not key.endswith(".json") or not ("/" + key).count("/framework/"):
        return None
    base = os.path.basename(key)
    fields = base.split("_")
    if len(fields) < 3 or not fields[0].isdigit():
        return None
    for suffix in FILE_TYPES:
        if base.endswith("_" + suffix):
            return int(fields[0]), node_id_from_trace_name(base), suffix
    return None


def _step(args) -> int:
    if not args or "step_num" not in args:
        return -1
    try:
        return int(args["step_num"])
    except (TypeError, ValueError):
        return -1


def parse_trace_file(data: bytes, where: str, node_id: str, suffix: str | None = None) -> FrameworkEvents:
    """The events of one timeline file's bytes, sorted by start; ``where`` names it in errors."""
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise EventFileCorrupt(f"{where}: not a JSON trace file ({exc})") from None
    if isinstance(doc, dict):  # the object form {"traceEvents": [...]}
        doc = doc.get("traceEvents", [])
    if not isinstance(doc, list):
        raise EventFileCorrupt(f"{where}: a trace file holds a JSON array of events")
    base = 0
    names: dict = {}  # phase pid -> process name
    stacks: dict = {}  # pid -> open "B" events
    phase, name, start, end, step, pid, tid, args_out, phase_pid = [], [], [], [], [], [], [], [], []
    for i, ev in enumerate(doc):
        if not isinstance(ev, dict):
            raise EventFileCorrupt(f"{where}: event {i} is not a JSON object")
        ph = ev.get("ph")
        try:
            if ph == "X":
                ts = ev["ts"] + base
                dur = ev["dur"]
                b_name, b_args, b_pid, b_tid = ev["name"], ev.get("args"), ev["pid"], ev.get("tid", 0)
            elif ph == "M":
                meta_args = ev.get("args") or {}
                if ev.get("name") == "process_name" and ev.get("pid") not in names:
                    names[ev.get("pid")] = meta_args.get("name", "Unknown")
                if "start_time_since_epoch_in_micros" in meta_args:
                    base = meta_args["start_time_since_epoch_in_micros"]
                continue
            elif ph == "B":
                stacks.setdefault(ev["pid"], []).append(ev)
                continue
            elif ph == "E":
                opened = stacks.get(ev["pid"])
                if not opened:
                    continue
                b = opened.pop()
                ts = b["ts"] + base
                dur = ev["ts"] - b["ts"]
                if dur < 0:
                    continue
                b_name, b_args, b_pid, b_tid = b["name"], ev.get("args"), ev["pid"], b.get("tid", 0)
            else:
                continue
        except (KeyError, TypeError) as exc:
            raise EventFileCorrupt(f"{where}: event {i} ({ph!r}) lacks {exc}") from None
        phase.append(names.get(b_pid, "Unknown"))
        name.append(b_name)
        start.append(ts)
        end.append(ts + dur)
        step.append(_step(b_args))
        if b_args:
            pid.append(b_args.get("pid", b_pid))
            tid.append(b_args.get("thread_id", b_tid))
        else:
            pid.append(b_pid)
            tid.append(b_tid)
        args_out.append(b_args)
        phase_pid.append(b_pid)
    if not start:
        return FrameworkEvents.empty()
    n = len(start)
    ev = FrameworkEvents(
        phase=np.array(phase, dtype=object), name=np.array(name, dtype=object),
        start_us=np.array(start, dtype=np.int64), end_us=np.array(end, dtype=np.int64),
        step=np.array(step, dtype=np.int64), node_id=np.full(n, node_id, dtype=object),
        pid=_ints(pid), tid=_ints(tid), args=args_out, phase_pid=_ints(phase_pid),
        file_suffix=np.full(n, suffix, dtype=object),
    )
    if n > 1 and bool(np.any(ev.start_us[1:] < ev.start_us[:-1])):
        ev = ev.take(np.argsort(ev.start_us, kind="stable"))
    return ev


def _ints(values: list) -> np.ndarray:
    try:
        return np.array(values, dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        out = np.zeros(len(values), dtype=np.int64)
        for i, v in enumerate(values):
            try:
                out[i] = int(v)
            except (TypeError, ValueError, OverflowError):
                out[i] = -1
        return out
