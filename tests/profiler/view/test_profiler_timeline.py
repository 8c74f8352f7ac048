"""One timeline per node: system counters, framework events and torch.profiler's trace merged by
absolute time into one Chrome trace object (its times after ``otherData["ts_base_us"]``)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from synth import STALL_STEP, SynthTrial, write_kineto, write_profile
from trace_check import nesting_problems, trace_problems

from smdebug.exceptions import SMDebugValueError
from smdebug.profiler.reading.frames import FrameworkEvents
from smdebug.profiler.views.timeline import build_timeline, node_of, timeline_nodes


def base_of(trace: dict) -> int:
    return trace["otherData"]["ts_base_us"]


def test_the_trace_is_valid_and_holds_every_source(tmp_path):
    trial = SynthTrial(tmp_path)
    trace = build_timeline(trial)
    assert trace_problems(trace) == []
    assert base_of(trace) == trial.first_timestamp
    ev = trace["traceEvents"]
    procs = {e["pid"]: e["args"]["name"] for e in ev if e["name"] == "process_name"}
    assert procs[1] == "system algo-1" and "framework algo-1-0" in procs.values()
    assert any(v.startswith("torch.profiler python3 [algo-1-0]") for v in procs.values())
    counters = {e["name"] for e in ev if e["ph"] == "C"}
    assert {
        "cpu0 CPUUtilization",
        "cpu1 CPUUtilization",
        "gpu0 GPUUtilization",
        "gpu0 GPUMemoryUtilization",
        "MemoryUsedPercent",
    } <= counters
    # every system sample is a counter point, values kept
    cpu0 = [e for e in ev if e["name"] == "cpu0 CPUUtilization"]
    want = trial.system_series(None, None, dimension="CPUUtilization")[0]
    assert [e["ts"] + base_of(trace) for e in cpu0] == want.timestamp_us.tolist()
    assert np.allclose([e["args"]["%"] for e in cpu0], want.value)  # the value named by its unit
    # framework events: one per row, one thread per phase, step numbers in args
    fw = [e for e in ev if e["ph"] == "X" and e["pid"] == 100]
    assert len(fw) == len(trial.framework_events(None, None))
    threads = {e["tid"]: e["args"]["name"] for e in ev if e["name"] == "thread_name" and e["pid"] == 100}
    assert set(threads.values()) == {"DataLoaderIter", "Forward", "Backward", "Optimizer", "Step:ModeKeys.TRAIN"}
    stall = [e for e in fw if e["cat"] == "Step:ModeKeys.TRAIN" and int(e["args"]["step_num"]) == STALL_STEP]
    assert len(stall) == 1 and stall[0]["dur"] == 500_000


def test_the_kineto_trace_lands_at_its_absolute_time(tmp_path):
    trial = SynthTrial(tmp_path)
    doc = json.loads(open(trial.kineto).read())
    trace = build_timeline(trial)
    ev, base = trace["traceEvents"], base_of(trace)
    # the bases' difference in integer nanoseconds, then Kineto's time: its fractions of a microsecond kept
    shift = (doc["baseTimeNanoseconds"] - base * 1000) / 1000
    ops = [e for e in ev if e.get("cat") == "cpu_op"]
    assert [e["ts"] for e in ops] == [shift + e["ts"] for e in doc["traceEvents"] if e.get("cat") == "cpu_op"]
    # the operators of the profiled steps 3 and 4 fall inside those steps' spans
    steps = trial.steps("TRAIN")
    for op, s in zip(ops, (3, 4)):
        assert steps.start_us[s] <= op["ts"] + base <= steps.end_us[s]
    # Kineto's pids (its process and the GPU stream) are moved out of the way of ours, kept apart
    kpids = {e["pid"] for e in ev if e.get("cat") in ("cpu_op", "kernel")}
    assert len(kpids) == 2 and min(kpids) >= 10000
    flows = [e for e in ev if e["ph"] in ("s", "f")]
    assert {e["id"] for e in flows} == {1, 2}  # integers: Perfetto reads a string id as hexadecimal


def test_a_window_keeps_only_its_events(tmp_path):
    trial = SynthTrial(tmp_path)
    steps = trial.steps("TRAIN")
    lo, hi = int(steps.start_us[8]) + 1, int(steps.end_us[9]) - 1  # overlap is inclusive
    trace = build_timeline(trial, start_us=lo, end_us=hi)
    assert trace_problems(trace) == []  # (no time before the base: steps 8 began before the window)
    base = base_of(trace)
    assert base == min(int(steps.start_us[8]), lo)
    data = [e for e in trace["traceEvents"] if e["ph"] in ("X", "C")]
    assert all(e["ts"] + e.get("dur", 0) + base >= lo and e["ts"] + base <= hi for e in data)
    assert {int(e["args"]["step_num"]) for e in data if e.get("cat") == "Step:ModeKeys.TRAIN"} == {8, 9}
    assert trace["otherData"]["detailed_profiles"] == []  # the profiled steps 3-4 are outside


def test_long_series_are_averaged_down_and_say_so(tmp_path):
    trial = SynthTrial(tmp_path, kineto=False)
    n = len(trial.system_series(None, None, dimension="CPUUtilization")[0])
    trace = build_timeline(trial, max_counter_points=10)
    assert trace_problems(trace) == []
    cpu0 = [e for e in trace["traceEvents"] if e["name"] == "cpu0 CPUUtilization"]
    assert len(cpu0) == 10
    assert trace["otherData"]["downsampled"]["cpu0 CPUUtilization"] == {"samples": n, "points": 10}
    full = trial.system_series(None, None, dimension="CPUUtilization")[0].value
    assert np.isclose(np.mean([e["args"]["%"] for e in cpu0]), full.mean(), rtol=0.05)


def test_nodes_of_a_local_run_and_of_a_cluster():
    assert node_of("algo-2-0", ["algo-1", "algo-2"]) == "algo-2"  # "0-algo-2" in file names, as the readers call it
    assert node_of("4242-mybox", ["algo-1"]) == "algo-1"  # a local run: one node whatever the host is called
    assert node_of("1-other", ["algo-1", "algo-2"]) == "other"
    assert node_of("4242-my-box", []) == "my-box"


def test_several_nodes_need_a_name(tmp_path):
    trial = SynthTrial(tmp_path, kineto=False)
    trial._series += [
        s.__class__("algo-2", s.type, s.name, s.dimension, s.timestamp_us, s.value) for s in trial._series
    ]
    assert timeline_nodes(trial) == ["algo-1", "algo-2"]
    with pytest.raises(SMDebugValueError, match=r"2 nodes \(algo-1, algo-2\): name one"):
        build_timeline(trial)
    two = build_timeline(trial, node="algo-2")
    assert not [e for e in two["traceEvents"] if e["ph"] == "X"]  # the framework process ran on algo-1
    assert {e["name"] for e in two["traceEvents"] if e["ph"] == "C"}
    with pytest.raises(SMDebugValueError, match="no node 'algo-9'"):
        build_timeline(trial, node="algo-9")


def test_a_broken_kineto_file_is_named(tmp_path):
    trial = SynthTrial(tmp_path)
    open(trial.kineto, "w").write("{not json")
    with pytest.raises(SMDebugValueError, match=r"\.pt\.trace\.json: not a torch\.profiler trace"):
        build_timeline(trial)


def test_an_empty_profile_says_so(tmp_path):
    trial = SynthTrial(tmp_path, kineto=False)
    trial.end = None
    trial.get_latest_timestamp = trial.get_end_timestamp = lambda: None
    with pytest.raises(SMDebugValueError, match="no profiler data"):
        build_timeline(trial)


def test_rule_verdicts_are_slices_over_the_windows_they_fired_in(tmp_path):
    trial = SynthTrial(tmp_path, kineto=False)
    steps = trial.steps("TRAIN")
    window = [int(steps.start_us[STALL_STEP]), int(steps.end_us[STALL_STEP])]
    trace = build_timeline(
        trial,
        rule_reports={
            "StepOutlier": {
                "RuleTriggered": 1,
                "Violations": 1,
                "Datapoints": 12,
                "Verdict": {"status": "issues found", "message": "step 7", "fired_windows": [window]},
            },
            "LowGPUUtilization": {"RuleTriggered": 2, "Violations": 2, "Datapoints": 30},  # 1.0.34's: no windows
            "CPUBottleneck": {"RuleTriggered": 0, "Violations": 0},
        },
    )
    assert trace_problems(trace) == []
    fired = [e for e in trace["traceEvents"] if e.get("cat") == "rule"]
    assert [(e["name"], e["ph"]) for e in fired] == [("StepOutlier fired", "X"), ("LowGPUUtilization fired", "i")]
    base = base_of(trace)
    assert [fired[0]["ts"] + base, fired[0]["ts"] + fired[0]["dur"] + base] == window
    assert fired[1]["ts"] + base == trial.get_latest_timestamp()
    threads = {e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name" and e["pid"] == 2}
    assert threads == {"StepOutlier", "LowGPUUtilization"}


def test_second_kineto_file_ids_do_not_collide(tmp_path):
    trial = SynthTrial(tmp_path)
    steps = trial.steps("TRAIN")
    write_kineto(str(tmp_path), "0-algo-1", int(steps.start_us[9]), 1)
    ev = build_timeline(trial)["traceEvents"]
    ids = [e["id"] for e in ev if e["ph"] == "s"]
    assert len(ids) == len(set(ids)) == 3
    assert trace_problems({"traceEvents": ev, "displayTimeUnit": "ms"}) == []


def test_a_profile_written_by_part_1_reads_into_the_same_timeline(tmp_path):
    """The files part 1's writers make, read by the ProfilerTrial: the same tracks and events as the
    in-memory profile they were written from (values as written: 2 decimals)."""
    from smdebug.profiler.trial import ProfilerTrial

    synth = write_profile(tmp_path / "p")
    trial = ProfilerTrial(str(tmp_path / "p"))
    # the timeline is the whole profile: up to the newest data of any stream (the system samples go on
    # after the framework's last event), not where every stream has data
    assert trial.first_timestamp == synth.first_timestamp and trial.get_latest_timestamp() < synth.end
    assert trial.get_end_timestamp() == synth.end
    ours = build_timeline(trial)
    want = build_timeline(synth)
    assert trace_problems(ours) == []

    def shape(trace):
        ev = trace["traceEvents"]
        counters = sorted((e["name"], e["ts"]) for e in ev if e["ph"] == "C")
        spans = sorted((e["cat"], e["name"], e["ts"], e["dur"]) for e in ev if e["ph"] == "X")
        names = sorted(e["args"]["name"] for e in ev if e["name"] in ("process_name", "thread_name"))
        return counters, spans, names

    assert shape(ours) == shape(want)
    assert ours["otherData"]["detailed_profiles"] == want["otherData"]["detailed_profiles"] != []


def test_1034_resources_make_valid_timelines():
    """1.0.34's own test resources (framework files of TF and PyTorch runs, system files)."""
    from pathlib import Path

    from smdebug.profiler.trial import ProfilerTrial

    root = Path(__file__).resolve().parents[1] / "fixtures" / "sagemaker-debugger"
    # test_traces: its framework events end long before its system samples (7 events up to where both
    # streams have data, 88 in all); the TF runs' DataIterator and NcclManager events overlap without
    # nesting: 1 and 6 more threads (2 metadata events each)
    for name, events in (("merge_traces", 712), ("model_timeline_traces", 127), ("test_traces", 88)):
        trial = ProfilerTrial(str(root / name))
        (node,) = timeline_nodes(trial)
        trace = build_timeline(trial, node=node)
        assert trace_problems(trace) == [], name
        assert len(trace["traceEvents"]) == events, name
        assert len([e for e in trace["traceEvents"] if e["ph"] == "X"]) == len(
            trial.framework_events(trace["otherData"]["start_us"], trace["otherData"]["end_us"])
        ), name


