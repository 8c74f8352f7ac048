"""One timeline per node: framework events, system metrics and torch.profiler's detailed trace in
one Chrome trace object (``{"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}``)
that Perfetto (ui.perfetto.dev) and ``chrome://tracing`` open (tests/profiler/view/test_trace_viewer.py
loads it in chrome://tracing's trace viewer and reads back the model it imports).

Times: ``ts`` is microseconds after ``otherData["ts_base_us"]``, an absolute time (microseconds
since the epoch): the window's start (the profile's first timestamp by default), or the earliest
event's when one began before the window, since Perfetto drops negative times. Each file gives its
own base. Not epoch microseconds themselves: Perfetto's importer reads a fractional ``ts`` as a
double and multiplies it by 1000, and at 1.8e15 microseconds that steps by 256 ns, so
torch.profiler's operators came out overlapping their parents and Perfetto dropped them (43 of the
walk-through's, its "Trace info" page said: ``slice_drop_overlapping_complete_event``).

What goes in:

* **System metrics** — one counter track (``ph: "C"``) per series, in the process ``system <node>``,
  named once (:func:`counter_name`: ``cpu3 CPUUtilization``, ``gpu0 GPUMemoryUtilization``,
  ``MemoryUsedPercent``, ``JobCPUDemand``, ``ReceiveBytesPerSecond``), its one argument named by its
  unit (``%``, ``bytes/s``, ``ops/s``): Perfetto names a counter track ``<name> <argument>``, so it
  reads ``cpu3 CPUUtilization %`` (it read ``cpu3 CPUUtilization CPUUtilization``).
  A series with more samples than ``max_counter_points`` is averaged over equal buckets down to
  that many points; ``otherData["downsampled"]`` names every series that was, with its counts.
* **Framework events** — one process per framework process (``framework <rank>-<host>``), one
  thread per phase (``Step:ModeKeys.TRAIN``, ``Forward``, ``DataLoaderIter``...; one per
  (phase, original thread) when a phase ran on several threads), complete events (``ph: "X"``).
  The events of one thread must nest (Perfetto's rule): one that starts inside another and ends
  after it (TF's asynchronous ``GetNext``) goes to a lane of its own, ``<phase> (overlapping 1)``.
* **Detailed profiling** — torch.profiler's Kineto traces under
  ``framework/pytorch/detailed_profiling/``: an event's absolute time is
  ``baseTimeNanoseconds / 1000 + ts``; every process of a Kineto file gets its own pid, named
  ``torch.profiler <its name> [<process>]`` (``torch.profiler Spans [...]`` by Kineto's pid when it
  has no name) and sorted after ours (Kineto's ``process_sort_index`` is dropped); flow ids are
  renumbered 1, 2, ... over the files (integers: Perfetto reads a string id as hexadecimal).
  Kineto's global instant events (``Record Window End``...) become instants of a thread
  ``torch.profiler markers`` of the file's first process, and a thread without a name is named
  ``thread <tid>``: Perfetto shows global instants on a track with no name, "Unnamed SliceTrack",
  above every process.
  Epoch-sized float microseconds step by 0.25 us, so an operator's end rounded less than 1 us past
  its parent's is moved back to it (``_nest``).
* **Rule verdicts** (optional) — in the process ``profiler rules``, one thread per rule that
  fired, a slice over each window it fired in (``Verdict.fired_windows`` of our rules' reports), or
  an instant event of that thread at the end when the report does not say where (1.0.34's reports).

Nodes: system metrics name the node ``algo-<n>``; framework files name the process
``<rank>-<host>``. A process whose host is a system node goes with that node; otherwise, when the
job has at most one system node, everything is that one node (a local run names its host, not
``algo-1``); otherwise the process's host is a node of its own (without system metrics).

Events are sorted: metadata (``ph: "M"``) first, then by ``ts``.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np

from smdebug.exceptions import SMDebugValueError

__all__ = [
    "build_timeline",
    "timeline_nodes",
    "node_of",
    "kineto_files",
    "counter_name",
    "counter_arg",
    "DETAILED_PREFIX",
]

DETAILED_PREFIX = "framework/pytorch/detailed_profiling/"
_KINETO_NAME = re.compile(r"(?P<node>[^/_]+)_(?P<start>\d+)_(?P<end>\d+)\.pt\.trace\.json$")
# part 1 and 1.0.34 name a SageMaker process "<rank>-algo-<n>" in file names; the readers (as
# 1.0.34's) call it "algo-<n>-<rank>"
_ALGO_PROCESS = re.compile(r"^(algo-\d+)-(\d+)$")
_RANK_ALGO = re.compile(r"^(\d+)-(algo-\d+)$")
_SYSTEM_PID = 1
_RULES_PID = 2
_FRAMEWORK_PID = 100
_KINETO_PID = 10000


def _window(trial, start_us, end_us) -> tuple:
    first = trial.first_timestamp
    # the newest data of any stream: get_latest_timestamp (where every stream has data) ends with the
    # stream that ends first, often the system samples, and dropped the steps recorded after them
    last = trial.get_end_timestamp()
    if first is None or last is None:
        raise SMDebugValueError(
            f"{getattr(trial, 'path', trial)}: no profiler data (no system metrics and no framework events)"
        )
    start = int(first if start_us is None else start_us)
    end = int(last if end_us is None else end_us)
    if end < start:
        raise SMDebugValueError(f"the window ends ({end} us) before it starts ({start} us)")
    return start, end


def _host(framework_node: str) -> str:
    """``algo-<n>-<rank>`` -> ``algo-<n>``; ``<rank>-<host>`` -> ``<host>``."""
    m = _ALGO_PROCESS.match(framework_node)
    if m:
        return m.group(1)
    return framework_node.split("-", 1)[1] if "-" in framework_node else framework_node


def _reader_node(file_node: str) -> str:
    """A process's name in a file name as the readers name it (``0-algo-1`` -> ``algo-1-0``)."""
    m = _RANK_ALGO.match(file_node)
    return f"{m.group(2)}-{m.group(1)}" if m else file_node


