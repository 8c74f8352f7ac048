"""One framework timeline file (a Chrome-trace JSON array, 1.0.34's format) into
:class:`~smdebug.profiler.reading.frames.FrameworkEvents`.

Decoding follows 1.0.34's ``TraceEventParser`` so that both see the same events with the same
values: ``ts`` is relative to the file's ``start_time_since_epoch_in_micros`` (its first
``process_name`` line); a ``pid`` names a phase through the latest ``process_name`` line of that
pid before the event ("Unknown" when none was announced, or when that line has no ``args.name``:
1.0.34's PyTorch files announce pid 0 first without a name, in the header line that sets the time
base, then again as ``Forward-SubModuleInternal``); complete events (``ph: "X"``) and ``B``/``E`` pairs (matched per pid; a
negative span is dropped) become rows, instant and counter events are not framework events for
1.0.34 and are skipped here too. The row's ``pid``/``tid`` are ``args.pid``/``args.thread_id``
when present, else the phase's pid and the event's ``tid`` (1.0.34 hashed a salted string for
the latter: it differs in every process, so nobody can depend on it). Node ids
``<pid>-algo-<n>`` are read as ``algo-<n>-<pid>``, as 1.0.34 does.

Unlike 1.0.34, a file that is not valid JSON raises
:class:`~smdebug.exceptions.EventFileCorrupt` naming it instead of being logged and skipped.

This is the general reader: the files written by our writer and by 1.0.34's are read in bulk by
:mod:`~smdebug.profiler.reading.trace_bulk` (the same columns, tested), which leaves here every
file it does not take.
"""

from __future__ import annotations

import re

import numpy as np
import orjson

from smdebug.exceptions import EventFileCorrupt
from smdebug.profiler.reading.frames import FrameworkEvents
from smdebug.profiler.reading.trace_lines import int_or_minus_one, step_of

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


def _node_id(node: str) -> str:
    if "\n" in node:  # (what the regular expression's "." does not cross)
        m = _ALGO_NODE.match(node)
        return f"{m.group(2)}-{m.group(1)}" if m else node
    i = node.rfind("-algo")  # _ALGO_NODE without it: its greedy (.*) ends at the last "-algo"
    return f"{node[i + 1 :]}-{node[:i]}" if i >= 0 else node


def node_id_from_trace_name(basename: str) -> str:
    return _node_id(basename.split("_")[1])


def trace_file_info(key: str) -> tuple[int, str, str] | None:
    """``(last_end_us, node_id, suffix)`` of a framework file's key (1.0.34's rule: under
    ``framework/``, in a ``pevents`` folder, ending in ``.json``, ``<T>_<node>_<suffix>``), or None."""
    base = key[key.rfind("/") + 1 :]
    stamp, _, rest = base.partition("_")
    found = _BY_REST.get(rest, _UNSEEN)
    if found is _UNSEEN:  # the part after the time repeats for every file of a node
        if len(_BY_REST) >= 4096:
            _BY_REST.clear()
        found = _BY_REST[rest] = _rest_info(rest)
    if (
        found is None
        or not stamp.isdigit()
        or "pevents" not in key
        or not (key.startswith("framework/") or "/framework/" in key)
    ):
        return None
    return int(stamp), found[0], found[1]


_UNSEEN = object()
_BY_REST: dict = {}  # the part of a name after "<T>_" -> (node_id, suffix) or None


def _rest_info(rest: str) -> tuple[str, str] | None:
    """``(node_id, suffix)`` of a name ``<T>_<rest>`` whose ``<T>`` is digits, or None. The name
    ends with ``_<suffix>`` exactly when ``_<rest>`` does: no suffix holds a digit."""
    node, _, tail = rest.partition("_")
    if not tail:
        return None
    for suffix in FILE_TYPES:
        if ("_" + rest).endswith("_" + suffix):
            return _node_id(node), suffix
    return None


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
                if ev.get("name") == "process_name":  # the latest announcement names the pid from here on
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
        step.append(step_of(b_args))
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
    try:
        start_us, end_us = np.array(start, dtype=np.int64), np.array(end, dtype=np.int64)
    except (OverflowError, TypeError, ValueError):
        raise EventFileCorrupt(f"{where}: an event's time is not a number of microseconds that fits 64 bits") from None
    ev = FrameworkEvents(
        phase=np.array(phase, dtype=object),
        name=np.array(name, dtype=object),
        start_us=start_us,
        end_us=end_us,
        step=np.array(step, dtype=np.int64),
        node_id=np.full(n, node_id, dtype=object),
        pid=_ints(pid),
        tid=_ints(tid),
        args=args_out,
        phase_pid=_ints(phase_pid),
        file_suffix=np.full(n, suffix, dtype=object),
    )
    if n > 1 and bool(np.any(ev.start_us[1:] < ev.start_us[:-1])):
        ev = ev.take(np.argsort(ev.start_us, kind="stable"))
    return ev


def _ints(values: list) -> np.ndarray:
    try:
        return np.array(values, dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        return np.array([int_or_minus_one(v) for v in values], dtype=np.int64)
