"""The numbers of the profiler report, computed from the profiler trial's columnar data
(:mod:`smdebug.profiler.reading.frames`): job phases, steps, phases per step, the slowest steps and
what ran in them, system metric statistics and heat maps, the data loader.

Phases per step: an event counts in the step (of the same framework process) in which it starts,
clipped to that step's end; "other" is the rest of the step (time between the recorded phases).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from smdebug.profiler.reading.frames import FrameworkEvents, Series, StepSpans, phase_mask
from smdebug.profiler.views.units import fmt_at, fmt_us, metric_unit, unit_word

if TYPE_CHECKING:
    from smdebug.profiler.reading.folder import ProfileFolder

__all__ = [
    "PHASES",
    "MODES",
    "JobSummary",
    "job_summary",
    "all_steps",
    "phases_per_step",
    "slowest_steps",
    "system_stats",
    "metric_of",
    "heat_map",
    "dataloader_stats",
    "STAT_UNITS",
    "end_timestamp",
    "SlowStep",
]

MODES = ("TRAIN", "EVAL", "PREDICT", "GLOBAL")
# report phase -> the framework phases (1.0.34's event_phase) that make it
PHASES = {
    "data loading": ("DataLoaderIter", "DataIterator"),
    "forward": ("Forward", "Forward-node"),
    "backward": ("Backward", "Backward-node"),
    "optimizer": ("Optimizer",),
}
_DEVICE = re.compile(r"^(cpu|gpu)\d+$")
# the unit of a type's usual metrics, in words (a metric's own unit: units.metric_unit; "i/o" holds IOPS
# and bytes/s, so it has none of its own)
STAT_UNITS = {
    "cpu": "percent",
    "gpu": "percent",
    "memory": "percent",
    "i/o": "",
    "network": "bytes/s",
    "job": "percent",
}


def _steps_of(trial: ProfileFolder, mode: str) -> StepSpans:
    return trial.steps(mode)


def all_steps(trial: ProfileFolder) -> dict[str, StepSpans]:
    """``{mode name: StepSpans}`` of the modes that have steps."""
    out = {}
    for mode in MODES:
        spans = _steps_of(trial, mode)
        if len(spans):
            out[mode] = spans
    return out


@dataclass
class JobSummary:
    """The job's phases, computed so that they add up: ``start_us`` is the earliest record (or step),
    ``end_us`` the newest of any stream (or step end), so initialization, training loop and
    finalization are never negative and never longer than the total. ``notes`` say where the data
    is partial (no end marker, streams that stop at different times, no steps)."""

    start_us: int
    end_us: int
    first_step_us: int | None
    last_step_us: int | None  # the end of the last step
    steps: dict  # mode -> number of steps
    notes: list = field(default_factory=list)

    @property
    def initialization_s(self) -> float | None:
        return None if self.first_step_us is None else max(self.first_step_us - self.start_us, 0) / 1e6

    @property
    def training_loop_s(self) -> float | None:
        if self.first_step_us is None or self.last_step_us is None:
            return None
        return max(self.last_step_us - self.first_step_us, 0) / 1e6

    @property
    def finalization_s(self) -> float | None:
        return None if self.last_step_us is None else max(self.end_us - self.last_step_us, 0) / 1e6

    @property
    def total_s(self) -> float:
        return max(self.end_us - self.start_us, 0) / 1e6


def end_timestamp(trial: ProfileFolder) -> int | None:
    """The newest data of any stream (``get_end_timestamp``; ``get_latest_timestamp`` for a trial
    without it): the report covers everything recorded, not only the span every stream covers."""
    latest = trial.get_latest_timestamp()
    if latest is None:  # no data
        return None
    fn = getattr(trial, "get_end_timestamp", None)
    end = fn() if fn is not None else None
    return latest if end is None else max(end, latest)


def job_summary(
    trial: ProfileFolder,
    steps: dict[str, StepSpans],
    series: list[Series] | None = None,
    events: FrameworkEvents | None = None,
) -> JobSummary:
    """The job's phases from the trial's bounds and its steps (see :class:`JobSummary`); with
    ``series`` and ``events`` (what the report read) the notes also say when the system metrics and
    the framework events end far apart."""
    starts = [int(s.start_us.min()) for s in steps.values() if len(s)]
    ends = [int(s.end_us.max()) for s in steps.values() if len(s)]
    first, last = trial.first_timestamp, end_timestamp(trial)
    start = int(min([first] + starts if first is not None else starts))
    end = int(max([last] + ends if last is not None else ends))
    end = max(end, start)
    notes = []
    finished = getattr(trial, "job_finished", None)
    if callable(finished) and not finished():
        notes.append(
            "the profile has no end marker (the job is still running, or stopped before the profiler "
            "closed): the times cover what was written so far"
        )
    if not steps:
        notes.append(
            "no step was recorded, so the job cannot be split into initialization, training loop and finalization"
        )
    sys_end = max((int(s.timestamp_us[-1]) for s in series or [] if len(s)), default=None)
    fw_end = int(events.end_us.max()) if events is not None and len(events) else None
    if sys_end is not None and fw_end is not None:
        gap = abs(sys_end - fw_end)
        if gap > max(1_000_000, (end - start) // 20):
            notes.append(
                f"the system metrics end at {fmt_at(sys_end, start)} and the framework events at "
                f"{fmt_at(fw_end, start)} ({fmt_us(gap)} apart): one stream stopped earlier "
                "(the end is the later one)"
            )
    elif steps and sys_end is None:
        notes.append("no system metrics were recorded: the times come from the framework events alone")
    return JobSummary(
        start,
        end,
        min(starts) if starts else None,
        max(ends) if ends else None,
        {m: len(s) for m, s in steps.items()},
        notes,
    )


def _phase_mask(events: FrameworkEvents, names: Iterable[str]) -> np.ndarray:
    """Whether each event's phase is one of ``names``."""
    wanted = frozenset(names)
    return phase_mask(events.phase, wanted.__contains__)


