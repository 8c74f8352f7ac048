"""The timeline's tracks are named once each, and nothing is left without a name: Perfetto names a
counter track ``<event name> <argument name>`` (it showed ``cpu0 CPUUtilization CPUUtilization``),
and draws global instant events (Kineto's ``Record Window End``, a 1.0.34 rule report's firing) on
a track of no name above everything ("Unnamed SliceTrack")."""

from __future__ import annotations

import pytest
from perfetto_ui import PerfettoUI, missing
from synth import SynthTrial, write_kineto
from trace_check import trace_problems

from smdebug.profiler.views.timeline import build_timeline

RULES = {
    "StepOutlier": {"RuleTriggered": 1, "Verdict": {"fired_windows": []}},
    "LowGPUUtilization": {"RuleTriggered": 2},
}  # 1.0.34's report: fired, no window said


def _trace(tmp_path):
    trial = SynthTrial(tmp_path, all_metrics=True)  # a torch.profiler file, with its global instant
    steps = trial.steps("TRAIN")
    write_kineto(str(tmp_path), "0-algo-1", int(steps.start_us[9]), 1)  # a second one
    return build_timeline(trial, rule_reports=RULES)


def test_counters_are_named_once_and_every_track_has_a_name(tmp_path):
    trace = _trace(tmp_path)
    assert trace_problems(trace) == []
    ev = trace["traceEvents"]
    counters = {(e["name"], *e["args"]) for e in ev if e["ph"] == "C"}
    assert ("cpu0 CPUUtilization", "%") in counters and ("IOPS", "ops/s") in counters
    assert ("ReceiveBytesPerSecond", "bytes/s") in counters and ("JobCPUDemand", "%") in counters
    for name, arg in counters:
        words = f"{name} {arg}".split()  # Perfetto's track name
        assert len(words) == len(set(words)), (name, arg)
    # no global instant: each is an instant of a named thread
    assert [e["name"] for e in ev if e["ph"] in ("i", "I") and e.get("s") == "g"] == []
    procs = {e["pid"] for e in ev if e["ph"] == "M" and e["name"] == "process_name" and e["args"]["name"]}
    threads = {(e["pid"], e["tid"]) for e in ev if e["ph"] == "M" and e["name"] == "thread_name" and e["args"]["name"]}
    for e in ev:
        if e["ph"] == "M":
            continue
        assert e["pid"] in procs, e
        if e["ph"] in ("X", "i", "I"):
            assert (e["pid"], e["tid"]) in threads or (isinstance(e["tid"], str) and e["tid"]), e
    marks = [e for e in ev if e.get("name") == "Record Window End"]
    assert len(marks) == 2 and all(e["tid"] == "torch.profiler markers" and e["s"] == "t" for e in marks)
    fired = [e for e in ev if e.get("cat") == "rule"]
    assert sorted(e["name"] for e in fired) == ["LowGPUUtilization fired", "StepOutlier fired"]
    assert all(e["ph"] == "i" and e["s"] == "t" for e in fired)
    # Kineto's GPU stream (pid 0, tid 7) has no thread_name in the file: it is named by its tid
    names = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    assert "thread 7" in names


@pytest.mark.skipif(missing() is not None, reason=missing() or "")
def test_perfetto_shows_no_unnamed_track_and_each_counter_named_once(tmp_path):
    trace = _trace(tmp_path)
    ui = PerfettoUI(tmp_path / "ui")
    try:
        shown = ui.load(trace, expect="system algo-1")
        imported = ui.imported()
        problems = ui.problems()
    finally:
        ui.close()
    assert "Unnamed" not in shown, shown[:2000]
    tracks = [track for (proc, track) in imported["counters"]]
    assert "cpu0 CPUUtilization %" in tracks and "IOPS ops/s" in tracks and "gpu0 GPUMemoryUtilization %" in tracks
    assert all(len(t.split()) == len(set(t.split())) for t in tracks), tracks
    assert ("profiler rules", "LowGPUUtilization") in imported["slices"]  # its firing, on its own thread
    assert all(proc and thread for proc, thread in imported["slices"]), imported["slices"]
    assert problems == []
