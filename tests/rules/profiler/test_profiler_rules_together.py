"""The profiler rules judged in one pass (``judge_together``, ProfilerReport, ``smdebug profile
rules``) report exactly what each reports alone under ``invoke_rule``, and the windows read ahead
are those read one by one, on a profile in 1.0.34's files."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from smdebug.profiler.locations import END_MARKER
from smdebug.profiler.trial import ProfilerTrial
from smdebug.rules import invoke_rule
from smdebug.rules.profiler import ProfilerReport, profiler_rule_classes
from smdebug.rules.profiler.base import WindowSource, fetch_window, judge_together
from smdebug.rules.profiler.stats import CountMedian, loaders_per_second, phase_mask, snapshot_ids

M0 = 1_800_000_000 // 60 * 60  # a minute, in seconds
MINUTES = 75  # past one read-ahead (an hour) of 60-second windows
BAD_FROM = 30 * 60  # seconds into the run: the GPU idles, the cores saturate, memory climbs
# parameters that make most rules fire on this short profile
PARAMS = {
    "StepOutlier": {"n_outliers": "0"},
    "MaxInitializationTime": {"threshold": "0.5"},
    "GPUMemoryIncrease": {"patience": "100"},
    "LoadBalancing": {"patience": "100", "threshold": "0.2"},
}


def _system(root: Path) -> None:
    rng = np.random.default_rng(7)
    for m in range(MINUTES):
        minute = M0 + 60 * m
        folder = root / "system" / "incremental" / time.strftime("%Y%m%d%H", time.gmtime(minute))
        folder.mkdir(parents=True, exist_ok=True)
        lines = []
        for i in range(120):  # every 0.5 s
            t = minute + 0.5 * i + 0.013
            bad = t - M0 >= BAD_FROM
            rows = [
                ("cpu", f"cpu{c}", "CPUUtilization", 95 + rng.uniform(0, 5) if bad else rng.uniform(20, 60))
                for c in range(2)
            ]
            rows += [("cpu", f"cpu{c}", "I/OWaitPercentage", rng.uniform(0, 3)) for c in range(2)]
            rows += [
                ("gpu", "gpu0", "GPUUtilization", rng.uniform(0, 5) if bad else rng.uniform(80, 100)),
                ("gpu", "gpu1", "GPUUtilization", rng.uniform(80, 100)),
                ("gpu", "gpu0", "GPUMemoryUtilization", min(20 + 1.5 * (t - M0 - BAD_FROM), 90) if bad else 20.0),
                ("memory", "MemoryUsedPercent", "", 40 + rng.uniform(0, 1)),
                ("network", "ReceiveBytesPerSecond", "Algorithm", rng.uniform(0, 1e6)),
            ]
            lines += [
                f'{{"Type":"{ty}","Name":"{n}","Dimension":"{d}","Value":{v:.3f},"NodeId":"algo-1",'
                f'"Timestamp":{t:.3f}}}\n'
                for ty, n, d, v in rows
            ]
        (folder / f"{minute}.algo-1.json").write_text("".join(lines))


def _framework(root: Path) -> None:
    base = (M0 + 60) * 1_000_000  # training starts a minute in (MaxInitializationTime: threshold 0.5 min)
    phases = ["Step:ModeKeys.TRAIN", "DataLoaderIter"]
    meta = [{"name": "process_name", "ph": "M", "pid": 0, "args": {"start_time_since_epoch_in_micros": base}}]
    meta += [{"name": "process_name", "ph": "M", "pid": i + 1, "args": {"name": p}} for i, p in enumerate(phases)]
    events, file_start = [], base
    for step in range((MINUTES - 2) * 60):
        t = base + step * 1_000_000
        dur = 4_000_000 if step in (500, 2500) else 900_000 + (step % 7) * 10_000  # two stalls
        events.append({"name": "GetNext", "pid": 2, "ph": "X", "ts": t - base, "dur": 50_000, "args": {"pid": 11}})
        events.append(
            {"name": "Step", "pid": 1, "ph": "X", "ts": t - base, "dur": dur, "args": {"step_num": str(step)}}
        )
        last_end = t + 990_000
        if last_end - file_start >= 60_000_000 or step == (MINUTES - 2) * 60 - 1:
            folder = root / "framework" / "pevents" / time.strftime("%Y%m%d%H", time.gmtime(last_end / 1e6))
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{last_end}_1-algo-1_pythontimeline.json").write_text(json.dumps(meta + events))
            events, file_start = [], last_end


@pytest.fixture(scope="module")
def profile(tmp_path_factory) -> str:
    root = tmp_path_factory.mktemp("profile")
    _system(root)
    _framework(root)
    (root / "system" / END_MARKER).write_text("")
    return str(root)


def _plain(report: dict) -> dict:
    return json.loads(json.dumps(report, sort_keys=True, default=lambda v: v.tolist()))


def _names() -> list:
    return [n for n in profiler_rule_classes() if n != "ProfilerReport"]


_ALONE: dict = {}


def _alone(profile: str, name: str, **extra) -> dict:
    """The report of ``invoke_rule`` on the rule alone (each computed once)."""
    key = (profile, name, tuple(sorted(extra.items())))
    if key not in _ALONE:
        rule = profiler_rule_classes()[name](ProfilerTrial(profile), **PARAMS.get(name, {}), **extra)
        invoke_rule(rule)
        _ALONE[key] = _plain(rule.report)
    return _ALONE[key]


def test_read_ahead_windows_are_the_windows_read_one_by_one(profile):
    ahead, direct = ProfilerTrial(profile), ProfilerTrial(profile)
    source = WindowSource(ahead)
    start = ahead.first_timestamp
    for k in range(MINUTES + 1):
        lo, hi = start + k * 60_000_000, start + (k + 1) * 60_000_000
        got, want = source.window(lo, hi, framework=True), fetch_window(direct, lo, hi, framework=True)
        assert [s.key for s in got.series] == [s.key for s in want.series]
        for g, w in zip(got.series, want.series):
            assert np.array_equal(g.timestamp_us, w.timestamp_us) and np.array_equal(g.value, w.value)
        for col in ("phase", "name", "start_us", "end_us", "step", "node_id", "pid"):
            assert np.array_equal(getattr(got.events, col), getattr(want.events, col)), (k, col)
        assert got.events.args == want.events.args
    assert len(got.series) == 0 and len(want.series) == 0  # past the end: nothing, as one by one


def test_rules_judged_together_report_what_each_reports_alone(profile):
    trial = ProfilerTrial(profile)
    rules = {n: profiler_rule_classes()[n](trial, **PARAMS.get(n, {})) for n in _names()}
    judge_together(list(rules.values()))
    fired = set()
    for name, rule in rules.items():
        assert _plain(rule.report) == _alone(profile, name), name
        if rule.report["RuleTriggered"]:
            fired.add(name)
    # the comparison covers rules that fired, in several windows, and rules that did not
    assert {
        "LowGPUUtilization",
        "CPUBottleneck",
        "StepOutlier",
        "Dataloader",
        "MaxInitializationTime",
        "GPUMemoryIncrease",
        "LoadBalancing",
    } <= fired
    assert rules["IOBottleneck"].report["Verdict"]["status"] == "no issue"
    assert len(rules["LowGPUUtilization"].report["Verdict"]["fired_windows"]) > 30


def test_rules_with_their_own_windows_walk_apart_and_still_agree(profile):
    trial = ProfilerTrial(profile)
    fine = profiler_rule_classes()["StepOutlier"](trial, n_outliers="0", scan_interval_us=str(20_000_000))
    usual = profiler_rule_classes()["Dataloader"](trial)
    judge_together([fine, usual])
    assert fine.windows_judged == 3 * usual.windows_judged
    assert _plain(fine.report) == _alone(profile, "StepOutlier", scan_interval_us=str(20_000_000))
    assert _plain(usual.report) == _alone(profile, "Dataloader")


def test_profiler_report_and_the_cli_report_what_each_rule_reports_alone(profile, tmp_path):
    from smdebug.cli.profile import run_profiler_rules

    overrides = {f"{n}_{k}": v for n, kv in PARAMS.items() for k, v in kv.items()}
    report = ProfilerReport(ProfilerTrial(profile), output_dir=str(tmp_path), **overrides)
    assert invoke_rule(report).ended == "end_of_rule"
    params = [f"{n}.{k}={v}" for n, kv in PARAMS.items() for k, v in kv.items()]
    cli = run_profiler_rules(ProfilerTrial(profile), param_specs=params)
    for name in _names():
        alone = _alone(profile, name)
        assert _plain(report.sub_reports()[name]) == alone, name
        assert json.loads((tmp_path / "profiler-reports" / f"{name}.json").read_text()) == alone, name
        assert _plain(cli[name]) == alone, name


def test_a_rule_that_fires_long_before_the_end_reports_its_details_then(profile):
    """Summaries of everything so far are brought up to date when the rule fires, not only at the
    end of the data: an action (StopTraining) or a job's report sees them."""
    from smdebug.exceptions import RuleEvaluationConditionMet

    classes = profiler_rule_classes()
    steps = classes["StepOutlier"](ProfilerTrial(profile), n_outliers="0")
    with pytest.raises(RuleEvaluationConditionMet):
        invoke_rule(steps, raise_eval_cond=True)
    assert steps.windows_judged < MINUTES // 2  # the first stall, far from the end
    assert steps.report["Details"]["step_details"]["algo-1-1"]["step_numbers"] == [500]
    loader = classes["Dataloader"](ProfilerTrial(profile))
    with pytest.raises(RuleEvaluationConditionMet):
        invoke_rule(loader, raise_eval_cond=True)
    assert loader.windows_judged < MINUTES // 2 and "too few" in loader.reason
    assert set(loader.report["Details"]["dataloading_time"]) == {"p25", "p50", "p95"}


