"""1.0.34's reader API (LocalSystemMetricsReader, LocalAlgorithmMetricsReader, TimeUnits, TraceEvent,
ProfilerSystemEvent) and create_trial(path, profiler=True): the same answers as 1.0.34's own readers
on the same files (the same query script runs in both interpreters)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from smdebug.exceptions import NoMoreProfilerData
from smdebug.trials import create_trial
from smdtest import run_json

FIXTURES = Path(__file__).parents[1] / "fixtures" / "sagemaker-debugger"
QUERIES = Path(__file__).with_name("compat_queries.py")
FAR = 4102444800  # 2100-01-01 in seconds


def _both(peer, root, queries, tmp_path):
    qfile = tmp_path / "queries.json"
    qfile.write_text(json.dumps(queries))
    return run_json(sys.executable, QUERIES, root, qfile), run_json(peer, QUERIES, root, qfile)


def test_system_reader_answers_as_1034(peer, tmp_path):
    root = FIXTURES / "test_traces"
    queries = [
        {"reader": "system", "call": "get_events", "args": [0, FAR], "kwargs": {"unit": "SECONDS"}},
        {
            "reader": "system",
            "call": "get_events",
            "args": [1591160699457, 1591748160000],
            "kwargs": {"unit": "MILLISECONDS"},
        },
        {"reader": "system", "call": "get_events", "args": [0, FAR * 10**6], "kwargs": {"event_type": "gpu"}},
        {
            "reader": "system",
            "call": "get_events",
            "args": [1591748100 * 10**9, 1591748130 * 10**9],
            "kwargs": {"unit": "NANOSECONDS", "event_type": "cpu"},
        },
        {"reader": "system", "call": "get_timestamp_of_first_available_file"},
        {"reader": "system", "call": "get_timestamp_of_latest_available_file"},
    ]
    ours, theirs = _both(peer, root, queries, tmp_path)
    assert all(len(r) > 0 for r in theirs[:3])
    assert ours == theirs


@pytest.mark.parametrize("folder", ["test_traces", "model_timeline_traces", "merge_traces"])
def test_framework_reader_answers_as_1034(peer, tmp_path, folder):
    root = FIXTURES / folder
    queries = [
        {"reader": "framework", "call": "get_events", "args": [0, FAR * 10**6]},
        {
            "reader": "framework",
            "call": "get_events",
            "args": [0, FAR * 10**6],
            "kwargs": {"file_suffix_filter": ["model_timeline.json"]},
        },
        {"reader": "framework", "call": "get_timestamp_of_first_available_file"},
        {"reader": "framework", "call": "get_timestamp_of_latest_available_file"},
    ]
    ours, theirs = _both(peer, root, queries, tmp_path)
    assert len(theirs[0]) > 0
    assert ours == theirs
    # a window in the middle of the run: events overlapping it, inclusive at both ends
    events = theirs[0]
    mid = sorted(e[2] for e in events)[len(events) // 2]
    window = [
        {"reader": "framework", "call": "get_events", "args": [mid, mid + 1000]},
        {
            "reader": "framework",
            "call": "get_events",
            "args": [mid / 1e6, (mid + 1000) / 1e6],
            "kwargs": {"unit": "SECONDS"},
        },
    ]
    ours, theirs = _both(peer, root, window, tmp_path)
    assert len(theirs[0]) > 0 and ours == theirs


def test_events_by_step_as_1034(peer, tmp_path):
    root = FIXTURES / "test_traces"
    queries = [
        {"reader": "framework", "call": "_get_time_interval_for_step", "args": [1, 3]},
        {"reader": "framework", "call": "get_events_by_step", "args": [1, 3]},
        {"reader": "framework", "call": "_get_time_interval_for_step", "args": [1, 99]},
    ]
    ours, theirs = _both(peer, root, queries, tmp_path)
    assert theirs[0] != [0, 0] and len(theirs[1]) > 0 and theirs[2] == [0, 0]
    assert ours == theirs


def test_create_trial_profiler_true_opens_at_once_and_answers_in_1034_shapes(tmp_path):
    from smdebug.profiler.system_profiler_file_parser import ProfilerSystemEvent
    from smdebug.profiler.trace_event_file_parser import TraceEvent
    from smdebug.trials.profiler_trial import ProfilerTrial

    t0 = time.monotonic()
    trial = create_trial(str(FIXTURES / "test_traces"), profiler=True, output_dir=str(tmp_path / "out"))
    assert time.monotonic() - t0 < 5  # 1.0.34 slept 10 s here
    assert isinstance(trial, ProfilerTrial) and trial.name == "test_traces"
    assert trial.output_dir == str(tmp_path / "out") and trial.temp_dir == str(tmp_path / "out" / ".sagemaker-ignore")
    assert trial.ensure_output_dir() and (tmp_path / "out" / ".sagemaker-ignore").is_dir()
    first = trial.get_first_timestamp()
    assert first == trial.first_timestamp and first > 0
    sys_events = trial.get_system_metrics(0, FAR * 10**6)
    fw_events = trial.get_framework_metrics(0, FAR * 10**6)
    assert sys_events and all(isinstance(e, ProfilerSystemEvent) for e in sys_events)
    assert fw_events and all(isinstance(e, TraceEvent) for e in fw_events)
    assert sum(len(s) for s in trial.system_series()) == len(sys_events)
    assert len(trial.framework_events()) == len(fw_events)
    # the smaller of the two streams' newest data (system: the last sample; framework: the newest
    # file's last event end): here the framework files end in 2020-05, the system samples in 2020-06
    latest = trial.get_latest_timestamp()
    assert latest == trial.framework_metrics_reader.get_timestamp_of_latest_available_file() == 1589930991000000
    # a finished job: a window past the data ends the rule, one inside it is there at once
    assert not trial.job_finished()
    assert trial.wait_for_data(first, first - 1) is True
    assert trial.wait_for_data(latest + 10**9, latest + 10**8, timeout_s=0) is False


def test_wait_for_data_raises_no_more_data_after_the_job_ended(tmp_path):
    import shutil

    root = tmp_path / "job"
    shutil.copytree(FIXTURES / "test_traces", root)
    (root / "system" / "training_job_end.ts").write_bytes(b"")
    trial = create_trial(str(root), profiler=True, output_dir=str(tmp_path / "out"))
    assert trial.job_finished()
    latest = trial.get_latest_timestamp()
    with pytest.raises(NoMoreProfilerData):
        trial.wait_for_data(latest + 10**6, latest)
    assert trial.wait_for_data(latest + 10**6, latest - 10**6) is True  # the last window, partly there


def test_a_folder_without_profiler_data_opens_empty(tmp_path):
    trial = create_trial(str(tmp_path), profiler=True, output_dir=str(tmp_path / "out"))
    assert trial.get_first_timestamp() is None and trial.get_latest_timestamp() == 0
    assert trial.get_system_metrics(0, FAR * 10**6) == [] and trial.get_framework_metrics(0, FAR * 10**6) == []
    assert trial.system_metrics_reader.get_timestamp_of_first_available_file() == 0
    assert not (tmp_path / "out").exists()  # made only when a rule writes there


def test_the_readers_import_no_pandas_and_pyarrow_only_to_read_system_files():
    import subprocess

    code = (
        "import sys, json, smdebug.trials.profiler_trial, smdebug.profiler.system_metrics_reader, "
        "smdebug.profiler.algorithm_metrics_reader\n"
        "from smdebug.profiler.trial import ProfilerTrial\n"
        "before = sorted({m.split('.')[0] for m in sys.modules})\n"
        f"t = ProfilerTrial({str(FIXTURES / 'test_traces')!r})\n"
        "assert t.system_series() and len(t.framework_events())\n"
        "print(json.dumps([before, sorted({m.split('.')[0] for m in sys.modules})]))"
    )
    before, after = (
        set(x)
        for x in json.loads(
            subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        )
    )
    assert not before & {"pandas", "pyarrow", "torch", "boto3"}, before & {"pandas", "pyarrow", "torch", "boto3"}
    assert "pyarrow" in after and "pandas" not in after  # pyarrow's to_numpy would import pandas: not used


def test_the_system_reader_finds_steps_in_the_framework_files_of_its_folder(tmp_path):
    """1.0.34's system reader looked for step bounds among the system files and always found
    none (0, 0): ours takes them from the timelines beside them."""
    from smdebug.profiler.system_metrics_reader import LocalSystemMetricsReader

    root = tmp_path / "job"
    m0 = 1_800_000_000 // 60 * 60
    base = m0 * 10**6
    (root / "system" / "incremental" / "x").mkdir(parents=True)
    (root / "system" / "incremental" / "x" / f"{m0}.algo-1.json").write_text(
        "".join(
            f'{{"Type":"cpu","Name":"cpu0","Dimension":"CPUUtilization","Value":{i},"NodeId":"algo-1",'
            f'"Timestamp":{m0 + i * 0.5}}}\n'
            for i in range(20)
        )
    )
    events = [
        {"name": "process_name", "ph": "M", "pid": 0, "args": {"start_time_since_epoch_in_micros": base}},
        {"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "Step:ModeKeys.TRAIN"}},
    ]
    events += [
        {
            "name": "Step:ModeKeys.TRAIN",
            "ph": "X",
            "pid": 1,
            "ts": s * 2_000_000,
            "dur": 2_000_000,
            "args": {"step_num": str(s)},
        }
        for s in range(5)
    ]
    pevents = root / "framework" / "pevents" / "x"
    pevents.mkdir(parents=True)
    (pevents / f"{base + 10_000_000}_1-algo-1_pythontimeline.json").write_text(json.dumps(events))
    reader = LocalSystemMetricsReader(str(root))
    assert reader._get_time_interval_for_step(1, 3) == (base + 2_000_000, base + 6_000_000 - 1)
    values = sorted(e.value for e in reader.get_events_by_step(1, 3))
    assert values == [float(i) for i in range(4, 12)]  # samples at 2.0 s .. 5.5 s
