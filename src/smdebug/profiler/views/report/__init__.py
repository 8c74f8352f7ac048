"""The profiler report: one self-contained HTML page about a profiled training job.

``render_profiler_report(trial, rule_reports, path)`` writes it. ``trial`` is the profiler trial
(``create_trial(path, profiler=True)``); ``rule_reports`` maps a profiler rule's name to its report
dict in 1.0.34's schema (``RuleTriggered``, ``Violations``, ``Details``, ``Datapoints``,
``RuleParameters``; a ``Recommendation`` or ``status`` of ours is shown when present).

Sections: summary (job phases: initialization, training loop, finalization), the rules' verdicts
with evidence and what to do, step time over the run and its histogram, time per step by phase, the
slowest steps and what ran in them, the slowest step on the timeline (inline SVG), the data loader, system usage over time (CPU, GPU, memory, I/O)
with its statistics, and heat maps per core and per GPU. Charts are inline PNG images; the page
loads nothing from elsewhere and runs no script. A section without data says so.
"""

from __future__ import annotations

import html
import os
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from smdebug.analysis.page_kit import document
from smdebug.profiler.views.report import charts, stats
from smdebug.profiler.views.report.page import CSS, fmt_ms, fmt_s, img, rules_section, section, table, verdict_of
from smdebug.profiler.views.units import (
    fmt_at,
    fmt_clock,
    fmt_count,
    fmt_metric,
    fmt_percent,
    metric_unit,
    sig,
)

if TYPE_CHECKING:
    from smdebug.profiler.reading.folder import ProfileFolder
    from smdebug.profiler.reading.frames import Series, StepSpans

__all__ = ["render_profiler_report", "write_report", "profiler_report_html"]


def _summary(
    trial: ProfileFolder,
    job: stats.JobSummary,
    fw_nodes: list[str],
    sys_nodes: list[str],
    rule_reports: dict[str, dict[str, Any]],
) -> str:
    rows = [
        ("job start (first record)", fmt_clock(job.start_us)),
        ("job end (last record)", f"{fmt_clock(job.end_us)} ({fmt_at(job.end_us, job.start_us)})"),
        ("total", fmt_s(job.total_s)),
        ("initialization (start to first step)", fmt_s(job.initialization_s)),
        ("training loop (first step's start to last step's end)", fmt_s(job.training_loop_s)),
        ("finalization (last step's end to end)", fmt_s(job.finalization_s)),
        ("steps", ", ".join(f"{m}: {fmt_count(n)}" for m, n in job.steps.items()) or "none recorded"),
        ("nodes (system metrics)", ", ".join(sys_nodes) or "none"),
        ("framework processes", ", ".join(fw_nodes) or "none"),
    ]
    fired = [n for n, r in sorted((rule_reports or {}).items()) if verdict_of(r)[1] == "fired"]
    glance = (
        f"<p class='fired'>Rules that fired: {html.escape(', '.join(fired))} (see "
        "<a href='#rules'>what to fix</a>).</p>"
        if fired
        else ""
    )
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in job.notes)
    notes = f"<ul class='meta' id='summary-notes'>{notes}</ul>" if notes else ""
    lead = (
        "<p class='meta'>Times in this report are after the job's start (its first record): "
        "<code>+12.3 s</code>. The three phases add up to the total.</p>"
    )
    return section("summary", "Training job summary", glance + lead + table(["", ""], rows, tid="job-summary") + notes)


def _step_section(steps: dict[str, StepSpans], origin: int) -> str:
    if not steps:
        return section(
            "step-time",
            "Step time",
            "<p class='nodata'>No step events were recorded: the framework "
            "profiler did not run or saved no step (check the profiler config's framework metrics).</p>",
        )
    rows = []
    for mode, s in steps.items():
        d = s.duration_us.astype(np.float64)
        p50, p95 = np.percentile(d, [50, 95])
        rows.append((mode, len(s), fmt_ms(d.mean()), fmt_ms(p50), fmt_ms(p95), fmt_ms(d.max()), fmt_ms(d.min())))
    body = img(charts.step_time_chart(steps, origin), "step time") + table(
        ["mode", "steps", "mean", "p50", "p95", "max", "min"], rows, tid="step-stats"
    )
    return section("step-time", "Step time over the run", body)


