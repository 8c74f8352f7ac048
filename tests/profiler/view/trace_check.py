"""Structural checks of a Chrome trace object (what Perfetto's and chrome://tracing's JSON
importers need): the JSON object format, every event with ph/ts/pid/tid, complete events with a
non-negative dur, counters with numeric values, instant events with a scope, non-metadata events
sorted by ts and not negative (Perfetto drops an event before 0), and the complete events of each
thread nested (a slice that starts inside another ends inside it: Perfetto's rule; chrome://tracing's
importer takes anything without a warning).

Perfetto's JSON importer (trace_processor's json_trace_tokenizer/parser) also wants: a pid or tid
an integer in [0, 2**32) (another number becomes 0) or a string; a flow (s/t/f) id an integer (a
string id is read as hexadecimal, and the flow dropped when it is not); process_name/thread_name
metadata with a non-empty string ``args.name``; every flow end (f) after a start (s) of its id."""

from __future__ import annotations

import json
import math

PHASES = {"X", "B", "E", "i", "I", "C", "M", "s", "t", "f"}


def trace_problems(trace) -> list[str]:
    out = []
    if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
        return ["not the JSON object format: no traceEvents list"]
    if trace.get("displayTimeUnit") not in ("ms", "ns"):
        out.append(f"displayTimeUnit {trace.get('displayTimeUnit')!r}")
    json.dumps(trace, allow_nan=False)  # strict JSON: raises on NaN/inf
    last = -math.inf
    seen_data = False
    for i, e in enumerate(trace["traceEvents"]):
        where = f"event {i} {e.get('name')!r}"
        for key in ("ph", "ts", "pid", "tid"):
            if key not in e:
                out.append(f"{where}: no {key}")
        ph = e.get("ph")
        if ph not in PHASES:
            out.append(f"{where}: phase {ph!r}")
        for key in ("pid", "tid"):
            v = e.get(key)
            if not (isinstance(v, str) or (type(v) is int and 0 <= v < 2**32)):
                out.append(f"{where}: {key} {v!r} is neither a string nor an integer in [0, 2**32)")
        if ph in ("s", "t", "f") and type(e.get("id")) is not int:
            out.append(f"{where}: flow id {e.get('id')!r} is not an integer")
        if ph == "M" and e.get("name") in ("process_name", "thread_name"):
            name = (e.get("args") or {}).get("name")
            if not isinstance(name, str) or not name:
                out.append(f"{where}: {e['name']} without a name")
        if not isinstance(e.get("ts"), (int, float)) or isinstance(e.get("ts"), bool):
            out.append(f"{where}: ts {e.get('ts')!r} is not a number")
            continue
        if ph == "M":
            if seen_data:
                out.append(f"{where}: metadata after data events")
            continue
        seen_data = True
        if e["ts"] < 0:
            out.append(f"{where}: ts {e['ts']} is negative (Perfetto drops it)")
        if e["ts"] < last:
            out.append(f"{where}: ts {e['ts']} before the previous {last}")
        last = e["ts"]
        if ph == "X" and not (isinstance(e.get("dur"), (int, float)) and e["dur"] >= 0):
            out.append(f"{where}: complete event without a dur >= 0")
        if ph == "C":
            args = e.get("args") or {}
            if not args or not all(isinstance(v, (int, float)) and math.isfinite(v) for v in args.values()):
                out.append(f"{where}: counter without finite numeric values: {args}")
        if ph == "i" and e.get("s") not in ("g", "p", "t"):
            out.append(f"{where}: instant event without a scope")
    return out + nesting_problems(trace) + flow_problems(trace)


def flow_problems(trace) -> list[str]:
    """Flow steps and ends (t, f) without an earlier start (s) of the same (cat, name, id)."""
    started, out = set(), []
    for e in trace["traceEvents"]:
        key = (e.get("cat"), e.get("name"), e.get("id"))
        if e.get("ph") == "s":
            started.add(key)
        elif e.get("ph") in ("t", "f") and key not in started:
            out.append(f"flow {e.get('ph')} {key} at {e.get('ts')} without a start before it")
    return out


def nesting_problems(trace) -> list[str]:
    """Complete events of one (pid, tid) that overlap without nesting, with ends computed as the
    viewers do (ts + dur)."""
    by_thread: dict = {}
    for e in trace["traceEvents"]:
        if e.get("ph") == "X" and isinstance(e.get("dur"), (int, float)):
            by_thread.setdefault((e["pid"], e["tid"]), []).append(e)
    out = []
    for (pid, tid), slices in by_thread.items():
        slices.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack: list = []
        for e in slices:
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"]:
                stack.pop()
            if stack and e["ts"] + e["dur"] > stack[-1]["ts"] + stack[-1]["dur"]:
                out.append(
                    f"pid {pid} tid {tid}: {e['name']!r} at {e['ts']} ends "
                    f"{e['ts'] + e['dur'] - stack[-1]['ts'] - stack[-1]['dur']} us after {stack[-1]['name']!r}"
                )
            stack.append(e)
    return out
