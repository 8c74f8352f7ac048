"""Profiling under smdebug run: --profile, --profile-interval-ms, --profiler-config FILE|JSON and a
CreateTrainingJob's ProfilerConfig become the job's profilerconfig.json, which the hooks read;
ProfilerRuleConfigurations are parsed and checked against the registry (they run as jobs:
test_launch_profiler_jobs.py)."""

from __future__ import annotations

import glob
import json
import os
import sys
from pathlib import Path

import pytest

import smdebug
from smdebug.launch import LaunchConfigError, build_spec

MLP = str(Path(__file__).parent / "scripts" / "mlp.py")
SDK_STRING = '{"StartStep": 2, "NumSteps": 3, }'  # the SDK's trailing comma


def _spec(tmp_path, **kw):
    return build_spec(name="job", default_out_dir=str(tmp_path / "run" / "debug-output"), **kw)


def test_profile_flags_give_the_profilerconfig_document(tmp_path):
    assert _spec(tmp_path).profiler is None  # no profiling unless asked for
    default = _spec(tmp_path, profile=True).profiler
    assert default == {
        "ProfilingIntervalInMilliseconds": 500,
        "ProfilingParameters": {"LocalPath": str(tmp_path / "run" / "profiler-output")},
    }
    assert _spec(tmp_path, profile_interval_ms=100).profiler["ProfilingIntervalInMilliseconds"] == 100
    doc = {
        "S3OutputPath": "s3://b/p",
        "ProfilingIntervalInMilliseconds": 1000,
        "ProfilingParameters": {"DataloaderProfilingConfig": SDK_STRING, "LocalPath": str(tmp_path / "prof")},
    }
    path = tmp_path / "profiler.json"
    path.write_text(json.dumps(doc))
    from_file = _spec(tmp_path, profiler_config=str(path)).profiler
    from_text = _spec(tmp_path, profiler_config=json.dumps(doc)).profiler
    from_job = _spec(tmp_path, job={"ProfilerConfig": doc}).profiler
    assert (
        from_file
        == from_text
        == from_job
        == {
            "ProfilingIntervalInMilliseconds": 1000,
            "ProfilingParameters": {"DataloaderProfilingConfig": SDK_STRING, "LocalPath": str(tmp_path / "prof")},
        }
    )
    assert (
        _spec(tmp_path, job={"ProfilerConfig": doc}, profile_interval_ms=200).profiler[
            "ProfilingIntervalInMilliseconds"
        ]
        == 200
    )


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"profile_interval_ms": 5}, "--profile.*ProfilingIntervalInMilliseconds"),
        ({"profile_interval_ms": "soon"}, "--profile-interval-ms 'soon' is not a whole number"),
        ({"profiler_config": "{not json"}, "--profiler-config is not valid JSON"),
        ({"profiler_config": "/no/such/profiler.json"}, "--profiler-config /no/such/profiler.json: No such file"),
        ({"profiler_config": '{"ProfilingParameters": {}, "Nope": 1}'}, "unknown member 'Nope' of a ProfilerConfig"),
        (
            {"profiler_config": '{"ProfilingParameters": {"PythonProfilingConfig": "{\\"StartStep\\": "}}'},
            "--profiler-config.*PythonProfilingConfig",
        ),
        ({"profiler_config": "{}", "job": {"ProfilerConfig": {}}}, "profiler configuration is given twice"),
    ],
)
def test_bad_profiler_input_is_a_clear_error(tmp_path, kwargs, message):
    with pytest.raises(LaunchConfigError, match=message):
        _spec(tmp_path, **kwargs)


def test_profiler_rule_configurations_are_parsed_and_checked(tmp_path):
    report = {
        "RuleConfigurationName": "ProfilerReport",
        "RuleEvaluatorImage": "503895931360.dkr.ecr.us-east-1.amazonaws.com/sagemaker-debugger-rules:latest",
        "RuleParameters": {"rule_to_invoke": "ProfilerReport", "CPUBottleneck_cpu_threshold": "90"},
    }
    job = {"ProfilerConfig": {"ProfilingIntervalInMilliseconds": 500}, "ProfilerRuleConfigurations": [report]}
    spec = _spec(tmp_path, job=job)
    assert [r.to_request_dict() for r in spec.profiler_rules] == [report]
    assert spec.request_dict()["ProfilerRuleConfigurations"] == [report] and not spec.profiling_auto
    with pytest.raises(LaunchConfigError, match="RuleConfigurationName"):
        _spec(tmp_path, job={**job, "ProfilerRuleConfigurations": [{**report, "RuleConfigurationName": "a b"}]})
    # without a ProfilerConfig, the profiler rules switch profiling on (smdebug run says so)
    auto = _spec(tmp_path, job={"ProfilerRuleConfigurations": [report]})
    assert auto.profiling_auto and auto.profiler["ProfilingIntervalInMilliseconds"] == 500


def test_profile_records_system_and_framework_metrics(tmp_path):
    pytest.importorskip("torch")
    lines = []
    result = smdebug.launch(
        [sys.executable, MLP, "--steps", "6", "--step-time", "0.1"],
        run_dir=str(tmp_path / "r"),
        profile=True,
        profile_interval_ms=100,
        name="prof",
        echo=lines.append,
    )
    assert result.exit_code == 0, lines
    root = tmp_path / "r" / "profiler-output"
    config = json.loads((tmp_path / "r" / "config" / "profilerconfig.json").read_text())
    assert config["ProfilingParameters"]["LocalPath"] == str(root)
    system = glob.glob(str(root / "system" / "incremental" / "*" / "*.json"))
    framework = glob.glob(str(root / "framework" / "pevents" / "*" / "*pythontimeline.json"))
    assert system and framework, sorted(os.listdir(root))
    samples = [json.loads(line) for f in system for line in open(f) if line.strip()]
    assert len({s["Timestamp"] for s in samples if s["Dimension"] == "CPUUtilization"}) >= 2  # every 100 ms
    events = [e for f in framework for e in json.load(open(f))]
    forward_steps = {e["args"]["step_num"] for e in events if e.get("name") == "Net" and e.get("ph") == "X"}
    assert forward_steps >= {"0", "5"}  # the model attached with no code change, profiled at every step
