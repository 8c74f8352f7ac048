"""A trial read while its job still runs: completeness, has_passed_step, wait_for_steps, the end
(in a local folder and on S3)."""

import numpy as np
import pytest

import trialgen as tg
from smdebug.core.modes import ModeKeys
from smdebug.exceptions import NoMoreData, StepNotYetAvailable, StepUnavailable
from smdebug.trials import create_trial

W3 = tg.workers(3)


def test_step_state_importable():
    from smdebug.core.tensor import StepState

    assert {s.name for s in StepState} == {"UNAVAILABLE", "AVAILABLE", "NOT_YET_AVAILABLE"}
    from smdebug.trials.tensor import StepState as Again

    assert Again is StepState


def _write(path, step, workers, mode=ModeKeys.TRAIN):
    for w in workers:
        tg.write_step(path, step, w, ["x"], mode=mode, mode_step=step)


@pytest.fixture
def running(root):
    path = root / "running_job"
    tg.write_collections(path, W3)
    for s in range(3):
        _write(path, s, W3)
    return path


def test_running_job_lifecycle(running):
    from smdebug.core.tensor import StepState

    path = running
    trial = create_trial(path.url)
    assert trial.steps() == [0, 1, 2]
    assert trial.workers() == W3
    x = trial.tensor("x")
    assert x.steps() == [0, 1, 2]

    # a step written after the trial was opened shows up on the next query
    _write(path, 3, W3)
    assert trial.steps() == [0, 1, 2, 3]
    assert x.steps() == [0, 1, 2, 3]
    assert trial.steps(mode=ModeKeys.TRAIN) == [0, 1, 2, 3]
    np.testing.assert_array_equal(x.value(3, worker="worker_2"), tg.value("x", 3, "worker_2"))

    # step 4 written by 2 of 3 workers: incomplete
    _write(path, 4, W3[:2])
    assert trial.steps() == [0, 1, 2, 3]
    assert trial.steps(show_incomplete_steps=True) == [0, 1, 2, 3, 4]
    assert trial.steps(mode=ModeKeys.TRAIN) == [0, 1, 2, 3]
    assert trial.steps(mode=ModeKeys.TRAIN, show_incomplete_steps=True) == [0, 1, 2, 3, 4]
    assert x.steps() == [0, 1, 2, 3]
    assert x.steps(show_incomplete_steps=True) == [0, 1, 2, 3, 4]
    assert trial.has_passed_step(3) == StepState.AVAILABLE
    assert trial.has_passed_step(4) == StepState.NOT_YET_AVAILABLE
    assert trial.has_passed_step(4, mode=ModeKeys.TRAIN) == StepState.NOT_YET_AVAILABLE
    assert trial.has_passed_step(100) == StepState.NOT_YET_AVAILABLE
    assert trial.has_passed_step(-1) == StepState.UNAVAILABLE
    with pytest.raises(StepNotYetAvailable):
        x.value(100)
    with pytest.raises(StepNotYetAvailable):
        x.value(100, mode=ModeKeys.TRAIN)
    trial.wait_for_steps([0, 3])  # returns at once
    with pytest.raises(TimeoutError):
        trial.wait_for_steps([100], timeout=0.2)
    with pytest.raises(TimeoutError):
        trial.wait_for_steps([4], timeout=0.2)

    # step 5 complete for every worker: step 4 can no longer complete, so it counts as complete
    _write(path, 5, W3)
    assert trial.has_passed_step(4) == StepState.AVAILABLE
    assert trial.steps() == [0, 1, 2, 3, 4, 5]
    assert x.steps() == [0, 1, 2, 3, 4, 5]
    assert x.workers(4) == ["worker_0", "worker_1"]
    np.testing.assert_array_equal(x.value(4, worker="worker_1"), tg.value("x", 4, "worker_1"))
    trial.wait_for_steps([4, 5])

    # 6 and 8 complete, 7 skipped: 7 will never come
    _write(path, 6, W3)
    _write(path, 8, W3)
    assert trial.steps() == [0, 1, 2, 3, 4, 5, 6, 8]
    assert trial.has_passed_step(7) == StepState.UNAVAILABLE
    assert trial.has_passed_step(8) == StepState.AVAILABLE
    with pytest.raises(StepUnavailable):
        x.value(7)
    with pytest.raises(StepUnavailable):
        trial.wait_for_steps([7])

    # step 9 from one worker only, then the job ends: 9 counts as complete
    _write(path, 9, W3[:1])
    assert trial.has_passed_step(9) == StepState.NOT_YET_AVAILABLE
    assert trial.has_passed_step(10) == StepState.NOT_YET_AVAILABLE
    tg.end_job(path)
    assert trial.has_passed_step(9) == StepState.AVAILABLE
    assert trial.steps() == [0, 1, 2, 3, 4, 5, 6, 8, 9]
    assert trial.has_passed_step(10) == StepState.UNAVAILABLE
    assert trial.has_passed_step(100) == StepState.UNAVAILABLE
    assert trial.has_passed_step(7) == StepState.UNAVAILABLE
    with pytest.raises(StepUnavailable):
        x.value(19)
    with pytest.raises(StepUnavailable):
        x.value(7)
    with pytest.raises(NoMoreData) as ei:
        trial.wait_for_steps([19])
    assert ei.value.last_step == 9
    assert "19" in str(ei.value)
    with pytest.raises(NoMoreData):
        trial.wait_for_steps([9, 10])
    trial.wait_for_steps([0, 4, 9])
    with pytest.raises(StepUnavailable):
        trial.wait_for_steps([7])
    np.testing.assert_array_equal(x.value(9), tg.value("x", 9, "worker_0"))