def node_of(framework_node: str, system_nodes: list[str]) -> str:
    """The node a framework process belongs to (see the module's docstring)."""
    host = _host(framework_node)
    if host in system_nodes:
        return host
    if len(system_nodes) == 1:
        return system_nodes[0]
    return host


def kineto_files(trial) -> list[dict]:
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


def _gather(trial, start: int, end: int) -> dict:
    series = trial.system_series(start, end)
    events = trial.framework_events(start, end)
    system_nodes = sorted({s.node_id for s in series})
    fw_nodes = sorted({str(n) for n in events.node_id})
    files = [f for f in kineto_files(trial) if f["end_us"] >= start and f["start_us"] <= end]
    fw_nodes_all = sorted(set(fw_nodes) | {f["fw_node"] for f in files})
    return {
        "series": series,
        "events": events,
        "files": files,
        "system_nodes": system_nodes,
        "nodes": {fw: node_of(fw, system_nodes) for fw in fw_nodes_all},
    }


def timeline_nodes(trial, start_us: int | None = None, end_us: int | None = None) -> list[str]:
    """The nodes with data in the window, sorted (one timeline each)."""
    start, end = _window(trial, start_us, end_us)
    g = _gather(trial, start, end)
    return sorted(set(g["system_nodes"]) | set(g["nodes"].values()))


def _meta(pid: int, name: str, sort_index: int, tid: int | None = None, thread: str | None = None) -> list[dict]:
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


def _bucket_mean(ts: np.ndarray, vals: np.ndarray, points: int) -> tuple:
    edges = np.linspace(0, len(ts), points + 1).astype(np.int64)
    starts = edges[:-1]
    counts = np.diff(edges)
    keep = counts > 0
    sums = np.add.reduceat(vals, starts[keep])
    return ts[starts[keep]], sums / counts[keep]


_DEVICE = re.compile(r"^(cpu|gpu)\d+$")
# a counter's value is named by its unit (Perfetto names a counter track "<event name> <arg name>")
_COUNTER_ARG = {"%": "%", "B/s": "bytes/s", "IOPS": "ops/s", "": "value"}


def counter_name(s) -> str:
    """The counter track of a system series: ``cpu3 CPUUtilization`` for a device,
    ``JobCPUDemand`` for the job's rows, else the metric's name (``MemoryUsedPercent``, ``IOPS``,
    ``ReceiveBytesPerSecond``: network rows' dimension, ``Algorithm``, names nothing)."""
    if _DEVICE.match(s.name or ""):
        return f"{s.name} {s.dimension}" if s.dimension else s.name
    if s.type == "job" and s.dimension:
        return s.dimension
    if s.dimension and s.dimension not in (s.name, "Algorithm"):
        return f"{s.name} {s.dimension}"
    return s.name or s.dimension