def test_events_of_one_thread_that_overlap_without_nesting_go_to_lanes(tmp_path):
    """Perfetto wants the slices of a thread nested: an event that starts inside another and ends
    after it (TF's asynchronous GetNext) goes to a lane of its own, named after the phase."""
    trial = SynthTrial(tmp_path, kineto=False)
    t0 = trial.first_timestamp + 10_000
    rows = [("a", 0, 100), ("b", 50, 150), ("c", 60, 70), ("d", 120, 130), ("e", 140, 160)]
    n = len(rows)
    trial._events = FrameworkEvents(
        phase=np.array(["DataIterator"] * n, dtype=object),
        name=np.array([r[0] for r in rows], dtype=object),
        start_us=np.array([t0 + r[1] for r in rows], dtype=np.int64),
        end_us=np.array([t0 + r[2] for r in rows], dtype=np.int64),
        step=np.full(n, -1, dtype=np.int64),
        node_id=np.array(["algo-1-0"] * n, dtype=object),
        pid=np.full(n, 1, dtype=np.int64),
        tid=np.full(n, 7, dtype=np.int64),
        args=[None] * n,
    )
    trace = build_timeline(trial)
    assert trace_problems(trace) == []
    ev = trace["traceEvents"]
    threads = {e["tid"]: e["args"]["name"] for e in ev if e["name"] == "thread_name" and e["pid"] == 100}
    lanes = {e["name"]: threads[e["tid"]] for e in ev if e["ph"] == "X"}
    assert lanes == {
        "a": "DataIterator",
        "c": "DataIterator",
        "d": "DataIterator",
        "e": "DataIterator",
        "b": "DataIterator (overlapping 1)",
    }
    assert [(e["ts"] + base_of(trace) - t0, e["dur"]) for e in ev if e["ph"] == "X"] == [
        (r[1], r[2] - r[1]) for r in rows
    ]


