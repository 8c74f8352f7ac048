"""torch.profiler's detailed traces (Kineto's Chrome-trace files under
``framework/pytorch/detailed_profiling/``) put on a node's timeline (:mod:`smdebug.profiler.views.timeline`;
its docstring says how): their events moved to the timeline's time base and pids, flow ids
renumbered, global instants given a thread, and rounding overlaps nested (``_nest``).
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from smdebug.exceptions import SMDebugValueError

if TYPE_CHECKING:
    from smdebug.profiler.reading.folder import ProfileFolder

__all__ = ["kineto_files", "kineto_events", "meta_events", "DETAILED_PREFIX", "MARKERS_TID"]

DETAILED_PREFIX = "framework/pytorch/detailed_profiling/"
_KINETO_NAME = re.compile(r"(?P<node>[^/_]+)_(?P<start>\d+)_(?P<end>\d+)\.pt\.trace\.json$")
# part 1 and 1.0.34 name a SageMaker process "<rank>-algo-<n>" in file names; the readers (as
# 1.0.34's) call it "algo-<n>-<rank>"
_RANK_ALGO = re.compile(r"^(\d+)-(algo-\d+)$")


def _reader_node(file_node: str) -> str:
    """A process's name in a file name as the readers name it (``0-algo-1`` -> ``algo-1-0``)."""
    m = _RANK_ALGO.match(file_node)
    return f"{m.group(2)}-{m.group(1)}" if m else file_node


def kineto_files(trial: ProfileFolder) -> list[dict]:
    """The detailed-profiling traces of the trial: dicts with key, framework node, start_us, end_us."""
    from smdebug.storage import open_store

    store = open_store(trial.path)
    out = []
    for key in store.list(DETAILED_PREFIX):
        m = _KINETO_NAME.search(key)
        if m:
            out.append(
                {"key": key, "fw_node": _reader_node(m["node"]), "start_us": int(m["start"]), "end_us": int(m["end"])}
            )
    return sorted(out, key=lambda f: f["start_us"])