def _phase_section(phases: dict[str, np.ndarray] | None, mode: str | None) -> str:
    if phases is None:
        return section("phases", "Time per step by phase", "<p class='nodata'>No steps: nothing to break down.</p>")
    total = float(np.sum(phases["total"]))
    rows = [
        (
            p,
            fmt_s(float(np.sum(phases[p])) / 1e6),
            fmt_percent(100 * float(np.sum(phases[p])) / total) if total else "-",
        )
        for p in (*stats.PHASES, "other")
    ]
    note = (
        "<p class='meta'>An event counts in the step in which it starts (clipped to the step's end); "
        "'other' is the step time no recorded phase covers.</p>"
    )
    return section(
        "phases",
        f"Time per {mode} step by phase",
        img(charts.phases_chart(phases, str(mode)), "phases per step")
        + note
        + table(["phase", "total", "share of step time"], rows, tid="phase-totals"),
    )


def _slow_section(slow: list[stats.SlowStep], origin: int) -> str:
    if not slow:
        return section("slowest-steps", "The slowest steps", "<p class='nodata'>No steps were recorded.</p>")
    rows = [
        (
            str(s["step"]),
            s["node"],
            fmt_at(s["start_us"], origin),
            fmt_ms(s["duration_us"]),
            f"{sig(s['times_median'])}x",
            "; ".join(f"{t['phase']} / {t['name']}: {fmt_ms(t['us'])}" for t in s["top"]) or "no event recorded in it",
        )
        for s in slow
    ]
    return section(
        "slowest-steps",
        "The slowest steps and what ran in them",
        table(["step", "process", "started at", "duration", "x median", "what took the time"], rows, tid="slow-steps"),
    )


def _timeline_section(trial: ProfileFolder, slow: list[stats.SlowStep], series: list[Series]) -> str:
    from smdebug.exceptions import SMDebugValueError
    from smdebug.profiler.views.report.timeline_svg import timeline_svg
    from smdebug.profiler.views.timeline import build_timeline, node_of, timeline_nodes

    title = "The slowest step on the timeline"
    if not slow:
        return section("timeline", title, "<p class='nodata'>No steps were recorded.</p>")
    s = slow[0]
    margin = s["duration_us"] // 10
    lo, hi = s["start_us"] - margin, s["start_us"] + s["duration_us"] + margin
    node = node_of(s["node"], sorted({x.node_id for x in series}))
    try:
        # the nodes of the window (a process goes with the only system node there is: in a window
        # without system samples, that may be no node of the whole profile's)
        shown = timeline_nodes(trial, lo, hi)
        pick: str | None = node
        if node not in shown:
            pick = node_of(s["node"], shown) if shown else None
        trace = build_timeline(trial, node=pick, start_us=lo, end_us=hi)
    except SMDebugValueError as exc:
        return section(
            "timeline", title, f"<p class='nodata'>The timeline could not be drawn: {html.escape(str(exc))}</p>"
        )
    lead = (
        f"<p>Step {s['step']} of {html.escape(s['node'])} ({fmt_ms(s['duration_us'])}) with a tenth of its "
        "length either side: framework events, torch.profiler's operators where the step was profiled in "
        "detail, system metrics. For the whole run: <code>smdebug profile timeline PROFILE -o trace.json</code>, "
        "opened in Perfetto or chrome://tracing.</p>"
    )
    base = trace["otherData"]["ts_base_us"]  # (the trace's times are after it)
    return section("timeline", title, lead + timeline_svg(trace, lo - base, hi - base))