def test_count_median_is_numpys_median_of_the_values():
    rng = np.random.default_rng(3)
    values: dict = {}
    med = CountMedian()
    assert np.isnan(med.median())
    for _ in range(500):
        key, new = int(rng.integers(0, 60)), int(rng.integers(0, 9))
        med.replace(values.get(key), new)
        values[key] = new
        assert med.median() == np.median(list(values.values()))


def test_phase_mask_asks_once_per_phase():
    phases = np.array(["Step:ModeKeys.TRAIN", "Forward", "Step:ModeKeys.EVAL", "Forward"] * 50, dtype=object)
    asked = []
    mask = phase_mask(phases, lambda p: asked.append(p) or p.startswith("Step:"))
    assert mask.tolist() == [p.startswith("Step:") for p in phases] and sorted(asked) == sorted(set(phases))


def test_loaders_per_second_against_a_set_per_second():
    rng = np.random.default_rng(5)
    start = rng.integers(0, 20_000_000, 3000)
    pid = rng.integers(1, 6, 3000)
    want: dict = {}
    for s, p in zip(start.tolist(), pid.tolist()):
        want.setdefault(s // 1_000_000, set()).add(p)
    assert loaders_per_second(start, pid) == {s: len(p) for s, p in want.items()}


def test_snapshot_ids_as_the_loop_over_every_time():
    def one_by_one(t, gap=20_000):
        ids, first, sid = [], None, -1
        for x in t.tolist():
            if first is None or x - first > gap:
                first, sid = x, sid + 1
            ids.append(sid)
        return ids

    rng = np.random.default_rng(11)
    for _ in range(200):  # clustered times (several rows of a sample), spread ones, ties at the gap
        t = np.unique(np.cumsum(rng.choice([0, 1_000, 19_999, 20_000, 20_001, 100_000], rng.integers(0, 300))))
        assert snapshot_ids(t).tolist() == one_by_one(t)
    with pytest.raises(ValueError, match="sorted"):
        snapshot_ids(np.array([5, 1]))