def counter_arg(s) -> str:
    """The name of a counter event's one argument: the series' unit (``%``, ``bytes/s``,
    ``ops/s``; ``value`` when unknown), so that Perfetto's track reads ``cpu0 CPUUtilization %``
    (the metric named once) and chrome://tracing's counter ``cpu0 CPUUtilization`` has the series ``%``."""
    from smdebug.analysis.units import metric_unit

    return _COUNTER_ARG[metric_unit(s.name, s.dimension, s.type)]


def _counters(series, max_points: int, downsampled: dict) -> list[dict]:
    out = []
    for s in series:
        ts, vals = s.timestamp_us, np.asarray(s.value, dtype=np.float64)
        track, key = counter_name(s), counter_arg(s)
        if len(ts) > max_points:
            downsampled[track] = {"samples": int(len(ts)), "points": int(max_points)}
            ts, vals = _bucket_mean(ts, vals, max_points)
        finite = np.isfinite(vals)
        for t, v in zip(ts[finite].tolist(), vals[finite].tolist()):
            out.append(
                {"ph": "C", "name": track, "cat": s.type, "pid": _SYSTEM_PID, "tid": 0, "ts": int(t), "args": {key: v}}
            )
    return out


def _lanes(starts: list[int], ends: list[int]) -> list[int]:
    """A lane for each event (sorted by start, the longest first) such that the events of a lane
    nest, as Perfetto and chrome://tracing want the complete events of one thread: an event that
    starts inside an open one of its lane and ends after it goes to the next lane."""
    open_ends: list[list[int]] = []  # per lane, the ends of its open events, innermost last
    out = []
    for start, end in zip(starts, ends):
        lane = 0
        while lane < len(open_ends):
            stack = open_ends[lane]
            while stack and stack[-1] <= start:
                stack.pop()
            if not stack or end <= stack[-1]:
                break
            lane += 1
        if lane == len(open_ends):
            open_ends.append([])
        open_ends[lane].append(end)
        out.append(lane)
    return out


def _framework(events, fw_nodes: list[str]) -> list[dict]:
    out = []
    pids = {fw: _FRAMEWORK_PID + i for i, fw in enumerate(fw_nodes)}
    for fw, pid in pids.items():
        out += _meta(pid, f"framework {fw}", pid)
    groups: dict = {}  # (process, phase, original thread): its rows, in order of first appearance
    for i in np.flatnonzero(np.array([str(n) in pids for n in events.node_id], dtype=bool)).tolist():
        groups.setdefault((str(events.node_id[i]), str(events.phase[i]), int(events.tid[i])), []).append(i)
    threads_of_phase: dict = {}
    for fw, phase, _ in groups:
        threads_of_phase[(fw, phase)] = threads_of_phase.get((fw, phase), 0) + 1
    last_tid: dict = {}
    for (fw, phase, otid), rows in groups.items():
        rows.sort(key=lambda i: (int(events.start_us[i]), -int(events.end_us[i])))
        starts = [int(events.start_us[i]) for i in rows]
        ends = [max(int(events.end_us[i]), start) for i, start in zip(rows, starts)]
        lanes = _lanes(starts, ends)
        name = phase if threads_of_phase[(fw, phase)] == 1 else f"{phase} (thread {otid})"
        tids = {}
        for lane in range(max(lanes) + 1):
            last_tid[fw] = tids[lane] = last_tid.get(fw, 0) + 1
            out += _meta(pids[fw], "", 0, tids[lane], name if lane == 0 else f"{name} (overlapping {lane})")
        for i, start, end, lane in zip(rows, starts, ends, lanes):
            args = dict(events.args[i] or {}) if events.args else {}
            if events.step[i] >= 0:
                args.setdefault("step_num", int(events.step[i]))
            out.append(
                {
                    "ph": "X",
                    "name": str(events.name[i]),
                    "cat": phase,
                    "pid": pids[fw],
                    "tid": tids[lane],
                    "ts": start,
                    "dur": end - start,
                    "args": args,
                }
            )
    return out


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
            continue  # Kineto's order (its pid, 2**29...) would put its processes among ours: _kineto sets it
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


def _kineto(trial, files: list[dict], first_pid: int, origin_us: int) -> list[dict]:
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
            meta = _meta(pid, f"torch.profiler {kineto_pid} [{f['fw_node']}]", pid)
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


