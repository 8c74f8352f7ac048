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
  its parent's is moved back to it (:mod:`~smdebug.profiler.views.kineto` reads these files).
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

import math
import re
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from smdebug.exceptions import SMDebugValueError
from smdebug.profiler.views.kineto import kineto_events, kineto_files, meta_events

if TYPE_CHECKING:
    from smdebug.profiler.reading.folder import ProfileFolder
    from smdebug.profiler.reading.frames import FrameworkEvents, Series

__all__ = [
    "build_timeline",
    "timeline_nodes",
    "node_of",
    "counter_name",
    "counter_arg",
]

# part 1 and 1.0.34 name a SageMaker process "<rank>-algo-<n>" in file names; the readers (as
# 1.0.34's) call it "algo-<n>-<rank>"
_ALGO_PROCESS = re.compile(r"^(algo-\d+)-(\d+)$")
_SYSTEM_PID = 1
_RULES_PID = 2
_FRAMEWORK_PID = 100
_KINETO_PID = 10000


def _window(trial: ProfileFolder, start_us: int | None, end_us: int | None) -> tuple[int, int]:
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


def node_of(framework_node: str, system_nodes: list[str]) -> str:
    """The node a framework process belongs to (see the module's docstring)."""
    host = _host(framework_node)
    if host in system_nodes:
        return host
    if len(system_nodes) == 1:
        return system_nodes[0]
    return host


class _Gathered(TypedDict):
    """What :func:`_gather` reads of the window."""

    series: list[Series]
    events: FrameworkEvents
    files: list[dict[str, Any]]  # kineto_files'
    system_nodes: list[str]
    nodes: dict[str, str]  # framework process -> its node


def _gather(trial: ProfileFolder, start: int, end: int) -> _Gathered:
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


def timeline_nodes(trial: ProfileFolder, start_us: int | None = None, end_us: int | None = None) -> list[str]:
    """The nodes with data in the window, sorted (one timeline each)."""
    start, end = _window(trial, start_us, end_us)
    g = _gather(trial, start, end)
    return sorted(set(g["system_nodes"]) | set(g["nodes"].values()))


def _bucket_mean(ts: np.ndarray, vals: np.ndarray, points: int) -> tuple[np.ndarray, np.ndarray]:
    edges = np.linspace(0, len(ts), points + 1).astype(np.int64)
    starts = edges[:-1]
    counts = np.diff(edges)
    keep = counts > 0
    sums = np.add.reduceat(vals, starts[keep])
    return ts[starts[keep]], sums / counts[keep]


_DEVICE = re.compile(r"^(cpu|gpu)\d+$")
# a counter's value is named by its unit (Perfetto names a counter track "<event name> <arg name>")
_COUNTER_ARG = {"%": "%", "B/s": "bytes/s", "IOPS": "ops/s", "": "value"}


def counter_name(s: Series) -> str:
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


def counter_arg(s: Series) -> str:
    """The name of a counter event's one argument: the series' unit (``%``, ``bytes/s``,
    ``ops/s``; ``value`` when unknown), so that Perfetto's track reads ``cpu0 CPUUtilization %``
    (the metric named once) and chrome://tracing's counter ``cpu0 CPUUtilization`` has the series ``%``."""
    from smdebug.profiler.views.units import metric_unit

    return _COUNTER_ARG[metric_unit(s.name, s.dimension, s.type)]


def _counters(series: list[Series], max_points: int, downsampled: dict[str, Any]) -> list[dict[str, Any]]:
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


def _framework(events: FrameworkEvents, fw_nodes: list[str]) -> list[dict[str, Any]]:
    out = []
    pids = {fw: _FRAMEWORK_PID + i for i, fw in enumerate(fw_nodes)}
    for fw, pid in pids.items():
        out += meta_events(pid, f"framework {fw}", pid)
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
            out += meta_events(pids[fw], "", 0, tids[lane], name if lane == 0 else f"{name} (overlapping {lane})")
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
        out += meta_events(_RULES_PID, "", 0, tid, rule)
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
        out = meta_events(_RULES_PID, "profiler rules", _RULES_PID) + out
    return out


def build_timeline(
    trial: ProfileFolder,
    *,
    node: str | None = None,
    start_us: int | None = None,
    end_us: int | None = None,
    rule_reports: dict | None = None,
    max_counter_points: int = 20000,
) -> dict:
    """The Chrome trace object of ``node`` (None: the only node; an error naming them when there
    are several) over ``[start_us, end_us]`` (default: the whole profile); the options by keyword."""
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
        events += meta_events(_SYSTEM_PID, f"system {node}", _SYSTEM_PID)
        events += _counters(series, max_counter_points, downsampled)
    events += _framework(g["events"], fw_nodes)
    events += _verdicts(rule_reports or {}, end)
    for e in events:  # (integers: exact)
        if e["ph"] != "M":
            e["ts"] -= start
    events += kineto_events(trial, [f for f in g["files"] if f["fw_node"] in fw_nodes], _KINETO_PID, start)
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
