"""The profiler report: the numbers (phases per step, slowest steps, system statistics, heat maps)
and the page in headless Chromium (renders, no console errors, every section, every chart)."""

from __future__ import annotations

import numpy as np
import pytest
from synth import STALL_STEP, STALL_US, T0, SynthTrial

from chromium import needs_chromium
from smdebug.exceptions import SMDebugValueError
from smdebug.profiler.views.report import profiler_report_html, render_profiler_report, stats

SECTIONS = ["summary", "rules", "step-time", "phases", "slowest-steps", "timeline", "dataloader", "system", "heatmaps"]
REPORTS = {
    "StepOutlier": {
        "RuleTriggered": 1,
        "Violations": 1,
        "Datapoints": 12,
        "Details": {"step_details": {"algo-1": {"max": 500.0, "p50": 100.0}}},
        "RuleParameters": "threshold:3\nmode:None\nn_outliers:10\nstddev:3",
        "Verdict": {
            "status": "issues found",
            "message": "step 7 took 5.0x the median",
            "fired_windows": [[T0 + 1_700_000, T0 + 2_200_000]],
        },
    },
    "GPUMemoryIncrease": {
        "RuleTriggered": 0,
        "Violations": 0,
        "Datapoints": 0,
        "Details": {},
        "Verdict": {
            "status": "no GPU data",
            "message": "no GPU data: the profile holds no GPU metrics in 3 windows",
            "fired_windows": [],
        },
    },
    "CPUBottleneck": {
        "RuleTriggered": 0,
        "Violations": 0,
        "Datapoints": 40,
        "Details": {},
        "RuleParameters": "threshold:50\ncpu_threshold:90",
    },
    "LowGPUUtilization": {"RuleTriggered": 0, "Violations": 0, "Datapoints": 0, "Details": {}},
}


def test_phases_per_step_add_up_and_find_the_stall(tmp_path):
    trial = SynthTrial(tmp_path, kineto=False)
    spans = trial.steps("TRAIN")
    ph = stats.phases_per_step(spans, trial.framework_events(None, None))
    assert np.allclose(ph["data loading"], [10_000 + (STALL_US if s == STALL_STEP else 0) for s in spans.step])
    assert np.allclose(ph["forward"], 30_000) and np.allclose(ph["backward"], 50_000)
    assert np.allclose(ph["optimizer"], 10_000) and np.allclose(ph["other"], 0)
    slow = stats.slowest_steps(spans, trial.framework_events(None, None), n=2)
    assert slow[0]["step"] == STALL_STEP and slow[0]["duration_us"] == 500_000
    assert slow[0]["top"][0] == {
        "phase": "DataLoaderIter",
        "name": "_SingleProcessDataLoaderIter::GetNext",
        "us": 10_000 + STALL_US,
    }
    assert slow[0]["times_median"] == pytest.approx(5.0)


def test_system_statistics_and_heat_map(tmp_path):
    trial = SynthTrial(tmp_path, kineto=False)
    series = trial.system_series(None, None)
    rows = {(r["metric"]): r for r in stats.system_stats(series)}
    cpu = np.concatenate([s.value for s in series if s.dimension == "CPUUtilization"])
    assert rows["CPUUtilization"]["p95"] == pytest.approx(np.percentile(cpu, 95))
    assert rows["CPUUtilization"]["samples"] == len(cpu) and rows["CPUUtilization"]["unit"] == "percent"
    cores = [s for s in series if s.dimension == "CPUUtilization"]
    hm = stats.heat_map(cores, trial.first_timestamp, trial.get_latest_timestamp(), bins=4)
    assert hm["rows"] == ["cpu0", "cpu1"] and hm["values"].shape == (2, 4)
    edges = hm["edges_us"]
    first_bin = cores[1].value[(cores[1].timestamp_us >= edges[0]) & (cores[1].timestamp_us < edges[1])]
    assert hm["values"][1, 0] == pytest.approx(first_bin.mean())


