"""ProfilerConfig: SageMaker's JSON as 1.0.34 reads it, keyword arguments, errors that name the key."""

from __future__ import annotations

import json

import pytest

from smdebug.exceptions import SMDebugValueError
from smdebug.profiler import ProfilerConfig, ProfilingRange
from smdebug.profiler.recording.config import CONFIG_PATH_ENV, DEFAULT_LOCAL_PATH

# as the SageMaker SDK writes it: sub-configs are strings holding a dict literal with a trailing comma
SDK_CONFIG = {
    "ProfilingIntervalInMilliseconds": 100,
    "ProfilingParameters": {
        "LocalPath": "/tmp/Mixed_Case/Profiler",
        "RotateMaxFileSizeInBytes": "4096",
        "RotateFileCloseIntervalInSeconds": 30,
        "DataloaderProfilingConfig": '{"StartStep": 0, "NumSteps": 1000, "MetricsRegex": "GetNext", }',
        "DetailedProfilingConfig": '{"StartStep": 3, "NumSteps": 1, }',
        "PythonProfilingConfig": '{"StartStep": 4, "NumSteps": 2, "ProfilerName": "cProfile", "cProfileTimer": "cpu_time", }',
        "HorovodProfilingConfig": '{"StartStep": 13, "NumSteps": 1, }',
    },
}


def test_sdk_json_is_read_with_its_trailing_commas_and_values_keep_their_case(tmp_path):
    path = tmp_path / "profilerconfig.json"
    path.write_text(json.dumps(SDK_CONFIG))
    c = ProfilerConfig.from_json_file(path)
    assert c.local_path == "/tmp/Mixed_Case/Profiler"  # 1.0.34 lower-cased it
    assert c.interval_millis == 100
    assert c.rotate_max_file_size == 4096 and c.rotate_close_interval_s == 30.0
    assert (c.python.start_step, c.python.num_steps) == (4, 2)
    assert c.python_profiler == "cprofile" and c.cprofile_timer == "cpu_time"
    assert (c.detailed.start_step, c.detailed.num_steps) == (3, 1)
    assert c.dataloader.options["metrics_regex"] == "GetNext"
    assert c.dataloader_metric_wanted("_MultiProcessingDataLoaderIter::GetNext")
    assert not c.dataloader_metric_wanted("DataLoaderIterInitialize")
    assert c.framework_metrics and c.system_metrics and not c.disabled


def test_keys_are_matched_without_case():
    c = ProfilerConfig.from_dict(
        {
            "profilingintervalinmilliseconds": 200,
            "profilingparameters": {"localpath": "/x/Y", "pythonprofilingconfig": {"startstep": 1}},
        }
    )
    assert c.interval_millis == 200 and c.local_path == "/x/Y" and c.python.start_step == 1


def test_defaults_as_sagemaker():
    c = ProfilerConfig.from_dict({"ProfilingParameters": {"DetailedProfilingConfig": '{"StartStep": 1}'}})
    assert c.local_path == DEFAULT_LOCAL_PATH and c.interval_millis == 500
    assert c.rotate_max_file_size == 10485760 and c.rotate_close_interval_s == 60.0
    assert c.python is None and c.dataloader is None


def test_no_profiling_parameters_records_system_metrics_only_and_disable_turns_all_off():
    c = ProfilerConfig.from_dict({"ProfilingIntervalInMilliseconds": 500})
    assert c.system_metrics and not c.framework_metrics
    assert ProfilerConfig.from_dict({"DisableProfiler": True, "ProfilingParameters": {"LocalPath": "/x"}}).disabled


