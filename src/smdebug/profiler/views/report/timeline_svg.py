"""A static picture of a Chrome trace object (what :func:`~smdebug.profiler.views.timeline.build_timeline`
returns): inline SVG, one lane per thread (nested slices stacked), one small chart per counter
track, rule slices in red. It is what the report shows of the slowest step, and what the docs'
timeline screenshot is made from (Perfetto's UI cannot be loaded offline); it is no replacement for
Perfetto or ``chrome://tracing`` to explore a trace.
"""

from __future__ import annotations

import hashlib
import html
from typing import Any

from smdebug.profiler.views.units import fmt_bytes_rate, fmt_us, sig

__all__ = ["timeline_svg"]

_LABEL_W = 250
_ROW_H = 14
_COUNTER_H = 26
_PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#ff9da7", "#9c755f", "#bab0ac"]


def _color(key: str) -> str:
    return _PALETTE[int(hashlib.md5(key.encode()).hexdigest()[:6], 16) % len(_PALETTE)]


def _names(events: list) -> tuple:
    procs, threads, order = {}, {}, {}
    for e in events:
        if e["ph"] != "M":
            continue
        if e["name"] == "process_name":
            procs[e["pid"]] = e["args"].get("name", str(e["pid"]))
        elif e["name"] == "thread_name":
            threads[(e["pid"], e["tid"])] = e["args"].get("name", str(e["tid"]))
        elif e["name"] == "process_sort_index":
            order[e["pid"]] = e["args"].get("sort_index", e["pid"])
    return procs, threads, order


