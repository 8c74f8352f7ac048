"""The profiler rules on real PyTorch runs with the profiler on (read by ProfilerTrial): each fires
where the run was made to go wrong, in the window where it did, and stays silent on a healthy
run; the GPU rules say "no GPU data" on this CPU-only host."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("psutil")

from prof_runs import train  # noqa: E402

from smdebug.profiler.trial import ProfilerTrial  # noqa: E402
from smdebug.rules import invoke_rule  # noqa: E402
from smdebug.rules.profiler import ProfilerReport  # noqa: E402
from smdebug.rules.profiler import get_profiler_rule_class as get_rule_class  # noqa: E402

SECOND = 1_000_000
STALL_STEP = 105
STEP_S = 0.03
ONE_S = str(SECOND)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """'slow': 2 s before the first step, step 105 stalls 4 s, no loader workers; 'steady': the
    same without the stalls; 'workers': two loader workers whose items sleep. Steps last 30 ms, so
    each run loads data over several seconds (Dataloader judges after ``patience`` seconds; the
    workers' run without ``step_s`` was over within one second on a fast host)."""
    base = tmp_path_factory.mktemp("prof_runs")
    return {
        "slow": train(base / "slow", init_sleep=2.0, stall_step=STALL_STEP, stall_s=4.0, step_s=STEP_S),
        "steady": train(base / "steady", step_s=STEP_S),
        "workers": train(base / "workers", item_sleep=0.0005, num_workers=2, step_s=STEP_S),
    }


def _rule(run, name, **params):
    return get_rule_class(name)(ProfilerTrial(str(run.root)), **params)


def _cores(run) -> int:
    return len(ProfilerTrial(str(run.root)).system_series(dimension="CPUUtilization"))


def test_step_outlier_fires_in_the_window_of_the_stalled_step(runs):
    # the 4 s stall against 30 median steps (30-100 ms): on a loaded host a steady run's steps
    # had hiccups of 0.2-0.3 s, and one of more than 10 medians once made the quiet run fire
    params = {"n_outliers": "0", "min_ratio": "30", "scan_interval_us": ONE_S}
    r = _rule(runs["slow"], "StepOutlier", **params)
    run = invoke_rule(r)
    assert len(run.fired) == 1, r.report
    (details,) = r.report["Details"]["step_details"].values()  # one node
    assert details["step_numbers"] == [STALL_STEP] and details["phase"] == "Step:ModeKeys.TRAIN"
    stall = ProfilerTrial(str(runs["slow"].root)).steps("TRAIN")
    stall_start = int(stall.start_us[stall.step == STALL_STEP][0])
    ((a, b),) = r.report["Verdict"]["fired_windows"]
    assert a <= stall_start < b and b - a <= SECOND
    quiet = _rule(runs["steady"], "StepOutlier", **params)
    assert invoke_rule(quiet).fired == [] and quiet.report["Verdict"]["status"] == "no issue"


def test_max_initialization_time_fires_on_the_slow_start(runs):
    params = {"threshold": str(1 / 60), "scan_interval_us": ONE_S}  # 1 s
    r = _rule(runs["slow"], "MaxInitializationTime", **params)
    run = invoke_rule(r)
    first = ProfilerTrial(str(runs["slow"].root)).first_timestamp
    assert run.fired == [1] and r.report["Verdict"]["fired_windows"] == [[first + SECOND, first + 2 * SECOND]]
    assert r.report["Details"]["step_num"]["first"] - first > 1.5 * SECOND
    quiet = _rule(runs["steady"], "MaxInitializationTime", **params)
    assert invoke_rule(quiet).fired == []


def test_dataloader_fires_without_workers_and_not_with_them(runs):
    cores = _cores(runs["slow"])
    assert cores >= 1
    # between 1.5 and 10 processes loading data per second is right, whatever the host's cores
    params = {
        "min_threshold": str(150 / cores),
        "max_threshold": str(1000 / cores),
        "patience": "1",
        "scan_interval_us": ONE_S,
    }
    r = _rule(runs["slow"], "Dataloader", **params)
    assert invoke_rule(r).fired and "too few" in r.reason, r.report
    assert r.report["Details"]["dataloaders"] == 1 and r.report["Details"]["num_workers"] == 0, r.report
    ok = _rule(runs["workers"], "Dataloader", **params)
    assert invoke_rule(ok).fired == [] and ok.report["Details"]["dataloaders"] >= 2, ok.report
    assert ok.report["Details"]["num_workers"] == 2 and ok.report["Verdict"]["status"] == "no issue", ok.report


@pytest.mark.parametrize("name", ["LowGPUUtilization", "BatchSize", "LoadBalancing"])
def test_gpu_rules_say_no_gpu_data_on_a_cpu_run(runs, name):  # the others judge the host (test_profiler_rules_cpu)
    r = _rule(runs["slow"], name, scan_interval_us=ONE_S)
    run = invoke_rule(r)
    assert run.fired == [] and len(run.evaluated) >= 5
    assert r.report["Verdict"]["status"] == "no GPU data"


def test_overall_system_usage_on_a_real_run(runs):
    r = _rule(runs["steady"], "OverallSystemUsage")
    assert invoke_rule(r).fired == []
    (cpu,) = r.report["Details"]["CPU"].values()  # one node
    assert 0 <= cpu["min"] <= cpu["p50"] <= cpu["max"] <= 100
    (mem,) = r.report["Details"]["CPU memory"].values()
    assert 0 < mem["max"] <= 100


def test_profiler_report_over_a_real_run(runs, tmp_path):
    trial = ProfilerTrial(str(runs["slow"].root))
    r = ProfilerReport(
        trial,
        output_dir=str(tmp_path),
        scan_interval_us=ONE_S,
        StepOutlier_n_outliers="0",
        StepOutlier_min_ratio="30",
        MaxInitializationTime_threshold=str(1 / 60),
    )
    run = invoke_rule(r)
    assert run.ended == "end_of_rule" and "MaxInitializationTime" in r.reason and "StepOutlier" in r.reason
    reports = {p.stem: json.loads(p.read_text()) for p in (tmp_path / "profiler-reports").iterdir()}
    assert (
        reports["StepOutlier"]["RuleTriggered"] == 1
        and reports["LowGPUUtilization"]["Verdict"]["status"] == "no GPU data"
    )
    assert reports["OverallSystemUsage"]["Details"]["CPU"]
    # and the HTML report, through the renderer's hook (smdebug.profiler.views.report.write_report)
    assert r.html_path == str(tmp_path / "profiler-report.html")
    page = (tmp_path / "profiler-report.html").read_text()
    assert "StepOutlier" in page and "no GPU data" in page