def _loader_section(dl: dict[str, Any]) -> str:
    f = dl["fetch"]
    if not f["count"]:
        return section(
            "dataloader",
            "Data loader",
            "<p class='nodata'>No data-loader events were recorded "
            "(no DataLoaderIter events: the loader was not instrumented or not used).</p>",
        )
    share = dl["share_of_step_time"]
    lead = (
        f"<p>{fmt_count(f['count'])} batches fetched, {fmt_s(f['total_s'])} in all"
        + (f", {fmt_percent(100 * share)} of the step time" if share is not None else "")
        + ".</p>"
    )

    def row(label: str, x: dict[str, Any]) -> tuple[object, ...]:
        return (label, x["count"], *(fmt_s(x[k] / 1e3) for k in ("mean_ms", "p50_ms", "p95_ms", "max_ms")))

    rows = [row("batch fetch", f)]
    w = dl["worker_batches"]
    if w["count"]:
        rows.append(row("batch built by a worker", w))
    body = lead + table(["", "count", "mean", "p50", "p95", "max"], rows, tid="loader-stats")
    if dl["loaders"]:
        body += table(
            ["loader", "num_workers", "pin_memory"],
            [(x["name"], x["num_workers"], x["pin_memory"]) for x in dl["loaders"]],
            tid="loaders",
        )
    body += img(charts.histogram_chart(np.asarray(dl["fetch_us"]) / 1e3, "batch fetch time", "ms"), "fetch histogram")
    return section("dataloader", "Data loader", body)


def _mean_or_each(items: list[Series], node: str, label: str) -> list[tuple[str, Series]]:
    """Up to 8 series as they are, more as their mean (when they share their times)."""
    if len(items) <= 8:
        return [(s.name, s) for s in items]
    t = items[0].timestamp_us
    if all(len(s) == len(t) and np.array_equal(s.timestamp_us, t) for s in items):
        mean = items[0].__class__(
            node, items[0].type, label, items[0].dimension, t, np.mean([s.value for s in items], axis=0)
        )
        return [(f"mean of {len(items)} {label}", mean)]
    return [(s.name, s) for s in items]


def _panels(series: list[Series], node: str) -> dict[str, list[tuple[str, Series]]]:
    """The system chart's panels of one node, each of one unit (its title says which)."""
    mine = [s for s in series if s.node_id == node]

    def unit(s: Series) -> str:
        return metric_unit(stats.metric_of(s), "", s.type)

    return {
        "CPU (%)": _mean_or_each([s for s in mine if s.dimension == "CPUUtilization"], node, "cores"),
        "GPU (%)": [(s.name, s) for s in mine if s.dimension == "GPUUtilization"],
        "GPU memory (%)": [(s.name, s) for s in mine if s.dimension == "GPUMemoryUtilization"],
        "memory (%)": [(stats.metric_of(s), s) for s in mine if s.type == "memory" and unit(s) == "%"],
        "the job (%)": [(stats.metric_of(s), s) for s in mine if s.type == "job" and unit(s) == "%"],
        "I/O wait (%)": _mean_or_each([s for s in mine if s.dimension == "I/OWaitPercentage"], node, "cores"),
        "disk I/O (IOPS)": [(stats.metric_of(s), s) for s in mine if s.type == "i/o" and unit(s) == "IOPS"],
        "disk I/O (bytes/s)": [(stats.metric_of(s), s) for s in mine if s.type == "i/o" and unit(s) == "B/s"],
        "network (bytes/s)": [(stats.metric_of(s), s) for s in mine if s.type == "network" and unit(s) == "B/s"][:8],
    }