def _short(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "\u2026"


def _with_unit(v: float, arg: str) -> str:
    """A counter's value with the unit its argument names (``%``, ``bytes/s``, ``ops/s``)."""
    if arg == "%":
        return f"{sig(v)} %"
    if arg == "bytes/s":
        return fmt_bytes_rate(v)
    if arg == "ops/s":
        return f"{sig(v)} IOPS"
    return sig(v)


def _depths(slices: list) -> list:
    """Stack depth of each slice (sorted by start) on one thread: nested slices go one row down."""
    ends: list = []
    out = []
    for ts, dur in slices:
        while ends and ends[-1] <= ts:
            ends.pop()
        out.append(len(ends))
        ends.append(ts + dur)
    return out


def timeline_svg(
    trace: dict,
    start_us: float | None = None,
    end_us: float | None = None,
    width: int = 1100,
    max_slices: int = 20000,
    max_depth: int = 4,
) -> str:
    """The SVG (a string) of ``trace`` between ``start_us`` and ``end_us`` (default: all of it)."""
    events = trace["traceEvents"]
    data = [e for e in events if e["ph"] != "M"]
    if not data:
        return "<p class='nodata'>The timeline holds no event.</p>"
    lo = min(e["ts"] for e in data) if start_us is None else start_us
    hi = max(e["ts"] + e.get("dur", 0) for e in data) if end_us is None else end_us
    span = max(hi - lo, 1)
    plot_w = width - _LABEL_W - 10
    procs, threads, order = _names(events)

    def x(t: float) -> float:
        return _LABEL_W + (min(max(t, lo), hi) - lo) / span * plot_w

    lanes: dict = {}
    counters: dict = {}
    units: dict = {}  # counter -> the name of its value (the timeline names it by its unit: %, bytes/s)
    for e in data:
        if e["ph"] == "C":
            if lo <= e["ts"] <= hi:
                for arg, v in list(e["args"].items())[:1]:
                    counters.setdefault((e["pid"], e["name"]), []).append((e["ts"], float(v)))
                    units[(e["pid"], e["name"])] = arg
        elif e["ph"] in ("X", "i", "I") and e["ts"] <= hi and e["ts"] + e.get("dur", 0) >= lo:
            lanes.setdefault((e["pid"], e["tid"]), []).append(e)
    parts, y = [], 22
    drawn = total = 0
    shown_pid = None

    def header(pid: Any, y: int) -> int:  # (a Chrome trace's pid: an int, or a string)
        parts.append(
            f"<text x='2' y='{y + 10}' class='proc'>{html.escape(_short(str(procs.get(pid, pid)), 60))}</text>"
        )
        return y + _ROW_H

    for key in sorted(lanes, key=lambda k: (order.get(k[0], k[0]), k[0], k[1])):
        lane = sorted(lanes[key], key=lambda e: (e["ts"], -e.get("dur", 0)))
        depth = _depths([(e["ts"], e.get("dur", 0)) for e in lane])
        rows = min(max(depth) + 1, max_depth)
        if key[0] != shown_pid:
            y, shown_pid = header(key[0], y), key[0]
        label = _short(str(threads.get(key, key[1])), 38)
        parts.append(f"<text x='12' y='{y + 10}' class='lbl'>{html.escape(label)}</text>")
        for e, d in zip(lane, depth):
            total += 1
            if d >= max_depth or drawn >= max_slices:
                continue
            drawn += 1
            x0 = x(e["ts"])
            w = max(x(e["ts"] + e.get("dur", 0)) - x0, 1.0)
            fill = "#d62728" if e.get("cat") == "rule" else _color(str(e.get("cat", "")) + str(e["name"]))
            tip = html.escape(f"{e['name']} ({e.get('dur', 0) / 1e3:.2f} ms)")
            parts.append(
                f"<rect x='{x0:.1f}' y='{y + d * _ROW_H}' width='{w:.1f}' height='{_ROW_H - 2}' "
                f"fill='{fill}'><title>{tip}</title></rect>"
            )
            if w > 60:
                parts.append(
                    f"<text x='{x0 + 3:.1f}' y='{y + d * _ROW_H + 10}' class='in'>"
                    f"{html.escape(str(e['name'])[: int(w / 6)])}</text>"
                )
        y += rows * _ROW_H + 4
    for (pid, name), pts in sorted(counters.items(), key=lambda kv: (order.get(kv[0][0], kv[0][0]), kv[0][1])):
        if pid != shown_pid:
            y, shown_pid = header(pid, y), pid
        vmax = max(max(v for _, v in pts), 1e-9)
        poly = " ".join(f"{x(t):.1f},{y + _COUNTER_H - v / vmax * (_COUNTER_H - 4):.1f}" for t, v in pts)
        parts.append(
            f"<text x='12' y='{y + 15}' class='lbl'>{html.escape(_short(name, 38))}</text>"
            f"<text x='{width - 12}' y='{y + 10}' class='tick' text-anchor='end'>max "
            f"{html.escape(_with_unit(vmax, units.get((pid, name), '')))}</text>"
            f"<polyline points='{poly}' fill='none' stroke='#4e79a7' stroke-width='1.2'/>"
        )
        y += _COUNTER_H + 4
    ticks = []
    for i in range(6):
        t = lo + span * i / 5
        anchor = "end" if i == 5 else "middle"
        ticks.append(
            f"<line x1='{x(t):.1f}' x2='{x(t):.1f}' y1='14' y2='{y}' class='grid'/>"
            f"<text x='{x(t):.1f}' y='11' class='tick' style='text-anchor:{anchor}'>{fmt_us(t - lo)}</text>"
        )
    note = (
        ""
        if drawn == total
        else (
            f"<text x='4' y='{y + 14}' class='lbl'>{drawn:,} of {total:,} slices drawn "
            f"(deeper than {max_depth} levels or beyond {max_slices:,} left out)</text>"
        )
    )
    height = y + (22 if note else 6)
    style = (
        "<style>.lbl{font:11px sans-serif;fill:#333}.proc{font:bold 11px sans-serif;fill:#111}.in{font:10px sans-serif;fill:#fff}"
        ".tick{font:10px sans-serif;fill:#666}.grid{stroke:#ddd}</style>"
    )
    return (
        f"<svg width='{width}' height='{height}' "
        f"viewBox='0 0 {width} {height}' role='img'>{style}{''.join(ticks)}{''.join(parts)}{note}</svg>"
    )