def _verdicts(rule_reports: dict, at_us: int) -> list[dict]:
    """A slice per window in which a rule fired (its report's ``Verdict.fired_windows``), one
    thread per rule; a rule that fired without saying where: an instant event of its thread at ``at_us``."""
    out = []
    fired = [
        (rule, rep)
        for rule, rep in sorted((rule_reports or {}).items())
        if int(rep.get("RuleTriggered", 0) or 0) > 0 or (rep.get("Verdict") or {}).get("fired_windows")
    ]
    for tid, (rule, rep) in enumerate(fired, start=1):
        verdict = rep.get("Verdict") or {}
        args = {
            "RuleTriggered": rep.get("RuleTriggered"),
            "Violations": rep.get("Violations"),
            "Datapoints": rep.get("Datapoints"),
            "message": verdict.get("message", ""),
        }
        out += _meta(_RULES_PID, "", 0, tid, rule)
        windows = verdict.get("fired_windows") or []
        for start, end in windows:
            out.append(
                {
                    "ph": "X",
                    "name": f"{rule} fired",
                    "cat": "rule",
                    "pid": _RULES_PID,
                    "tid": tid,
                    "ts": int(start),
                    "dur": max(int(end) - int(start), 0),
                    "args": args,
                }
            )
        if not windows:  # on the rule's own (named) thread: a global instant would sit on a track of no name
            out.append(
                {
                    "ph": "i",
                    "s": "t",
                    "name": f"{rule} fired",
                    "cat": "rule",
                    "pid": _RULES_PID,
                    "tid": tid,
                    "ts": at_us,
                    "args": args,
                }
            )
    if out:
        out = _meta(_RULES_PID, "profiler rules", _RULES_PID) + out
    return out


def build_timeline(
    trial,
    node: str | None = None,
    start_us: int | None = None,
    end_us: int | None = None,
    rule_reports: dict | None = None,
    max_counter_points: int = 20000,
) -> dict:
    """The Chrome trace object of ``node`` (None: the only node; an error naming them when there
    are several) over ``[start_us, end_us]`` (default: the whole profile)."""
    if max_counter_points < 1:
        raise SMDebugValueError(f"max_counter_points={max_counter_points}: must be at least 1")
    start, end = _window(trial, start_us, end_us)
    g = _gather(trial, start, end)
    nodes = sorted(set(g["system_nodes"]) | set(g["nodes"].values()))
    if node is None:
        if len(nodes) > 1:
            raise SMDebugValueError(f"the profile has {len(nodes)} nodes ({', '.join(nodes)}): name one")
        node = nodes[0] if nodes else "node"
    elif nodes and node not in nodes:
        raise SMDebugValueError(f"no node {node!r} in the profile (nodes: {', '.join(nodes)})")
    fw_nodes = sorted(fw for fw, n in g["nodes"].items() if n == node)
    downsampled: dict = {}
    series = [s for s in g["series"] if s.node_id == node]
    events: list[dict] = []
    if series:
        events += _meta(_SYSTEM_PID, f"system {node}", _SYSTEM_PID)
        events += _counters(series, max_counter_points, downsampled)
    events += _framework(g["events"], fw_nodes)
    events += _verdicts(rule_reports or {}, end)
    for e in events:  # (integers: exact)
        if e["ph"] != "M":
            e["ts"] -= start
    events += _kineto(trial, [f for f in g["files"] if f["fw_node"] in fw_nodes], _KINETO_PID, start)
    # events that began before the window (a step under way at its start) would have negative
    # times, which Perfetto drops: the base moves back to the earliest, in whole microseconds
    early = math.floor(min([0.0] + [e["ts"] for e in events if e["ph"] != "M"]))
    if early < 0:
        for e in events:
            if e["ph"] != "M":
                e["ts"] -= early
    meta = [e for e in events if e["ph"] == "M"]
    rest = sorted((e for e in events if e["ph"] != "M"), key=lambda e: e["ts"])
    return {
        "traceEvents": meta + rest,
        "displayTimeUnit": "ms",
        "otherData": {
            "producer": "smdebug",
            "node": node,
            "ts_base_us": start + early,
            "start_us": start,
            "end_us": end,
            "framework_processes": fw_nodes,
            "detailed_profiles": [f["key"] for f in g["files"] if f["fw_node"] in fw_nodes],
            "downsampled": downsampled,
        },
    }