def test_value_at_incomplete_step(running):
    """An incomplete step is hidden from steps(); the workers that wrote it can be read (as in
    smdebug 1.0.34), a worker that has not written it yet may still do so."""
    path = running
    trial = create_trial(path.url)
    _write(path, 3, W3[:2])
    x = trial.tensor("x")
    assert x.steps() == [0, 1, 2]
    assert x.steps(show_incomplete_steps=True) == [0, 1, 2, 3]
    np.testing.assert_array_equal(x.value(3), tg.value("x", 3, "worker_0"))
    np.testing.assert_array_equal(x.value(3, worker="worker_1"), tg.value("x", 3, "worker_1"))
    with pytest.raises(StepNotYetAvailable):
        x.value(3, worker="worker_2")
    _write(path, 3, W3[2:])
    np.testing.assert_array_equal(x.value(3, worker="worker_2"), tg.value("x", 3, "worker_2"))


def test_wait_for_steps_sees_steps_written_before_wait(running):
    from smdebug.analysis.utils import no_refresh

    path = running
    trial = create_trial(path.url)
    _write(path, 3, W3)
    with no_refresh(trial):
        assert trial.steps() == [0, 1, 2]
        trial.wait_for_steps([3], timeout=5)  # wait_for_steps refreshes even inside no_refresh
        assert trial.dynamic_refresh is False
    assert trial.steps() == [0, 1, 2, 3]


def test_has_passed_step_eval_mode(root):
    from smdebug.core.tensor import StepState

    path = root / "eval_job"
    tg.write_collections(path, W3[:2])
    for g, mode, ms in ((0, ModeKeys.TRAIN, 0), (1, ModeKeys.EVAL, 0), (2, ModeKeys.TRAIN, 1), (4, ModeKeys.EVAL, 2)):
        for w in W3[:2]:
            tg.write_step(path, g, w, ["x"], mode=mode, mode_step=ms)
    trial = create_trial(path.url)
    assert trial.steps(mode=ModeKeys.EVAL) == [0, 2]
    assert trial.has_passed_step(0, mode=ModeKeys.EVAL) == StepState.AVAILABLE
    assert trial.has_passed_step(1, mode=ModeKeys.EVAL) == StepState.UNAVAILABLE
    assert trial.has_passed_step(3, mode=ModeKeys.EVAL) == StepState.NOT_YET_AVAILABLE
    tg.end_job(path)
    assert trial.has_passed_step(3, mode=ModeKeys.EVAL) == StepState.UNAVAILABLE
    with pytest.raises(NoMoreData):
        trial.wait_for_steps([3], mode=ModeKeys.EVAL)
    with pytest.raises(StepUnavailable):
        trial.wait_for_steps([1], mode=ModeKeys.EVAL)
    trial.wait_for_steps([0, 2], mode=ModeKeys.EVAL)


# ---------------------------------------------------------------------------- straggler window
def _straggler(path):
    tg.write_collections(path, ["worker_0", "worker_1"])
    for s in range(10):
        tg.write_step(path, s, "worker_0", ["x"])
    for s in range(2):
        tg.write_step(path, s, "worker_1", ["x"])


def test_default_window_waits_for_straggler(root):
    from smdebug.core.tensor import StepState

    _straggler(root)
    trial = create_trial(root.url)
    for _ in range(3):
        assert trial.steps() == [0, 1]
    assert trial.steps(show_incomplete_steps=True) == list(range(10))
    assert trial.has_passed_step(2) == StepState.NOT_YET_AVAILABLE


def test_incomplete_step_window(root, monkeypatch):
    """Window 4, steps 2..9 pending (8 > 4): the oldest pending steps count as complete, 4 // 2
    at a time, until no more than 4 are pending (6..9)."""
    from smdebug.core.tensor import StepState

    monkeypatch.setenv("SMDEBUG_INCOMPLETE_STEP_WAIT_WINDOW", "4")
    _straggler(root)
    trial = create_trial(root.url)
    assert trial.last_complete_step == 5
    for _ in range(4):
        assert trial.steps() == [0, 1, 2, 3, 4, 5]
    assert trial.steps(show_incomplete_steps=True) == list(range(10))
    assert trial.has_passed_step(5) == StepState.AVAILABLE
    assert trial.has_passed_step(6) == StepState.NOT_YET_AVAILABLE
    x = trial.tensor("x")
    assert x.steps() == [0, 1, 2, 3, 4, 5]
    assert x.workers(5) == ["worker_0"]
    np.testing.assert_array_equal(x.value(5), tg.value("x", 5, "worker_0"))

    # worker_0 keeps going: the window slides on, in one refresh
    for s in range(10, 14):
        tg.write_step(root, s, "worker_0", ["x"])
    assert trial.steps() == list(range(10))
    assert trial.steps() == list(range(10))
    assert trial.has_passed_step(10) == StepState.NOT_YET_AVAILABLE

    # the straggler catches up on a later step: everything before it is complete
    tg.write_step(root, 12, "worker_1", ["x"])
    assert trial.steps() == list(range(13))
