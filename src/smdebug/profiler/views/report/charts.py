"""The report's charts: matplotlib figures (no pyplot state) as inline PNG data URIs."""

from __future__ import annotations

import base64
import io
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from smdebug.profiler.reading.frames import Series, StepSpans

__all__ = ["png", "step_time_chart", "phases_chart", "system_chart", "heat_map_chart", "histogram_chart"]

_PHASE_COLORS = {
    "data loading": "#e07b39",
    "forward": "#3a7dc9",
    "backward": "#5aa469",
    "optimizer": "#9b59b6",
    "other": "#b0b0b0",
}


def _figure(w: float = 10, h: float = 3.2) -> Any:  # a matplotlib Figure (matplotlib is not analysed)
    from matplotlib.figure import Figure

    return Figure(figsize=(w, h), dpi=90, layout="constrained")


def png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


MAX_LINE_POINTS = 2000
MAX_BARS = 400


def bucket_means(values: np.ndarray, buckets: int) -> np.ndarray:
    """``values`` averaged over ``buckets`` equal consecutive runs (the last may be shorter)."""
    values = np.asarray(values, dtype=np.float64)
    if len(values) <= buckets:
        return values
    edges = np.linspace(0, len(values), buckets + 1).astype(np.int64)
    starts = edges[:-1][np.diff(edges) > 0]
    counts = np.diff(np.append(starts, len(values)))
    return np.add.reduceat(values, starts) / counts


def _thin(ts: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """At most MAX_LINE_POINTS points of a line: bucket means of times and values."""
    return bucket_means(ts, MAX_LINE_POINTS), bucket_means(values, MAX_LINE_POINTS)


def _rel_s(us: npt.ArrayLike, origin_us: float) -> np.ndarray:
    return (np.asarray(us, dtype=np.float64) - origin_us) / 1e6


def step_time_chart(steps: dict[str, StepSpans], origin_us: int) -> str:
    """Step duration over the run (one line per mode and node) beside its histogram."""
    fig = _figure(10, 3.2)
    ax, hx = fig.subplots(1, 2, width_ratios=[2.2, 1])
    for mode, spans in steps.items():
        nodes = np.asarray(spans.node_id).astype(str)
        for node in np.unique(nodes):
            sel = nodes == node
            label = mode if len(np.unique(nodes)) == 1 else f"{mode} {node}"
            t, d = _thin(spans.start_us[sel], spans.duration_us[sel] / 1e3)
            ax.plot(_rel_s(t, origin_us), d, ".-" if len(t) < 300 else "-", ms=3, lw=0.8, label=label)
        hx.hist(spans.duration_us / 1e3, bins=min(40, max(5, len(spans) // 3)), alpha=0.7, label=mode)
    ax.set_xlabel("time since the job started (s)")
    ax.set_ylabel("step duration (ms)")
    ax.set_title("step duration over the run")
    ax.legend(fontsize=8)
    hx.set_xlabel("step duration (ms)")
    hx.set_ylabel("steps")
    hx.set_title("histogram")
    return png(fig)


def phases_chart(phases: dict[str, np.ndarray], mode: str) -> str:
    """Stacked bars: each step's time by phase (more than MAX_BARS steps: the mean over equal runs
    of consecutive steps, and the axis says so)."""
    fig = _figure(10, 3.2)
    ax = fig.subplots()
    n = len(phases["total"])
    bars = min(n, MAX_BARS)
    x = np.arange(bars)
    bottom = np.zeros(len(x))
    for phase, color in _PHASE_COLORS.items():
        ms = bucket_means(phases[phase], MAX_BARS) / 1e3
        if len(x) > 60:  # bars touching: one outline a phase (ax.bar draws a patch a bar: 2,000 for 400)
            ax.stairs(
                bottom + ms, np.arange(bars + 1) - 0.5, baseline=bottom.copy(), fill=True, color=color, label=phase
            )
        else:
            ax.bar(x, ms, bottom=bottom, color=color, width=0.8, label=phase)
        bottom += ms
    ax.set_xlabel(
        f"{mode} step (in order)"
        if n <= MAX_BARS
        else f"{mode} steps in order, each bar the mean of ~{n / MAX_BARS:.0f} consecutive steps"
    )
    ax.set_ylabel("time (ms)")
    ax.set_title("time per step by phase")
    ax.legend(fontsize=8, ncol=5, loc="upper right")
    if n <= 40:
        ax.set_xticks(x, [str(s) for s in phases["step"]], fontsize=7)
    return png(fig)


def system_chart(series_by_panel: dict[str, list[tuple[str, Series]]], origin_us: int, title: str) -> str:
    """One panel per metric group (``{panel title: [(label, Series)]}``), time on x."""
    panels = [(k, v) for k, v in series_by_panel.items() if v]
    fig = _figure(10, 1.9 * len(panels) + 0.6)
    axes = np.atleast_1d(fig.subplots(len(panels), 1, sharex=True))
    for ax, (name, items) in zip(axes, panels):
        for label, s in items:
            t, v = _thin(s.timestamp_us, s.value)
            ax.plot(_rel_s(t, origin_us), v, lw=0.8, label=label)
        ax.set_ylabel(name, fontsize=8)
        if len(items) <= 8:
            ax.legend(fontsize=7, loc="upper right")
    axes[-1].set_xlabel("time since the job started (s)")
    fig.suptitle(title, fontsize=10)
    return png(fig)


def heat_map_chart(hm: dict[str, Any], origin_us: int, title: str, vmax: float = 100.0) -> str:
    """Rows (cores or devices) x time bins, colour = mean utilization in the bin."""
    rows = len(hm["rows"])
    fig = _figure(10, min(0.9 + 0.22 * rows, 8))
    ax = fig.subplots()
    edges = _rel_s(hm["edges_us"], origin_us)
    mesh = ax.pcolormesh(
        edges,
        np.arange(rows + 1),
        np.ma.masked_invalid(hm["values"]),
        vmin=0,
        vmax=vmax,
        cmap="viridis",
        shading="flat",
    )
    step = max(1, rows // 16)
    ax.set_yticks(np.arange(rows)[::step] + 0.5, hm["rows"][::step], fontsize=7)
    ax.set_xlabel("time since the job started (s)")
    ax.set_title(title, fontsize=10)
    fig.colorbar(mesh, ax=ax, label="%", pad=0.01)
    return png(fig)


def histogram_chart(values_ms: np.ndarray, title: str, xlabel: str) -> str:
    fig = _figure(6, 2.6)
    ax = fig.subplots()
    ax.hist(values_ms, bins=min(40, max(5, len(values_ms) // 3)), color="#e07b39")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("count")
    ax.set_title(title, fontsize=10)
    return png(fig)