def test_kineto_ends_rounded_past_their_parent_nest_again(tmp_path):
    """Kineto rounds times and durations to the nanosecond: an operator ending with its parent can
    end a little after it. Such an end is moved back to the parent's; a real overlap stays (and is
    reported by the structural check)."""
    trial = SynthTrial(tmp_path)
    doc = json.loads(open(trial.kineto).read())
    ops = [(1000.0, 100.0, 1), (1050.0, 50.2, 1), (1060.0, 30.0, 1), (2000.0, 10.0, 2), (2005.0, 20.0, 2)]
    doc["traceEvents"] = [
        {"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 777, "tid": tid, "ts": ts, "dur": dur}
        for i, (ts, dur, tid) in enumerate(ops)
    ]
    open(trial.kineto, "w").write(json.dumps(doc))
    trace = build_timeline(trial)
    got = {e["name"]: e for e in trace["traceEvents"] if e.get("cat") == "cpu_op"}
    assert got["op1"]["ts"] + got["op1"]["dur"] == got["op0"]["ts"] + got["op0"]["dur"]  # 0.2 us past: moved back
    assert got["op2"]["dur"] == 30.0 and got["op4"]["dur"] == 20.0  # nested / a real overlap: as written
    assert [p.split(": ", 1)[1].split(" at ")[0] for p in nesting_problems(trace)] == ["'op4'"]