def phases_per_step(spans: StepSpans, events: FrameworkEvents) -> dict[str, np.ndarray]:
    """``{"step": [...], "node": [...], "total": us, <phase>: us..., "other": us}`` (arrays, one row per
    step span, in the order of ``spans``)."""
    n = len(spans)
    out = {"step": spans.step, "node": spans.node_id, "total": spans.duration_us.astype(np.float64)}
    for phase in PHASES:
        out[phase] = np.zeros(n)
    nodes = np.asarray(spans.node_id).astype(str)
    ev_nodes = np.asarray(events.node_id).astype(str)
    for node in np.unique(nodes):
        rows = np.flatnonzero(nodes == node)
        order = rows[np.argsort(spans.start_us[rows], kind="stable")]
        starts, ends = spans.start_us[order], spans.end_us[order]
        for phase, names in PHASES.items():
            sel = np.flatnonzero((ev_nodes == node) & _phase_mask(events, names))
            if not len(sel):
                continue
            es, ee = events.start_us[sel], events.end_us[sel]
            k = np.searchsorted(starts, es, side="right") - 1
            ok = (k >= 0) & (es < ends[np.clip(k, 0, None)])
            k, es, ee = k[ok], es[ok], ee[ok]
            dur = np.minimum(ee, ends[k]) - es
            np.add.at(out[phase], order[k], dur.astype(np.float64))
    known = sum(out[p] for p in PHASES)
    out["other"] = np.clip(out["total"] - known, 0, None)
    return out


class SlowStep(TypedDict):
    """A row of :func:`slowest_steps`."""

    step: int
    node: str  # its framework process
    start_us: int
    duration_us: int
    times_median: float  # its duration over the median step's
    top: list[dict[str, Any]]  # {"phase", "name", "us"} of the events that took most of it


def slowest_steps(spans: StepSpans, events: FrameworkEvents, n: int = 10, top_events: int = 3) -> list[SlowStep]:
    """The ``n`` longest steps, each with the events that took most of it (by total time, the step
    events themselves left out)."""
    if not len(spans):
        return []
    order = np.argsort(-spans.duration_us, kind="stable")[:n]
    not_step = ~phase_mask(events.phase, lambda p: str(p).startswith("Step:"))
    ev_nodes = np.asarray(events.node_id).astype(str)
    med = float(np.median(spans.duration_us))
    out: list[SlowStep] = []
    for i in order.tolist():
        lo, hi, node = int(spans.start_us[i]), int(spans.end_us[i]), str(spans.node_id[i])
        sel = np.flatnonzero(not_step & (ev_nodes == node) & (events.end_us > lo) & (events.start_us < hi))
        totals: dict[tuple[str, str], int] = {}
        for j in sel.tolist():
            key = (str(events.phase[j]), str(events.name[j]))
            clipped = min(int(events.end_us[j]), hi) - max(int(events.start_us[j]), lo)
            totals[key] = totals.get(key, 0) + clipped
        top = sorted(totals.items(), key=lambda kv: -kv[1])[:top_events]
        out.append(
            {
                "step": int(spans.step[i]),
                "node": node,
                "start_us": lo,
                "duration_us": hi - lo,
                "times_median": (hi - lo) / med if med > 0 else float("nan"),
                "top": [{"phase": p, "name": nm, "us": us} for (p, nm), us in top],
            }
        )
    return out