def _system_sections(series: list[Series], origin: int, end: int) -> str:
    nodes = sorted({s.node_id for s in series})
    if not nodes:
        none = "<p class='nodata'>No system metrics were recorded (the system monitor did not run).</p>"
        return section("system", "System usage", none) + section("heatmaps", "Heat maps", none)
    rows = [
        (
            r["node"],
            r["metric"],
            r["unit"] or "-",
            *(fmt_metric(r[k], r["symbol"]) for k in ("max", "p99", "p95", "p50", "min")),
            r["samples"],
        )
        for r in stats.system_stats(series)
    ]
    body = table(["node", "metric", "unit", "max", "p99", "p95", "p50", "min", "samples"], rows, tid="system-stats")
    heat = ""
    for node in nodes:
        body += img(charts.system_chart(_panels(series, node), origin, f"system usage on {node}"), f"system {node}")
        for dim, what in (
            ("CPUUtilization", "CPU utilization per core"),
            ("GPUUtilization", "GPU utilization per GPU"),
            ("GPUMemoryUtilization", "GPU memory per GPU"),
        ):
            rows_ = sorted(
                (s for s in series if s.node_id == node and s.dimension == dim), key=lambda s: (len(s.name), s.name)
            )
            if rows_:
                hm = stats.heat_map(rows_, origin, end, bins=max(1, min(120, max(len(s) for s in rows_))))
                heat += img(charts.heat_map_chart(hm, origin, f"{what} on {node}"), f"{dim} heat map {node}")
    if not heat:
        heat = "<p class='nodata'>No per-core or per-GPU utilization was recorded.</p>"
    return section("system", "System usage over time", body) + section("heatmaps", "Heat maps per core and GPU", heat)


def profiler_report_html(trial: ProfileFolder, rule_reports: dict[str, dict[str, Any]] | None = None) -> str:
    """The report's HTML (see the module's docstring)."""
    rule_reports = dict(rule_reports or {})
    first, last = trial.first_timestamp, stats.end_timestamp(trial)
    if first is None or last is None:
        from smdebug.exceptions import SMDebugValueError

        raise SMDebugValueError(
            f"{getattr(trial, 'path', trial)}: no profiler data to report on (no system "
            "metrics and no framework events)"
        )
    first, last = int(first), int(last)
    series = trial.system_series(first, last)
    events = trial.framework_events(first, last)
    steps = stats.all_steps(trial)
    job = stats.job_summary(trial, steps, series, events)
    mode = "TRAIN" if "TRAIN" in steps else next(iter(steps), None)
    phases = stats.phases_per_step(steps[mode], events) if mode else None
    fw_nodes = sorted({str(n) for n in events.node_id})
    slow = stats.slowest_steps(steps[mode], events) if mode else []
    parts = [
        f"<h1>Profiler report: {html.escape(os.path.basename(str(trial.path).rstrip('/')) or str(trial.path))}</h1>",
        f"<p class='meta'>{html.escape(str(trial.path))} &middot; written {time.strftime('%Y-%m-%d %H:%M:%S')}</p>",
        _summary(trial, job, fw_nodes, sorted({s.node_id for s in series}), rule_reports),
        rules_section(rule_reports, job.start_us),
        _step_section(steps, job.start_us),
        _phase_section(phases, mode),
        _slow_section(slow, job.start_us),
        _timeline_section(trial, slow, series),
        _loader_section(stats.dataloader_stats(events, phases)),
        _system_sections(series, job.start_us, job.end_us),
    ]
    body = "\n".join(parts)
    return document(f"Profiler report: {trial.path}", body, CSS)


def render_profiler_report(
    trial: ProfileFolder, rule_reports: dict[str, dict[str, Any]] | None, path: str | os.PathLike[str]
) -> str:
    """Write the report of ``trial`` with the rules' ``rule_reports`` to ``path`` (an .html file);
    returns ``path``. The page is built whole before the file is opened."""
    page = profiler_report_html(trial, rule_reports)
    folder = os.path.dirname(os.path.abspath(os.fspath(path)))
    os.makedirs(folder, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(page)
    return os.fspath(path)


# the name the ProfilerReport rule calls (smdebug.rules.profiler.report.HTML_RENDERER)
write_report = render_profiler_report
