"""range_steps, and refresh / no_refresh (in a local folder and on S3)."""

import numpy as np
import pytest

import trialgen as tg
from smdebug.analysis.utils import no_refresh, refresh
from smdebug.core.modes import ModeKeys
from smdebug.exceptions import SMDebugValueError, StepUnavailable, TensorUnavailable
from smdebug.trials import create_trial

STEPS = [0, 1, 2, 3, 4, 5, 6, 7, 998, 999, 1000, 1001, 2500]


@pytest.fixture(scope="module")
def ranged_path(module_root):
    path = module_root / "ranged"
    workers = tg.workers(2)
    tg.write_collections(path, workers)
    for s in STEPS:
        for w in workers:
            tg.write_step(path, s, w, ["x"], mode=ModeKeys.TRAIN, mode_step=s)
    tg.end_job(path)
    return path.url


@pytest.mark.parametrize(
    "rng, expected",
    [
        ((2, 5), [2, 3, 4]),
        ((None, 3), [0, 1, 2]),
        ((3, None), [3, 4, 5, 6, 7, 998, 999, 1000, 1001, 2500]),
        ((999, 1001), [999, 1000]),
        ((998, 1000), [998, 999]),
        ((1000, 3000), [1000, 1001, 2500]),
        ((0, 1), [0]),
        ((8, 998), []),
        (None, STEPS),
        ((None, None), STEPS),
    ],
)
def test_range_steps(ranged_path, rng, expected):
    trial = create_trial(ranged_path, range_steps=rng)
    assert trial.steps() == expected
    assert trial.steps(mode=ModeKeys.TRAIN) == expected
    if expected:
        x = trial.tensor("x")
        assert x.steps() == expected
        s = expected[-1]
        np.testing.assert_array_equal(x.value(s, worker="worker_1"), tg.value("x", s, "worker_1"))
        assert trial.workers() == ["worker_0", "worker_1"]


def test_range_steps_hides_outside_steps(ranged_path):
    trial = create_trial(ranged_path, range_steps=(2, 5))
    x = trial.tensor("x")
    with pytest.raises(StepUnavailable):
        x.value(3000)
    assert trial.mode(1) is None
    assert trial.global_step(ModeKeys.TRAIN, 5) is None


@pytest.mark.parametrize("rng", [(5, 2), (3, 3), (-1, 3), (None, -2), ("a", 3), (1, "9"), (1.5, 3), (1, 2, 3), 7, "ab"])
def test_invalid_range_steps(ranged_path, rng):
    with pytest.raises(SMDebugValueError):
        create_trial(ranged_path, range_steps=rng)


# ---------------------------------------------------------------------------- refresh control
def _job(path, steps, workers=("worker_0",)):
    tg.write_collections(path, list(workers))
    for s in steps:
        for w in workers:
            tg.write_step(path, s, w, ["x"])


def test_no_refresh_hides_new_steps(root):
    _job(root, [0, 1])
    trial = create_trial(root.url)
    x = trial.tensor("x")
    assert trial.steps() == [0, 1]
    with no_refresh(trial) as got:
        assert got is trial
        tg.write_step(root, 2, "worker_0", ["x", "y"])
        assert trial.steps() == [0, 1]
        assert x.steps() == [0, 1]
        assert trial.tensor_names() == ["x"]
        assert not trial.has_tensor("y")
        with pytest.raises(TensorUnavailable):
            trial.tensor("y")
    assert trial.dynamic_refresh is True
    assert trial.steps() == [0, 1, 2]
    assert x.steps() == [0, 1, 2]
    assert trial.tensor_names() == ["x", "y"]
    np.testing.assert_array_equal(trial.tensor("y").value(2), tg.value("y", 2, "worker_0"))


def test_refresh_nesting_restores_previous(root):
    _job(root, [0])
    trial = create_trial(root.url)
    with no_refresh(trial):
        with refresh(trial):
            assert trial.dynamic_refresh is True
            tg.write_step(root, 1, "worker_0", ["x"])
            assert trial.steps() == [0, 1]
            with no_refresh(trial):
                tg.write_step(root, 2, "worker_0", ["x"])
                assert trial.steps() == [0, 1]
            assert trial.dynamic_refresh is True
        assert trial.dynamic_refresh is False
        assert trial.steps() == [0, 1]
        with no_refresh(trial):
            assert trial.dynamic_refresh is False
        assert trial.dynamic_refresh is False
    assert trial.dynamic_refresh is True
    assert trial.steps() == [0, 1, 2]


def test_refresh_restores_on_exception(root):
    _job(root, [0])
    trial = create_trial(root.url)
    with pytest.raises(RuntimeError, match="boom"):
        with no_refresh(trial):
            raise RuntimeError("boom")
    assert trial.dynamic_refresh is True
    with no_refresh(trial):
        with pytest.raises(KeyError):
            with refresh(trial):
                assert trial.dynamic_refresh is True
                raise KeyError("inner")
        assert trial.dynamic_refresh is False
    assert trial.dynamic_refresh is True
    trial.dynamic_refresh = False
    with pytest.raises(ValueError):
        with refresh(trial):
            raise ValueError
    assert trial.dynamic_refresh is False


def test_no_refresh_with_list_of_trials(root):
    a_path, b_path = root / "a", root / "b"
    _job(a_path, [0])
    _job(b_path, [0, 1])
    a, b = create_trial(a_path.url), create_trial(b_path.url)
    b.dynamic_refresh = False
    with no_refresh([a, b]):
        assert (a.dynamic_refresh, b.dynamic_refresh) == (False, False)
        tg.write_step(a_path, 1, "worker_0", ["x"])
        tg.write_step(b_path, 2, "worker_0", ["x"])
        assert a.steps() == [0]
        assert b.steps() == [0, 1]
        with refresh([a, b]):
            assert (a.dynamic_refresh, b.dynamic_refresh) == (True, True)
        assert (a.dynamic_refresh, b.dynamic_refresh) == (False, False)
    assert (a.dynamic_refresh, b.dynamic_refresh) == (True, False)
    assert a.steps() == [0, 1]
    assert b.steps() == [0, 1]
    with refresh((a, b)):
        assert b.steps() == [0, 1, 2]
    assert b.dynamic_refresh is False


def test_mode_none_means_global(root):
    """trial.steps(mode=None), as the documents write it, is the global steps."""
    tg.write_collections(root, ["worker_0"])
    for s in range(3):
        tg.write_step(root, s, "worker_0", ["x"], mode=ModeKeys.TRAIN, mode_step=s)
    trial = create_trial(root.url)
    assert trial.steps(mode=None) == trial.steps() == [0, 1, 2]
    assert trial.tensor_names(mode=None) == ["x"]
    assert trial.tensor("x").steps(mode=None) == [0, 1, 2]
    assert trial.tensor("x").value(1, mode=None).shape == trial.tensor("x").value(1).shape
