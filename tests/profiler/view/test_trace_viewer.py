"""The one-timeline trace in a real viewer: chrome://tracing's trace viewer (catapult's, loaded as
trace_viewer.py says) imports it through its own importer with no warning, and its model holds every
process, thread, slice, counter sample and flow of the trace, in our process order."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from synth import SynthTrial, profiled_pytorch_run, write_kineto
from trace_check import trace_problems
from trace_viewer import TraceViewer, needs_trace_viewer

from smdebug.profiler.views.timeline import build_timeline, counter_name

pytestmark = needs_trace_viewer
STEPS = 40
PROFILED = {"StartStep": 5, "NumSteps": 2}


@pytest.fixture
def trace_viewer(tmp_path):
    viewer = TraceViewer(tmp_path / "viewer")
    yield viewer
    viewer.close()


def _shown(trace: dict) -> dict:
    """What a viewer must show of ``trace``: per process (pid), its name, its threads' slice counts
    (by thread name, or tid when unnamed; complete and thread-scoped instant events) and its counters'
    sample counts; flows; global instants."""
    ev = trace["traceEvents"]
    procs = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    out: dict = {pid: {"threads": Counter(), "counters": Counter()} for pid in procs}
    for e in ev:
        if e["ph"] == "X" or (e["ph"] in ("i", "I") and e.get("s", "t") == "t"):  # (an instant: a slice of 0 µs)
            out[e["pid"]]["threads"][threads.get((e["pid"], e["tid"]), e["tid"])] += 1
        elif e["ph"] == "C":
            out[e["pid"]]["counters"][e["name"]] += 1
    return {
        "processes": {
            pid: {"name": procs[pid], "threads": dict(p["threads"]), "counters": dict(p["counters"])}
            for pid, p in out.items()
        },
        "flows": sum(e["ph"] == "s" for e in ev),
        "global_instants": sorted(e["name"] for e in ev if e["ph"] in ("i", "I") and e.get("s") == "g"),
    }


def _imported(state: dict) -> dict:
    """The same, as the viewer's model holds it."""
    procs = {
        p["pid"]: {
            "name": p["name"],
            "threads": {t["name"] if t["name"] is not None else t["tid"]: t["slices"] for t in p["threads"]},
            "counters": {c["name"]: c["samples"] for c in p["counters"]},
        }
        for p in state["processes"]
    }
    return {"processes": procs, "flows": state["flows"], "global_instants": sorted(state["global_instants"])}


def test_a_profiled_pytorch_run_opens_in_the_trace_viewer_with_every_event(tmp_path, trace_viewer):
    from smdebug.profiler.trial import ProfilerTrial

    trial = ProfilerTrial(str(profiled_pytorch_run(tmp_path, STEPS, PROFILED)))
    trace = build_timeline(trial)
    assert trace_problems(trace) == []
    state = trace_viewer.load(trace)
    assert state["warnings"] == [] and trace_viewer.problems() == []
    assert _imported(state) == _shown(trace)
    # ... and what the run wrote, read apart from the timeline: the steps, the system samples, torch.profiler's file
    (fw,) = trace["otherData"]["framework_processes"]
    procs = {p["name"]: p for p in _imported(state)["processes"].values()}
    assert state["order"] == [
        "system algo-1",
        f"framework {fw}",
        f"torch.profiler python [{fw}]",
        f"torch.profiler Spans [{fw}]",
    ]  # Kineto's "Spans" process, named by its pid
    assert procs[f"framework {fw}"]["threads"]["Step:ModeKeys.TRAIN"] == STEPS
    series = trial.system_series(trace["otherData"]["start_us"], trace["otherData"]["end_us"])
    assert procs["system algo-1"]["counters"] == {counter_name(s): len(s.timestamp_us) for s in series}
    assert {"cpu0 CPUUtilization", "MemoryUsedPercent"} <= set(procs["system algo-1"]["counters"])
    assert min(len(s.timestamp_us) for s in series) >= 2
    (kineto,) = trace["otherData"]["detailed_profiles"]
    doc = json.loads((Path(trial.path) / kineto).read_text())
    ops = [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") != "Trace"]
    python = dict(procs[f"torch.profiler python [{fw}]"]["threads"])
    assert python.pop("torch.profiler markers") == 2  # Kineto's global instants, on a named thread
    assert sum(python.values()) == len(ops) > 0
    assert state["flows"] == sum(e.get("ph") == "s" for e in doc["traceEvents"])
    # (Perfetto drew Kineto's global instants on an "Unnamed SliceTrack" above everything)
    assert state["global_instants"] == []


def test_every_source_and_rule_verdicts_open_in_our_process_order(tmp_path, trace_viewer):
    trial = SynthTrial(tmp_path)
    steps = trial.steps("TRAIN")
    write_kineto(str(tmp_path), "0-algo-1", int(steps.start_us[9]), 1)  # a second torch.profiler file
    trace = build_timeline(
        trial,
        rule_reports={
            "StepOutlier": {
                "RuleTriggered": 1,
                "Verdict": {"fired_windows": [[int(steps.start_us[7]), int(steps.end_us[7])]]},
            },
            "LowGPUUtilization": {"RuleTriggered": 2},
        },
    )  # 1.0.34's report: no windows, a global instant
    state = trace_viewer.load(trace)
    assert state["warnings"] == [] and trace_viewer.problems() == []
    assert _imported(state) == _shown(trace)
    # ours first (system, rules, framework), then each torch.profiler file's processes; Kineto's pid 0
    # (the GPU stream here) has no name in the file: named by its pid
    assert state["order"] == [
        "system algo-1",
        "profiler rules",
        "framework algo-1-0",
        "torch.profiler python3 [algo-1-0]",
        "torch.profiler 0 [algo-1-0]",
        "torch.profiler python3 [algo-1-0]",
        "torch.profiler 0 [algo-1-0]",
    ]
    (rules,) = [p for p in _imported(state)["processes"].values() if p["name"] == "profiler rules"]
    assert rules["threads"] == {"StepOutlier": 1, "LowGPUUtilization": 1}  # (an instant: it said no window)
    assert state["global_instants"] == []


def test_1034_resources_open_in_the_trace_viewer(trace_viewer):
    """1.0.34's own test resources (framework files of TF and PyTorch runs, system files)."""
    from smdebug.profiler.trial import ProfilerTrial

    root = Path(__file__).resolve().parents[1] / "fixtures" / "sagemaker-debugger"
    for name in ("merge_traces", "model_timeline_traces", "test_traces"):
        trace = build_timeline(ProfilerTrial(str(root / name)))
        state = trace_viewer.load(trace)
        assert state["warnings"] == [], name
        assert _imported(state) == _shown(trace), name
    assert trace_viewer.problems() == []
