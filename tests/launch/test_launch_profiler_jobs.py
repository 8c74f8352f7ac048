"""Profiler rules as rule jobs under smdebug run: configured from flags, rule_configs-style objects and a
CreateTrainingJob's ProfilerRuleConfigurations; each one a job on the live profiler trial with SageMaker's
statuses (ProfilerRuleEvaluationStatuses), its output under rule-output/<name>/, StopTraining stopping the job."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

import smdebug
from smdebug.cli import main as cli
from smdebug.launch import LaunchConfigError, build_spec

MLP = str(Path(__file__).parent / "scripts" / "mlp.py")
SUB_RULES = (
    "BatchSize",
    "CPUBottleneck",
    "Dataloader",
    "GPUMemoryIncrease",
    "IOBottleneck",
    "LoadBalancing",
    "LowGPUUtilization",
    "MaxInitializationTime",
    "OverallSystemUsage",
    "StepOutlier",
)


def _spec(tmp_path, **kw):
    return build_spec(name="job", default_out_dir=str(tmp_path / "run" / "debug-output"), **kw)


class RulesconfigRule:  # what smdebug-rulesconfig's profiler_rules classes hold
    def __init__(self, rule_name, **params):
        self.rule_name = rule_name
        self.rule_parameters = {**params, "rule_to_invoke": rule_name}


class SdkProfilerRule:  # the SageMaker SDK's ProfilerRule.sagemaker(...), duck-typed
    def __init__(self, base):
        self.base = base

    def to_profiler_rule_config_dict(self):
        return {
            "RuleConfigurationName": self.base.rule_name,
            "RuleEvaluatorImage": "503895931360.dkr.ecr.us-east-1.amazonaws.com/sagemaker-debugger-rules:latest",
            "RuleParameters": {k: str(v) for k, v in self.base.rule_parameters.items()},
        }


def test_a_profiler_rule_configured_five_ways_is_one_rule_job_and_switches_profiling_on(tmp_path):
    base = RulesconfigRule("StepOutlier", n_outliers=0)
    job = {
        "ProfilerRuleConfigurations": [
            {
                "RuleConfigurationName": "StepOutlier",
                "RuleParameters": {"rule_to_invoke": "StepOutlier", "n_outliers": "0"},
            }
        ]
    }
    specs = [
        _spec(tmp_path, rules=["step_outlier:n_outliers=0"]),
        _spec(tmp_path, rules=["StepOutlier:n_outliers=0"]),
        _spec(tmp_path, rules=[base]),
        _spec(tmp_path, rules=[{"rule_name": "StepOutlier", "rule_parameters": base.rule_parameters}]),
        _spec(tmp_path, rules=[SdkProfilerRule(base)]),
        _spec(tmp_path, job=job),
    ]
    for spec in specs:
        assert spec.rules == []  # no debugger rule
        (rule,) = spec.profiler_rules
        assert rule.name == "StepOutlier" and rule.parameters == {"rule_to_invoke": "StepOutlier", "n_outliers": "0"}
        assert spec.profiling_auto and spec.profiler == {  # profiling switched on with the defaults
            "ProfilingIntervalInMilliseconds": 500,
            "ProfilingParameters": {"LocalPath": str(tmp_path / "run" / "profiler-output")},
        }
    # --action applies to profiler rules too; given profiling is not "automatic"
    spec = _spec(
        tmp_path,
        rules=["ProfilerReport:CPUBottleneck_threshold=90", "exploding_tensor"],
        actions=["stop"],
        profile_interval_ms=100,
    )
    assert [r.name for r in spec.rules] == ["ExplodingTensor"] and not spec.profiling_auto
    (report,) = spec.profiler_rules
    assert json.loads(report.parameters["action_json"]) == [{"name": "StopTraining"}]
    assert spec.request_dict()["ProfilerRuleConfigurations"][0]["RuleParameters"]["CPUBottleneck_threshold"] == "90"
    # smdebug-rulesconfig 1.0.2's ProfilerReport(opt_out_telemetry=False) is accepted
    assert _spec(tmp_path, rules=[RulesconfigRule("ProfilerReport", opt_out_telemetry=False)]).profiler_rules


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            {"rules": ["ProfilerReprt"]},
            r"'ProfilerReprt' is no built-in rule \(debugger rules: .*profiler rules: "
            r"BatchSize, .*ProfilerReport",
        ),
        ({"rules": ["step_outlier:stddev=-1"]}, r"--rule step_outlier:stddev=-1: StepOutlier, parameter stddev='-1'"),
        (
            {"rules": ["step_outlier:treshold=1"]},
            r"StepOutlier has no parameter 'treshold' \(accepted: min_ratio, mode",
        ),
        (
            {"rules": ["ProfilerReport:CPUBottleneck_treshold=3"]},
            r"CPUBottleneck_treshold.*CPUBottleneck has no "
            r"parameter 'treshold'",
        ),
        ({"rules": ["ProfilerReport:CPUBottleneck_threshold=lots"]}, r"CPUBottleneck, parameter threshold='lots'"),
        (
            {"rules": ["ProfilerReport", {"rule_name": "ProfilerReport", "rule_parameters": {}}]},
            "two rules are named ProfilerReport",
        ),
        (
            {
                "job": {
                    "ProfilerRuleConfigurations": [
                        {"RuleConfigurationName": "R", "RuleParameters": {"rule_to_invoke": "StepOutlyer"}}
                    ]
                }
            },
            r"ProfilerRuleConfigurations\[0\].*'StepOutlyer' is no profiler rule",
        ),
        (
            {
                "job": {
                    "ProfilerRuleConfigurations": [
                        {
                            "RuleConfigurationName": "R",
                            "RuleParameters": {"rule_to_invoke": "StepOutlier", "action_json": '{"name": "nap"}'},
                        }
                    ]
                }
            },
            "unknown action 'nap'",
        ),
        (
            {"rules": ["ProfilerReport"], "profiler_config": '{"DisableProfiler": true}'},
            "DisableProfiler is true, but the profiler rules ProfilerReport need profiling",
        ),
    ],
)
def test_bad_profiler_rule_input_is_a_clear_error(tmp_path, kwargs, message):
    with pytest.raises(LaunchConfigError, match=message):
        _spec(tmp_path, **kwargs)


def test_bad_profiler_rule_flag_fails_before_the_job_starts(tmp_path, capsys):
    marker = tmp_path / "ran"
    code = cli(
        [
            "run",
            "--run-dir",
            str(tmp_path / "r"),
            "--rule",
            "step_outlier:n_outliers=many",
            "--",
            sys.executable,
            "-c",
            f"open({str(marker)!r}, 'w')",
        ]
    )
    assert code == 2
    assert "StepOutlier, parameter n_outliers='many'" in capsys.readouterr().err
    assert not marker.exists() and not (tmp_path / "r" / "status.json").exists()


def _statuses(run_dir) -> dict:
    doc = json.loads(Path(run_dir, "status.json").read_text())
    return {s["RuleConfigurationName"]: s for s in doc["ProfilerRuleEvaluationStatuses"]}


def test_profiler_report_under_smdebug_run_writes_its_reports_and_statuses(tmp_path, capsys):
    pytest.importorskip("torch")
    run_dir = tmp_path / "r"
    code = cli(
        [
            "run",
            "--run-dir",
            str(run_dir),
            "--rule",
            "ProfilerReport",
            "--",
            sys.executable,
            MLP,
            "--steps",
            "6",
            "--step-time",
            "0.05",
        ]
    )
    err = capsys.readouterr().err
    assert code == 0, err
    assert (
        f"profiling switched on for the profiler rules ProfilerReport: system and framework metrics every 500 "
        f"ms into {run_dir / 'profiler-output'}" in err
    )
    assert "ProfilerReport: NoIssuesFound" in err
    status = json.loads((run_dir / "status.json").read_text())
    assert status["ProfilingStatus"] == "Enabled" and status["TrainingJobStatus"] == "Completed"
    assert [r["RuleConfigurationName"] for r in status["ProfilerRuleConfigurations"]] == ["ProfilerReport"]
    (report_status,) = status["ProfilerRuleEvaluationStatuses"]
    assert report_status["RuleEvaluationStatus"] == "NoIssuesFound"
    assert "StepOutlier: not enough data" in report_status["StatusDetails"]  # 6 steps: it says so
    assert status["DebugRuleEvaluationStatuses"] == []
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    seen = [
        e["detail"]["ProfilerRuleEvaluationStatuses"][0]["RuleEvaluationStatus"]
        for e in events
        if e["detail"].get("ProfilerRuleEvaluationStatuses")
    ]
    assert seen[0] == "InProgress" and seen[-1] == "NoIssuesFound"
    out = run_dir / "rule-output" / "ProfilerReport" / "profiler-output"  # SageMaker's layout
    assert sorted(p.stem for p in (out / "profiler-reports").glob("*.json")) == sorted(SUB_RULES)
    step_outlier = json.loads((out / "profiler-reports" / "StepOutlier.json").read_text())
    assert step_outlier["Datapoints"] >= 6 and step_outlier["Verdict"]["status"] == "not enough data"
    html = out / "profiler-report.html"
    assert html.exists() and html.stat().st_size > 1000
    report = json.loads((run_dir / "rule-output" / "ProfilerReport" / "report.json").read_text())
    assert report["RuleEvaluationStatus"] == "NoIssuesFound" and report["ProfilerReportHtml"] == str(html)
    assert report["Report"]["Details"]["LowGPUUtilization"] == "no GPU data"


def test_step_outlier_with_stop_training_stops_a_job_with_one_stalled_step(tmp_path):
    pytest.importorskip("torch")
    stall_at, lines = 105, []
    # deterministic on a loaded machine: any outlier fires (n_outliers=0) but only one lasting at least
    # 60 median steps (1.2 s) counts (min_ratio): hiccups of a busy CI host reach 0.2 s (11 median steps
    # seen), the stall is 6 s;
    # short windows and timeline files closed every 0.3 s let the rule see the stall soon after it ends
    config = {
        "ProfilingIntervalInMilliseconds": 100,
        "ProfilingParameters": {"RotateFileCloseIntervalInSeconds": "0.3"},
    }
    timeline = tmp_path / "timeline.txt"
    result = smdebug.launch(
        [
            sys.executable,
            MLP,
            "--steps",
            "5000",
            "--step-time",
            "0.02",
            "--stall-at",
            str(stall_at),
            "--stall",
            "6",
            "--timeline",
            str(timeline),
        ],
        run_dir=str(tmp_path / "r"),
        profiler_config=config,
        rules=["step_outlier:n_outliers=0:min_ratio=60:scan_interval_us=500000"],
        actions=["stop"],
        stop_grace=120,
        echo=lines.append,
    )
    assert result.status == "Stopped", lines
    assert result.issues == ["StepOutlier"]
    (rule,) = result.profiler_rules
    assert rule["RuleEvaluationStatus"] == "IssuesFound"
    assert rule["StatusDetails"].startswith("RuleEvaluationConditionMet: Evaluation of the rule StepOutlier at step ")
    assert f"slowest step {stall_at} took" in rule["StatusDetails"]
    assert any("rule StepOutlier found an issue at window" in line and "StopTraining" in line for line in lines)
    report = json.loads(Path(result.run_dir, "rule-output", "StepOutlier", "report.json").read_text())
    (details,) = report["Report"]["Details"]["step_details"].values()
    assert details["step_numbers"] == [stall_at] and details["number_of_outliers"] == 1
    assert report["FiredWindowUs"][1] - report["FiredWindowUs"][0] <= 500000
    last = int(timeline.read_text().split()[-2])  # the last step the script began
    assert stall_at < last < 5000 - 1  # stopped through the hook's stop request, long before the end
    assert json.loads(Path(result.run_dir, "status.json").read_text())["StopRequest"]["Rule"] == "StepOutlier"


def test_a_killed_job_ends_every_profiler_rule_job_and_a_rule_that_judged_nothing_is_an_error(tmp_path):
    pytest.importorskip("torch")
    lines = []
    result = smdebug.launch(
        [sys.executable, MLP, "--steps", "50", "--step-time", "0.05", "--kill-at", "20"],
        run_dir=str(tmp_path / "r"),
        rules=["ProfilerReport", "low_gpu_utilization"],
        profile_interval_ms=100,
        echo=lines.append,
    )
    assert result.exit_code == 128 + 9 and result.status == "Failed"
    statuses = _statuses(result.run_dir)
    # killed after about a second: the system metrics are there (a line each 100 ms), the timeline is not
    # (a .tmp file until it is closed); every rule job ended
    assert statuses["ProfilerReport"]["RuleEvaluationStatus"] == "NoIssuesFound", statuses
    gpu = statuses["LowGPUUtilization"]  # no GPU here: it judged nothing, and says so
    assert gpu["RuleEvaluationStatus"] == "Error"
    # (the windows it judged while the job ran: the part of its first window written by then, then the rest)
    assert re.match(
        rf"ClientError: the rule evaluated nothing in \d+ windows of "
        rf"{re.escape(str(Path(result.run_dir, 'profiler-output')))}: no GPU data",
        gpu["StatusDetails"],
    )
    root = Path(result.run_dir, "profiler-output")
    assert (root / "system" / "training_job_end.ts").exists() and (root / "framework" / "training_job_end.ts").exists()


def test_the_zero_code_change_guide_blocks_run(capsys):
    import re

    guide = Path(__file__).resolve().parents[2] / "docs" / "guide" / "zero-code-change.md"
    blocks = re.findall(r"```python\n(.*?)```", guide.read_text(), re.S)
    assert len(blocks) >= 2
    for code in blocks:
        exec(compile(code, str(guide), "exec"), {"__name__": "__guide__"})
    out = capsys.readouterr().out
    assert "['ProfilerReport', 'StepOutlier'] True" in out
    assert "CPUBottleneck has no parameter 'treshold'" in out


def test_step_outlier_for_train_judges_the_training_steps_of_a_zero_code_change_job(tmp_path):
    pytest.importorskip("torch")
    stall_at, lines = 104, []
    # 110 training steps of 20 ms (more than the 100 the rule waits for), 2 evaluation forward calls
    # under model.eval() after every 10th; training step 104 lasts 2 s more (min_ratio: only a step of 40
    # median steps, 0.8 s, counts; a busy host's hiccups reach 0.2 s). The script never sets a mode.
    result = smdebug.launch(
        [
            sys.executable,
            MLP,
            "--steps",
            "110",
            "--step-time",
            "0.02",
            "--eval-every",
            "10",
            "--stall-at",
            str(stall_at),
            "--stall",
            "2",
        ],
        run_dir=str(tmp_path / "r"),
        profile_interval_ms=100,
        rules=["step_outlier:mode=TRAIN:n_outliers=0:min_ratio=40"],
        echo=lines.append,
    )
    assert result.exit_code == 0, lines
    (rule,) = result.profiler_rules
    assert rule["RuleEvaluationStatus"] == "IssuesFound", rule
    report = json.loads(Path(result.run_dir, "rule-output", "StepOutlier", "report.json").read_text())
    (details,) = report["Report"]["Details"]["step_details"].values()
    assert details["phase"] == "Step:ModeKeys.TRAIN" and details["step_numbers"] == [stall_at]
    # the training steps judged when it fired (it judges them as they come: at the stall, or up to the
    # end), none of the 22 evaluation steps
    assert stall_at + 1 <= report["Report"]["Datapoints"] <= 110
