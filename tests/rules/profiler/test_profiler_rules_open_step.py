"""A live profiler rule does not judge a window while a step that started in it is still open.

Events are written when they end: a stalled step is written after the events inside it (its data
fetch, its forward pass), and those may already be in a finished file whose name (its last event
end) is past the window. Judged by the files' names alone, the window would be judged without the
stall (seen under load on CI's host: StepOutlier missed a 4 s step and training was not stopped)."""

from __future__ import annotations

from smdebug.profiler import TimelineWriter
from smdebug.profiler.trial import ProfilerTrial
from smdebug.rules.profiler import get_profiler_rule_class as get_rule_class

MS = 1000
T0 = 1_790_000_000_000_000
NODE = "7-algo-1"
STEP = "Step:ModeKeys.TRAIN"


def _file(root, events) -> None:
    """One finished timeline file of NODE holding ``events`` ``(phase, name, start_us, end_us, step)``."""
    w = TimelineWriter(str(root), NODE)
    for phase, name, start, end, step in events:
        w.complete(phase, name, start, end, {"pid": 1, "step_num": str(step)})
    w.close()


def _steps(first, last, t0):
    """Steps ``first..last-1`` of 50 ms from ``t0``, each with its forward pass."""
    out = []
    for i, s in enumerate(range(first, last)):
        a = t0 + 50 * MS * i
        out += [("Forward", "Net", a + 1 * MS, a + 20 * MS, s), (STEP, STEP, a, a + 50 * MS, s)]
    return out


def test_the_complete_time_stops_at_the_newest_steps_end(tmp_path):
    stall = T0 + 500 * MS  # step 10 starts here and lasts 4 s
    _file(
        tmp_path,
        _steps(0, 10, T0)
        + [
            ("DataLoaderIter", "next", stall, stall + MS, 10),
            ("Forward", "Net", stall + 4000 * MS, stall + 4030 * MS, 10),
        ],
    )
    trial = ProfilerTrial(str(tmp_path))
    assert trial.get_latest_timestamp() == stall + 4030 * MS  # the file's name: its last event end
    assert trial.get_complete_timestamp() == stall  # step 10 may still be open: data is complete up to 9's end
    _file(tmp_path, [(STEP, STEP, stall, stall + 4100 * MS, 10)] + _steps(11, 13, stall + 4100 * MS))
    trial.refresh()
    assert trial.get_complete_timestamp() == stall + 4200 * MS  # step 12's end
    assert trial.get_complete_timestamp() <= trial.get_latest_timestamp()


def test_a_live_rule_waits_for_the_open_step_of_its_window(tmp_path):
    stall = T0 + 500 * MS
    _file(tmp_path, _steps(0, 10, T0) + [("Forward", "Net", stall + 4000 * MS, stall + 4030 * MS, 10)])
    looked = []

    def sleep(_):  # between two looks at the running job: it writes step 10, then ends
        looked.append(True)
        if len(looked) == 1:
            _file(tmp_path, [(STEP, STEP, stall, stall + 4100 * MS, 10)] + _steps(11, 40, stall + 4100 * MS))
            (tmp_path / "framework" / "training_job_end.ts").write_text("")

    rule = get_rule_class("StepOutlier")(ProfilerTrial(str(tmp_path)), scan_interval_us=str(1000 * MS), sleep=sleep)
    rule.invoke(0)  # the first window [T0, T0 + 1 s): step 10 started in it
    assert looked, "the window was judged while step 10 was open"
    (seen,) = rule.steps.values()
    assert 10 in seen["n"].tolist() and max(seen["d"]) == 4100 * MS