def meta_events(pid: int, name: str, sort_index: int, tid: int | None = None, thread: str | None = None) -> list[dict]:
    """The metadata events naming process ``pid`` (``tid`` None) or its thread ``tid``, and their order."""
    if tid is None:
        return [
            {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "ts": 0, "args": {"name": name}},
            {
                "ph": "M",
                "name": "process_sort_index",
                "pid": pid,
                "tid": 0,
                "ts": 0,
                "args": {"sort_index": sort_index},
            },
        ]
    return [
        {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "ts": 0, "args": {"name": thread}},
        {"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid, "ts": 0, "args": {"sort_index": tid}},
    ]


def _kineto_file(doc: dict, f: dict, n: int, where: str, first_pid: int, flow_ids: dict, origin_us: int) -> dict:
    """The events of one Kineto trace at times after ``origin_us`` (absolute microseconds: the
    difference of the bases is taken first, in integers, so that the result keeps Kineto's
    nanoseconds), its pids moved to ``first_pid`` on:
    ``{"events": [...], "pids": {kineto pid: ours}, "shown": {ours: kineto pid}}``, where "shown"
    leaves out a pid that holds only global instant events (they belong to no process). Flow ids
    are renumbered through ``flow_ids`` ((file number, Kineto id) -> ours, shared by the files)."""
    base = doc.get("baseTimeNanoseconds")
    shift_us = (int(base) - origin_us * 1000) / 1000 if base is not None else -float(origin_us)
    out: dict = {"events": [], "pids": {}, "shown": {}}
    for e in doc["traceEvents"]:
        ph = e.get("ph")
        if ph is None or (ph != "M" and "ts" not in e):
            continue  # not an event (Kineto's trace summary records)
        if ph == "M" and e.get("name") == "process_sort_index":
            continue  # Kineto's order (its pid, 2**29...) would put its processes among ours: kineto_events sets it
        e = dict(e)
        kineto_pid = e.get("pid", 0)
        e["pid"] = out["pids"].setdefault(kineto_pid, first_pid + len(out["pids"]))
        if ph not in ("i", "I") or e.get("s") != "g":
            out["shown"].setdefault(e["pid"], kineto_pid)
        e.setdefault("tid", 0)
        if ph == "M":
            if e.get("name") == "process_name":
                e["args"] = {"name": f"torch.profiler {e.get('args', {}).get('name', '')} [{f['fw_node']}]"}
            e["ts"] = 0
        else:
            if base is None and float(e["ts"]) < 1e14:
                raise SMDebugValueError(
                    f"{where}: no baseTimeNanoseconds and relative times: cannot place it on the timeline"
                )
            e["ts"] = shift_us + float(e["ts"])
            if "id" in e and ph in ("s", "t", "f"):
                # integers: Perfetto reads a string id as hexadecimal and drops the flow when it is not
                e["id"] = flow_ids.setdefault((n, e["id"]), len(flow_ids) + 1)
        out["events"].append(e)
    _markers(out)
    _nest(out["events"])
    return out


MARKERS_TID = "torch.profiler markers"


def _markers(out: dict) -> None:
    """Kineto's global instant events ("Record Window End", "Iteration Start: ...") as instants of
    a thread of the file's first process, ``torch.profiler markers``: a global instant has no
    process, and Perfetto draws such events on a track with no name ("Unnamed SliceTrack") above
    everything else."""
    marks = [e for e in out["events"] if e["ph"] in ("i", "I") and e.get("s") == "g"]
    if not marks:
        return
    if out["shown"]:
        pid = min(out["shown"])
    else:  # a file of markers only: the process of the first, named after them
        pid = marks[0]["pid"]
        out["shown"][pid] = "markers"
    for e in marks:
        e.update(pid=pid, tid=MARKERS_TID, s="t")


def _nest(events: list[dict]) -> None:
    """Kineto writes times and durations rounded to the nanosecond: an operator that ended with the
    one it ran in may end a little after it, which Perfetto takes for slices that do not nest. Such
    an end (less than 1 us after its parent's) is moved back to the parent's end; other overlaps stay."""
    by_thread: dict = {}
    for e in events:
        if e["ph"] == "X" and isinstance(e.get("dur"), (int, float)):
            by_thread.setdefault((e["pid"], e["tid"]), []).append(e)
    for slices in by_thread.values():
        slices.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack: list[dict] = []
        for e in slices:
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"]:
                stack.pop()
            if stack:
                parent_end = stack[-1]["ts"] + stack[-1]["dur"]
                if 0 < e["ts"] + e["dur"] - parent_end < 1.0:
                    e["dur"] = parent_end - e["ts"]
            stack.append(e)


def kineto_events(trial: ProfileFolder, files: list[dict], first_pid: int, origin_us: int) -> list[dict]:
    """The events of the Kineto ``files`` (:func:`kineto_files`), their times after ``origin_us``,
    their processes numbered from ``first_pid`` on, named and sorted after the timeline's own."""
    from smdebug.storage import open_store

    store = open_store(trial.path)
    out: list[dict] = []
    next_pid = first_pid
    flow_ids: dict = {}
    for n, f in enumerate(files):
        where = f"{trial.path}/{f['key']}"
        try:
            doc = json.loads(store.read(f["key"]))
        except ValueError as exc:
            raise SMDebugValueError(f"{where}: not a torch.profiler trace (bad JSON: {exc})") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
            raise SMDebugValueError(f"{where}: not a torch.profiler trace (no traceEvents list)")
        kin = _kineto_file(doc, f, n, where, next_pid, flow_ids, origin_us)
        events = kin["events"]
        named = {e["pid"] for e in events if e["ph"] == "M" and e.get("name") == "process_name"}
        for pid, kineto_pid in sorted(kin["shown"].items()):
            # sorted after ours by their pid; one without a name is named by its Kineto pid ("Spans")
            meta = meta_events(pid, f"torch.profiler {kineto_pid} [{f['fw_node']}]", pid)
            events += meta[1:] if pid in named else meta
        events += _thread_names(events)
        out += events
        next_pid += len(kin["pids"])
    return out


def _thread_names(events: list[dict]) -> list[dict]:
    """``thread_name`` metadata for the threads of ``events`` that have none (a thread is named by
    its tid when that is a string, as Kineto's ``Trace PyTorch Profiler``; an integer tid
    becomes ``thread <tid>``: Perfetto showed such a thread with no name)."""
    named = {(e["pid"], e.get("tid")) for e in events if e["ph"] == "M" and e.get("name") == "thread_name"}
    out, seen = [], set()
    for e in events:
        key = (e["pid"], e.get("tid"))
        if e["ph"] == "M" or key in named or key in seen:
            continue
        seen.add(key)
        tid = e.get("tid")
        out.append(
            {
                "ph": "M",
                "name": "thread_name",
                "pid": e["pid"],
                "tid": tid,
                "ts": 0,
                "args": {"name": tid if isinstance(tid, str) and tid else f"thread {tid}"},
            }
        )
    return out