@needs_chromium
def test_the_report_renders_every_section_in_chromium(tmp_path, chromium):
    trial = SynthTrial(tmp_path / "trial", kineto=False)
    out = render_profiler_report(trial, REPORTS, tmp_path / "out" / "profiler-report.html")
    page = open(out).read()
    assert "http://" not in page and "https://" not in page and "<script" not in page
    # the slowest step on the timeline: its stalled fetch is a slice of the SVG
    timeline = page[page.index("<section id='timeline'>") : page.index("<section id='dataloader'>")]
    assert "<svg" in timeline and "_SingleProcessDataLoaderIter::GetNext (410.00 ms)" in timeline
    state = chromium.open(f"file://{out}")
    assert chromium.problems() == []
    assert state["sections"] == SECTIONS
    assert state["images"] and all(i["complete"] and i["width"] > 0 for i in state["images"])
    charted = {i["section"] for i in state["images"]}
    assert {"step-time", "phases", "dataloader", "system", "heatmaps"} <= charted
    text = state["text"]
    assert "Rules that fired: StepOutlier" in text and "1 of 4 rules fired." in text
    assert "step 7 took 5.0x the median" in text and "fired in the windows 1.7-2.2 s" in text
    assert "GPUMemoryIncrease\tno GPU data" in text and "no GPU data: the profile holds no GPU metrics" in text
    assert "fired (1 time)" in text and "looked at no data" in text and "no issue" in text
    assert "checkpoint, garbage collection" in text  # StepOutlier's fix is there
    assert "n_outliers=10" not in text and "n_outliers: 10" in text  # its parameters, read as values
    assert f"\n{STALL_STEP}\talgo-1-0" in text  # the stalled step heads the slowest steps
    assert "12 batches fetched" in text


@needs_chromium
def test_a_report_without_rules_or_steps_says_so(tmp_path, chromium):
    trial = SynthTrial(tmp_path / "trial", kineto=False)
    empty = trial._events.take(np.zeros(len(trial._events), dtype=bool))
    trial._events = empty
    out = render_profiler_report(trial, {}, tmp_path / "r.html")
    state = chromium.open(f"file://{out}")
    assert chromium.problems() == []
    assert state["sections"] == SECTIONS
    text = state["text"]
    assert "No profiler rule was run for this report" in text
    assert "No step events were recorded" in text and "No data-loader events were recorded" in text
    assert {i["section"] for i in state["images"]} == {"system", "heatmaps"}


def test_no_profiler_data_is_an_error(tmp_path):
    trial = SynthTrial(tmp_path, kineto=False)
    trial.get_latest_timestamp = lambda: None
    with pytest.raises(SMDebugValueError, match="no profiler data to report on"):
        profiler_report_html(trial, {})


@needs_chromium
def test_the_profiler_report_rule_writes_this_page(tmp_path, chromium):
    """ProfilerReport (rules.profiler) renders its sub-rules' reports through write_report."""
    from synth import write_profile

    from smdebug.profiler.trial import ProfilerTrial
    from smdebug.rules import invoke_rule
    from smdebug.rules.profiler import ProfilerReport

    write_profile(tmp_path / "p", steps=121, ended=True)
    rule = ProfilerReport(
        ProfilerTrial(str(tmp_path / "p")), output_dir=str(tmp_path / "out"), StepOutlier_n_outliers="0"
    )
    invoke_rule(rule, raise_eval_cond=False)
    assert rule.html_path == str(tmp_path / "out" / "profiler-report.html")
    state = chromium.open(f"file://{rule.html_path}")
    assert chromium.problems() == [] and state["sections"] == SECTIONS
    text = state["text"]
    # one stalled step of 121, and one loader process for two cores
    assert "Rules that fired: Dataloader, StepOutlier" in text and "2 of 10 rules fired." in text
    assert "slowest step 7 took 0.500" in text and "LoadBalancing\tnot enough data" in text


def test_the_timeline_picture_stacks_nested_slices_and_says_what_it_left_out(tmp_path):
    from smdebug.profiler.views.report.timeline_svg import timeline_svg
    from smdebug.profiler.views.timeline import build_timeline

    trace = build_timeline(SynthTrial(tmp_path, kineto=False))
    svg = timeline_svg(trace)
    assert svg.count("<rect") == sum(e["ph"] == "X" for e in trace["traceEvents"]) and "left out" not in svg
    assert svg.count("<polyline") == len({e["name"] for e in trace["traceEvents"] if e["ph"] == "C"})
    nested = {
        "traceEvents": [
            {"ph": "X", "name": n, "pid": 1, "tid": 1, "ts": ts, "dur": d}
            for n, ts, d in (("outer", 0, 100), ("inner", 10, 50), ("innermost", 20, 10))
        ],
        "displayTimeUnit": "ms",
    }
    ys = [int(part.split("y='")[1].split("'")[0]) for part in timeline_svg(nested).split("<rect")[1:]]
    assert ys[1] - ys[0] == ys[2] - ys[1] > 0
    assert "2 of 3 slices drawn (deeper than 2 levels" in timeline_svg(nested, max_depth=2)


def test_long_runs_are_charted_as_bucket_means():
    """A 24-hour profile has 100k steps and 864k samples a metric: charts draw bucket means."""
    from smdebug.profiler.views.report.charts import bucket_means

    v = np.arange(10, dtype=float)
    assert np.allclose(bucket_means(v, 20), v)
    means = bucket_means(v, 4)
    assert len(means) == 4 and np.isclose(means.mean(), v.mean(), rtol=0.1)
    assert np.allclose(bucket_means(np.repeat([1.0, 5.0], 500), 2), [1.0, 5.0])
