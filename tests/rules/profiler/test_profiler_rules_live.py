"""The profiler rules' window driver on a job still writing, their actions (StopTraining), and
ProfilerReport (sub-rules, overrides, profiler-reports/<Rule>.json)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from prof_rule_trials import SECOND, T0, Profile, series, steps

from smdebug.core.stop_request import read_stop_request
from smdebug.exceptions import RuleConfigurationError
from smdebug.rules import invoke_rule
from smdebug.rules.profiler import ProfilerReport, profiler_rule_classes
from smdebug.rules.profiler import get_profiler_rule_class as get_rule_class
from smdebug.storage.local import LocalStore

N = 2400
LOW_FROM_180 = np.where(np.arange(N) < 1800, 90.0, 5.0) + 3 * np.sin(np.arange(N))

RULESCONFIG_DEFAULTS = {  # smdebug-rulesconfig 1.0.1's profiler_rules (ProfilerReport takes overrides)
    "BatchSize": {
        "cpu_threshold_p95": 70,
        "gpu_threshold_p95": 70,
        "gpu_memory_threshold_p95": 70,
        "patience": 1000,
        "window": 500,
        "scan_interval_us": 60000000,
    },
    "CPUBottleneck": {
        "threshold": 50,
        "gpu_threshold": 10,
        "cpu_threshold": 90,
        "patience": 1000,
        "scan_interval_us": 60000000,
    },
    "Dataloader": {"min_threshold": 70, "max_threshold": 200, "scan_interval_us": 60000000},
    "GPUMemoryIncrease": {"increase": 5, "patience": 1000, "window": 10, "scan_interval_us": 60000000},
    "IOBottleneck": {
        "threshold": 50,
        "gpu_threshold": 10,
        "io_threshold": 50,
        "patience": 1000,
        "scan_interval_us": 60000000,
    },
    "LoadBalancing": {"threshold": 0.5, "patience": 1000, "scan_interval_us": 60000000},
    "LowGPUUtilization": {
        "threshold_p95": 70,
        "threshold_p5": 10,
        "window": 500,
        "patience": 1000,
        "scan_interval_us": 60000000,
    },
    "MaxInitializationTime": {"threshold": 20, "scan_interval_us": 60000000},
    "OverallSystemUsage": {"scan_interval_us": 60000000},
    "ProfilerReport": {},
    "StepOutlier": {"stddev": 3, "mode": None, "n_outliers": 10, "scan_interval_us": 60000000},
}


def test_the_eleven_rules_are_registered_with_sagemakers_defaults(tmp_path):
    classes = profiler_rule_classes()
    assert sorted(classes) == sorted(RULESCONFIG_DEFAULTS)
    for name, defaults in RULESCONFIG_DEFAULTS.items():
        cls = get_rule_class(name)
        assert cls.profiler_rule and cls is classes[name]
        built = cls(Profile([], path=str(tmp_path)))
        for k, v in defaults.items():
            assert getattr(built, k) == v, (name, k)
    from smdebug.rules.builtin import get_rule_class as get_builtin

    assert not get_builtin("VanishingGradient").profiler_rule


def test_a_bad_parameter_is_refused_by_name():
    with pytest.raises(RuleConfigurationError) as exc:
        get_rule_class("LowGPUUtilization")(Profile([]), threshold_p95="120")
    assert exc.value.parameter == "threshold_p95" and "between 0 and 100" in str(exc.value)
    with pytest.raises(RuleConfigurationError) as exc:
        get_rule_class("StepOutlier")(Profile([]), scan_interval_us="0")
    assert exc.value.parameter == "scan_interval_us"
    # 1 µs windows would take minutes over a second of profile: a tenth of a second at least
    with pytest.raises(RuleConfigurationError) as exc:
        get_rule_class("StepOutlier")(Profile([]), scan_interval_us="1")
    assert exc.value.parameter == "scan_interval_us" and ">= 100000" in str(exc.value)
    assert get_rule_class("StepOutlier")(Profile([]), scan_interval_us="100000").scan_interval_us == 100_000
    with pytest.raises(RuleConfigurationError) as exc:
        get_rule_class("Dataloader")(Profile([]), min_threshold="90", max_threshold="50")
    assert exc.value.parameter == "min_threshold" and "above max_threshold" in str(exc.value)
    with pytest.raises(RuleConfigurationError) as exc:
        get_rule_class("StepOutlier")(Profile([]), mode="bogus")
    assert exc.value.parameter == "mode" and "TRAIN" in str(exc.value)
    for mode in ("TRAIN", "Step:ModeKeys.EVAL"):
        assert get_rule_class("StepOutlier")(Profile([]), mode=mode).mode == mode


class Revealer:
    """Stands for time.sleep: each call lets the live profile show 30 more seconds; the job ends
    once everything is shown."""

    def __init__(self, profile, end_us):
        self.profile, self.end_us, self.calls = profile, end_us, 0

    def __call__(self, seconds):
        self.calls += 1
        now = (self.profile.visible_until or T0) + 30 * SECOND
        self.profile.reveal(now)
        if now >= self.end_us:
            self.profile.finished = True


def _live(profile):
    profile.finished = False
    profile.reveal(T0 + 10 * SECOND)
    return Revealer(profile, T0 + N * 100_000)


def test_live_windows_are_judged_as_the_job_writes_them_and_fire_where_offline_did():
    offline = get_rule_class("LowGPUUtilization")(Profile([series("GPUUtilization", LOW_FROM_180, name="gpu0")]))
    off = invoke_rule(offline)
    prof = Profile([series("GPUUtilization", LOW_FROM_180, name="gpu0")])
    sleep = _live(prof)
    live = get_rule_class("LowGPUUtilization")(prof, sleep=sleep)
    run = invoke_rule(live)
    assert sleep.calls >= 7 and run.ended == "no_more_data"
    assert run.fired == off.fired == [3]
    assert live.report["Verdict"]["fired_windows"] == offline.report["Verdict"]["fired_windows"]


def test_live_driver_waits_for_the_first_data():
    prof = Profile([series("GPUUtilization", LOW_FROM_180, name="gpu0")], finished=False, visible_until=T0 - 1)
    sleep = Revealer(prof, T0 + N * 100_000)
    r = get_rule_class("LowGPUUtilization")(prof, sleep=sleep)
    assert invoke_rule(r).fired == [3] and r.report["Verdict"]["windows_judged"] == 4


def test_stop_training_action_writes_the_stop_request(tmp_path):
    prof = Profile([series("GPUUtilization", LOW_FROM_180, name="gpu0")])
    prof.store = LocalStore(str(tmp_path))
    r = get_rule_class("LowGPUUtilization")(prof, action_str='{"name": "StopTraining"}')
    run = invoke_rule(r)
    assert run.fired == [3]
    req = read_stop_request(prof.store)
    assert req.rule == "LowGPUUtilization" and req.step == 3 and "underutilized" in req.reason


def _profile_with_problems():
    gpu = series("GPUUtilization", LOW_FROM_180, name="gpu0")
    cpu = [series("CPUUtilization", np.full(N, 30.0), name=f"cpu{i}") for i in range(2)]
    return Profile([gpu, *cpu], steps([0.5] * 400, start=T0 + 5 * SECOND))


def test_profiler_report_runs_every_rule_and_writes_their_reports(tmp_path):
    r = ProfilerReport(
        _profile_with_problems(),
        output_dir=str(tmp_path),
        lowgpuutilization_threshold_p95="60",
        StepOutlier_n_outliers="0",
    )
    run = invoke_rule(r)
    assert run.ended == "end_of_rule" and run.fired == [4]  # fires once, at the end of the data
    assert "LowGPUUtilization" in r.reason
    files = sorted(p.name for p in (tmp_path / "profiler-reports").iterdir())
    assert files == sorted(f"{n}.json" for n in RULESCONFIG_DEFAULTS if n != "ProfilerReport")
    low = json.loads((tmp_path / "profiler-reports" / "LowGPUUtilization.json").read_text())
    assert low["RuleTriggered"] >= 1 and "threshold_p95:60.0" in low["RuleParameters"]
    assert low["Verdict"]["fired_windows"][0][0] == T0 + 180 * SECOND
    assert (
        json.loads((tmp_path / "profiler-reports" / "IOBottleneck.json").read_text())["Verdict"]["status"] == "no issue"
    )  # GPU data but no I/O wait: judged, no issue
    assert r.rules["StepOutlier"].n_outliers == 0
    assert "LowGPUUtilization_threshold_p95:60" in r.report["RuleParameters"]


def test_profiler_report_says_when_it_cannot_write_its_reports(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(RuleConfigurationError) as exc:
        ProfilerReport(Profile([]), output_dir=str(tmp_path / "file"))
    assert exc.value.parameter == "output_dir" and "profiler-reports" in str(exc.value)
    assert ProfilerReport(Profile([], path=str(tmp_path))).reports_dir == str(
        tmp_path / "profiler-output" / "profiler-reports"
    )


def test_profiler_report_refuses_an_override_its_rule_does_not_take():
    with pytest.raises(RuleConfigurationError) as exc:
        ProfilerReport(Profile([]), CPUBottleneck_no_such="1")
    assert exc.value.parameter == "CPUBottleneck_no_such"
    with pytest.raises(RuleConfigurationError) as exc:
        ProfilerReport(Profile([]), CPUBottleneck_threshold="x")
    assert exc.value.parameter == "CPUBottleneck_threshold"
    with pytest.raises(RuleConfigurationError) as exc:
        ProfilerReport(Profile([]), nosuchrule_threshold="1")
    assert exc.value.parameter == "nosuchrule_threshold"


def test_a_failing_sub_rule_is_reported_and_the_others_go_on(tmp_path, monkeypatch, caplog):
    r = ProfilerReport(_profile_with_problems(), output_dir=str(tmp_path))

    def boom(data):
        raise RuntimeError("broken")

    monkeypatch.setattr(r.rules["BatchSize"], "judge", boom)
    invoke_rule(r)
    batch = json.loads((tmp_path / "profiler-reports" / "BatchSize.json").read_text())
    assert batch["Verdict"]["status"] == "error" and "broken" in batch["Verdict"]["message"]
    assert caplog.text.count("BatchSize failed") == 1
    assert r.rules["LowGPUUtilization"].report["RuleTriggered"]


def test_profiler_report_over_an_empty_profile_says_no_data(tmp_path):
    r = ProfilerReport(Profile([]), output_dir=str(tmp_path))
    run = invoke_rule(r)
    assert run.fired == [] and run.looked_at_nothing
    statuses = {
        p.stem: json.loads(p.read_text())["Verdict"]["status"] for p in (tmp_path / "profiler-reports").iterdir()
    }
    assert set(statuses.values()) <= {"no data", "no GPU data"} and statuses["StepOutlier"] == "no data"
    assert statuses["LowGPUUtilization"] == "no GPU data"


def test_report_files_follow_a_live_job(tmp_path):
    cpu = [series("CPUUtilization", np.full(N, 10.0 * (i + 1)), name=f"cpu{i}") for i in range(2)]
    prof = Profile(cpu)
    sleep = _live(prof)
    r = ProfilerReport(prof, output_dir=str(tmp_path), sleep=sleep)
    r.invoke(0)  # the first minute, judged once the job has written past it
    usage = json.loads((tmp_path / "profiler-reports" / "OverallSystemUsage.json").read_text())
    assert usage["Details"]["CPU"]["algo-1"]["p50"] == pytest.approx(15.0)
    assert usage["Verdict"]["windows_judged"] == 1 and not prof.finished