def metric_of(s: Series) -> str:
    """A series' metric: its dimension (``cpu3`` -> ``CPUUtilization``, the job's ``cpu`` ->
    ``JobCPUDemand``), else its name (``MemoryUsedPercent``, ``ReadThroughputInBytesPerSecond``;
    network rows' dimension, ``Algorithm``, names no metric)."""
    if (
        s.dimension
        and s.dimension != "Algorithm"
        and (_DEVICE.match(s.name) or s.type == "job" or s.name in ("cpu", "memory"))
    ):
        return s.dimension
    return s.name if s.name else s.dimension


def system_stats(series: list[Series]) -> list[dict[str, Any]]:
    """One row per (node, type, dimension): max, p99, p95, p50, min over all devices' samples (as
    1.0.34's report), the number of samples, and the metric's unit (``unit`` in words: "percent",
    "bytes/s", "operations/s"; ``symbol``: "%", "B/s", "IOPS"; see units.metric_unit)."""
    groups: dict[tuple[str, str, str], list[np.ndarray]] = {}
    for s in series:
        groups.setdefault((s.node_id, s.type, metric_of(s)), []).append(np.asarray(s.value, dtype=np.float64))
    rows = []
    for (node, typ, dim), parts in sorted(groups.items()):
        v = np.concatenate(parts)
        v = v[np.isfinite(v)]
        if not len(v):
            continue
        p99, p95, p50 = np.percentile(v, [99, 95, 50])
        symbol = metric_unit(dim, "", typ)
        rows.append(
            {
                "node": node,
                "type": typ,
                "metric": dim,
                "unit": unit_word(symbol),
                "symbol": symbol,
                "max": float(v.max()),
                "p99": float(p99),
                "p95": float(p95),
                "p50": float(p50),
                "min": float(v.min()),
                "samples": int(len(v)),
            }
        )
    return rows


def heat_map(series: list[Series], start_us: int, end_us: int, bins: int = 120) -> dict[str, Any]:
    """``{"rows": [labels], "values": 2-D array rows x bins (mean per bin, NaN where no sample),
    "edges_us": bin edges}`` of ``series`` (one row each, e.g. the cores of one node)."""
    edges = np.linspace(start_us, max(end_us, start_us + 1), bins + 1)
    values = np.full((len(series), bins), np.nan)
    for r, s in enumerate(series):
        if not len(s):
            continue
        k = np.clip(np.searchsorted(edges, s.timestamp_us, side="right") - 1, 0, bins - 1)
        sums = np.bincount(k, weights=np.asarray(s.value, dtype=np.float64), minlength=bins)
        counts = np.bincount(k, minlength=bins)
        with np.errstate(invalid="ignore", divide="ignore"):
            values[r] = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    return {"rows": [s.name for s in series], "values": values, "edges_us": edges}


def _percentiles(us: np.ndarray) -> dict[str, Any]:
    if not len(us):
        return {"count": 0}
    p50, p95 = np.percentile(us, [50, 95])
    return {
        "count": int(len(us)),
        "total_s": float(us.sum()) / 1e6,
        "mean_ms": float(us.mean()) / 1e3,
        "p50_ms": float(p50) / 1e3,
        "p95_ms": float(p95) / 1e3,
        "max_ms": float(us.max()) / 1e3,
    }


def dataloader_stats(events: FrameworkEvents, phases: dict[str, np.ndarray] | None) -> dict[str, Any]:
    """Batch loading times, the loaders' settings (num_workers, pin_memory from
    ``DataLoaderIterInitialize``), worker batches, and loading's share of the step time."""
    fetch = events.take(_phase_mask(events, PHASES["data loading"]))
    init = events.take(_phase_mask(events, ("DataLoaderIterInitialize",)))
    workers = events.take(_phase_mask(events, ("DataLoaderWorker",)))
    loaders = []
    for i in range(len(init)):
        args = init.args[i] if init.args else None
        args = args or {}
        loaders.append(
            {"name": str(init.name[i]), "num_workers": args.get("num_workers"), "pin_memory": args.get("pin_memory")}
        )
    share = None
    if phases is not None and float(np.sum(phases["total"])) > 0:
        share = float(np.sum(phases["data loading"]) / np.sum(phases["total"]))
    return {
        "fetch": _percentiles(fetch.duration_us.astype(np.float64)),
        "fetch_us": fetch.duration_us,
        "loaders": loaders,
        "worker_batches": _percentiles(workers.duration_us.astype(np.float64)),
        "share_of_step_time": share,
    }