@pytest.mark.parametrize(
    "doc, key",
    [
        ({"ProfilingIntervalInMilliseconds": "fast"}, "ProfilingIntervalInMilliseconds"),
        ({"ProfilingIntervalInMilliseconds": 1}, "ProfilingIntervalInMilliseconds"),
        ({"ProfilingIntervalInMilliseconds": 10**12}, "ProfilingIntervalInMilliseconds"),
        ({"ProfilingParameters": {"RotateMaxFileSizeInBytes": -5}}, "RotateMaxFileSizeInBytes"),
        ({"ProfilingParameters": {"RotateFileCloseIntervalInSeconds": "soon"}}, "RotateFileCloseIntervalInSeconds"),
        ({"ProfilingParameters": {"LocalPath": ""}}, "LocalPath"),
        ({"DisableProfiler": "maybe"}, "DisableProfiler"),
        (
            {"ProfilingParameters": {"PythonProfilingConfig": '{"ProfilerName": "yappi"}'}},
            "PythonProfilingConfig.ProfilerName",
        ),
        (
            {"ProfilingParameters": {"PythonProfilingConfig": '{"cProfileTimer": "gpu_time"}'}},
            "PythonProfilingConfig.cProfileTimer",
        ),
        ({"ProfilingParameters": {"DetailedProfilingConfig": '{"StartStep": '}}, "DetailedProfilingConfig"),
        (
            {"ProfilingParameters": {"DetailedProfilingConfig": '{"StartStep": 1, "StartTimeInSecSinceEpoch": 5}'}},
            "DetailedProfilingConfig",
        ),
        (
            {"ProfilingParameters": {"DetailedProfilingConfig": '{"StartStep": "three"}'}},
            "DetailedProfilingConfig.StartStep",
        ),
        ({"ProfilingParameters": {"DetailedProfilingConfig": '{"NumSteps": 0}'}}, "DetailedProfilingConfig.NumSteps"),
        (
            {"ProfilingParameters": {"DataloaderProfilingConfig": '{"MetricsRegex": "("}'}},
            "DataloaderProfilingConfig.MetricsRegex",
        ),
        ({"ProfilingParameters": {"DataloaderProfilingConfig": '{"Steps": 3}'}}, "DataloaderProfilingConfig.Steps"),
        ({"ProfilingParameters": {"PythonProfilingConfig": "[1, 2]"}}, "PythonProfilingConfig"),
        (
            {"ProfilingParameters": {"PythonProfilingConfig": '{"DurationInSeconds": 5}'}},
            "PythonProfilingConfig.DurationInSeconds",
        ),
    ],
)
def test_an_invalid_value_is_an_error_naming_the_key(doc, key):
    with pytest.raises(SMDebugValueError, match=key.replace(".", r"\.")):
        ProfilerConfig.from_dict(doc)


def test_keyword_arguments_are_checked_like_the_json():
    c = ProfilerConfig(local_path="/tmp/p", interval_millis=100, python=(3, 2), dataloader={"StartStep": 5})
    assert (c.python.start_step, c.python.num_steps) == (3, 2) and c.dataloader.start_step == 5
    with pytest.raises(SMDebugValueError, match="ProfilingIntervalInMilliseconds"):
        ProfilerConfig(interval_millis=0)
    with pytest.raises(SMDebugValueError, match="PythonProfilingConfig.ProfilerName"):
        ProfilerConfig(python={"ProfilerName": "perf"})


def test_load_reads_the_environment_path_and_is_none_without_a_file(tmp_path, monkeypatch):
    monkeypatch.setenv(CONFIG_PATH_ENV, str(tmp_path / "absent.json"))
    assert ProfilerConfig.load() is None
    path = tmp_path / "p.json"
    path.write_text(json.dumps(SDK_CONFIG))
    monkeypatch.setenv(CONFIG_PATH_ENV, str(path))
    assert ProfilerConfig.load().interval_millis == 100
    path.write_text("{not json")
    with pytest.raises(SMDebugValueError, match=str(path)):
        ProfilerConfig.load()


def test_step_and_time_ranges():
    r = ProfilingRange.parse("PythonProfilingConfig", '{"StartStep": 4, "NumSteps": 2, }')
    assert [s for s in range(10) if r.has_step(s)] == [4, 5]
    first = ProfilingRange.parse("PythonProfilingConfig", {"NumSteps": 2})  # from the first step seen
    assert [s for s in range(7, 12) if first.has_step(s)] == [7, 8]
    t = ProfilingRange.parse("DetailedProfilingConfig", {"StartTimeInSecSinceEpoch": 100, "Duration": 10})
    assert [t.has_step(s, now) for s, now in [(0, 99.0), (1, 100.0), (2, 109.9), (3, 110.0)]] == [
        False,
        True,
        True,
        False,
    ]
    one = ProfilingRange.parse("DetailedProfilingConfig", {"StartTimeInSecSinceEpoch": 100})
    assert [one.has_step(s, now) for s, now in [(0, 99.0), (1, 101.0), (2, 102.0)]] == [False, True, False]


def test_a_hook_takes_the_json_as_a_dict(tmp_path):
    from smdebug.profiler import profiler_for_hook

    p = profiler_for_hook(
        {"ProfilingParameters": {"LocalPath": str(tmp_path), "PythonProfilingConfig": {"StartStep": 2}}},
        str(tmp_path / "out"),
        "pytorch",
    )
    try:
        assert p.root == str(tmp_path) and p.config.python.start_step == 2
    finally:
        p.close()
    assert profiler_for_hook({"DisableProfiler": True}, str(tmp_path), "pytorch") is None
    with pytest.raises(SMDebugValueError, match="ProfilingIntervalInMilliseconds"):
        profiler_for_hook({"ProfilingIntervalInMilliseconds": -1}, str(tmp_path), "pytorch")
