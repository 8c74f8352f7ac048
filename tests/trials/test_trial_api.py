"""The Trial and Tensor API on a finished multi-worker, multi-mode trial written by FileWriter,
in a local folder and on S3."""

import os
import pathlib

import ml_dtypes
import numpy as np
import pytest

import trialgen as tg
from smdebug.core.modes import ModeKeys
from smdebug.exceptions import (
    InvalidWorker,
    ShapeUnavailableForStep,
    StepUnavailable,
    TensorUnavailable,
    TensorUnavailableForStep,
)
from smdebug.trials import create_trial

TRAIN, EVAL, PREDICT, GLOBAL = ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT, ModeKeys.GLOBAL
W = tg.workers(3)

# (global step, mode, mode step)
PLAN = [
    (0, TRAIN, 0),
    (1, TRAIN, 1),
    (5, GLOBAL, 5),
    (999, EVAL, 0),
    (1000, TRAIN, 2),
    (1001, EVAL, 1),
    (12000, PREDICT, 0),
]
ALL_STEPS = [g for g, _, _ in PLAN]
TRAIN_NAMES = ["act", "b", "both", "conv", "grad/w", "loss", "red_only", "so", "w"]
ALL_NAMES = ["act", "b", "both", "conv", "grad/w", "loss", "lr", "preds", "red_only", "so", "w"]


def act_value(g, worker):
    return tg.value("act", g, worker, shape=(3, 4), dtype=np.float64)


def conv_value(g, worker):
    return tg.value("conv", g, worker, shape=(2, 3, 4))


def so_shape(ms, worker):
    return (ms + 1, W.index(worker) + 2)


def red_only_saved(g, worker):
    base = float(g + W.index(worker))
    return {
        ("min", False): base - 1.5,
        ("max", False): base + 2.25,
        ("mean", True): base + 0.5,
        ("l1", False): base * 3 + 1,
    }


def expected_value(name, g, worker):
    if name == "act":
        return act_value(g, worker)
    if name == "conv":
        return conv_value(g, worker)
    if name == "both":
        return np.arange(4, dtype=np.int32) + g + W.index(worker)
    if name == "loss":
        return tg.value("loss", g, worker, shape=())
    return tg.value(name, g, worker)


def _write_main(path):
    tg.write_collections(
        path,
        W,
        collections={
            "weights": {"include_regex": ["^w$", "^conv$"]},
            "gradients": {"tensor_names": ["grad/w", "grad/never_saved"]},
        },
    )
    for g, mode, ms in PLAN:
        for worker in W:
            tensors, shapes, reds = {}, {}, {}
            if mode == TRAIN:
                for n in ("w", "b", "grad/w", "loss", "act", "conv", "both"):
                    tensors[n] = expected_value(n, g, worker)
                a = act_value(g, worker)
                reds[("act", "mean", False)] = float(np.mean(a))
                reds[("act", "max", True)] = float(np.max(np.abs(a)))
                reds[("act", "l2", False)] = float(np.linalg.norm(a.ravel(), 2))
                for (op, ab), v in red_only_saved(g, worker).items():
                    reds[("red_only", op, ab)] = v
                shapes["so"] = so_shape(ms, worker)
                shapes["both"] = (4,)
            elif mode == EVAL:
                tensors = {n: expected_value(n, g, worker) for n in ("w", "loss")}
            elif mode == PREDICT:
                tensors = {n: expected_value(n, g, worker) for n in ("w", "preds")}
            else:
                tensors = {"w": expected_value("w", g, worker)}
                if worker == "worker_0":
                    tensors["lr"] = 0.1
            tg.write_step(path, g, worker, tensors, mode=mode, mode_step=ms, shapes=shapes, reductions=reds)
    tg.end_job(path)


@pytest.fixture(scope="module")
def main(module_root):
    root = module_root / "main_job"
    _write_main(root)
    return root


@pytest.fixture(scope="module")
def trial(main):
    return create_trial(main.url)


# ---------------------------------------------------------------------------- trial level
def test_steps_and_modes(trial):
    assert trial.steps() == ALL_STEPS
    assert trial.steps(mode=GLOBAL) == ALL_STEPS
    assert trial.steps(mode=TRAIN) == [0, 1, 2]
    assert trial.steps(mode=EVAL) == [0, 1]
    assert trial.steps(mode=PREDICT) == [0]
    assert trial.modes() == [TRAIN, EVAL, PREDICT]
    assert trial.workers() == W
    assert trial.name == "main_job"


@pytest.mark.parametrize("g, mode, ms", PLAN)
def test_mode_maps(trial, g, mode, ms):
    assert trial.mode(g) == mode
    assert trial.mode_step(g) == ms
    assert trial.global_step(mode, ms) == g


def test_mode_maps_unknown(trial):
    assert trial.mode(3) is None
    assert trial.mode_step(3) is None
    assert trial.global_step(TRAIN, 99) is None


def test_tensor_names_filters(trial):
    assert trial.tensor_names() == ALL_NAMES
    assert not any(n.startswith("smdebug/") for n in trial.tensor_names())
    assert trial.tensor_names(mode=TRAIN) == TRAIN_NAMES
    assert trial.tensor_names(mode=EVAL) == ["loss", "w"]
    assert trial.tensor_names(mode=PREDICT) == ["preds", "w"]
    assert trial.tensor_names(step=5) == ["lr", "w"]
    assert trial.tensor_names(step=999) == ["loss", "w"]
    assert trial.tensor_names(step=12000) == ["preds", "w"]
    assert trial.tensor_names(step=0, mode=EVAL) == ["loss", "w"]
    assert trial.tensor_names(step=2, mode=TRAIN) == TRAIN_NAMES
    assert trial.tensor_names(step=3, mode=TRAIN) == []
    assert trial.tensor_names(step=2) == []


def test_tensor_names_regex_and_collection(trial):
    assert trial.tensor_names(regex="^grad/") == ["grad/w"]
    assert trial.tensor_names(regex="o") == ["both", "conv", "loss", "red_only", "so"]
    assert trial.tensor_names(regex=["^b$", "loss"]) == ["b", "loss"]
    assert trial.tensor_names(regex=["^w$"], mode=PREDICT) == ["w"]
    assert trial.tensor_names(regex="^p", step=0, mode=PREDICT) == ["preds"]
    assert trial.tensor_names(regex="^p", step=0, mode=EVAL) == []
    assert trial.tensor_names(collection="weights") == ["conv", "w"]
    assert trial.tensor_names(collection=trial.collection("weights")) == ["conv", "w"]
    assert trial.tensor_names(collection="gradients") == ["grad/w"]
    assert trial.tensor_names(collection=trial.collection("gradients"), mode=EVAL) == []
    assert trial.tensor_names(collection="weights", step=0, mode=EVAL) == ["w"]
    assert sorted(trial.collections()) == ["default", "gradients", "weights"]
    with pytest.raises(ValueError):
        trial.tensor_names(regex="w", collection="weights")


def test_has_tensor_and_unknown_tensor(trial):
    assert trial.has_tensor("w")
    assert trial.has_tensor("red_only")
    assert trial.has_tensor("so")
    assert not trial.has_tensor("nope")
    assert not trial.has_tensor("smdebug/reductions/mean/act")
    with pytest.raises(TensorUnavailable) as ei:
        trial.tensor("nope")
    assert "nope" in str(ei.value)


# ---------------------------------------------------------------------------- tensor steps / values
def test_tensor_steps(trial):
    w = trial.tensor("w")
    assert w.steps() == ALL_STEPS
    assert w.steps(mode=TRAIN) == [0, 1, 2]
    assert w.steps(mode=EVAL) == [0, 1]
    assert w.steps(mode=PREDICT) == [0]
    assert trial.tensor("loss").steps() == [0, 1, 999, 1000, 1001]
    assert trial.tensor("loss").steps(mode=EVAL) == [0, 1]
    assert trial.tensor("loss").steps(mode=PREDICT) == []
    assert trial.tensor("lr").steps() == [5]
    assert trial.tensor("lr").steps(mode=TRAIN) == []
    assert trial.tensor("red_only").steps(mode=TRAIN) == [0, 1, 2]
    assert trial.tensor("so").steps() == [0, 1, 1000]
    assert trial.tensor("preds").steps(show_incomplete_steps=True) == [12000]


@pytest.mark.parametrize("g, mode, ms", PLAN)
def test_values_per_worker_exact(trial, g, mode, ms):
    names = trial.tensor_names(step=g)
    assert names
    for name in names:
        if name in ("red_only", "so", "lr"):
            continue
        t = trial.tensor(name)
        for worker in W:
            exp = expected_value(name, g, worker)
            for got in (t.value(ms, mode=mode, worker=worker), t.value(g, worker=worker)):
                assert got.dtype == exp.dtype
                assert got.shape == exp.shape
                np.testing.assert_array_equal(got, exp)


def test_value_default_worker_is_first(trial):
    got = trial.tensor("w").value(0, mode=EVAL)
    np.testing.assert_array_equal(got, expected_value("w", 999, "worker_0"))


def test_values_dict(trial):
    w = trial.tensor("w")
    vals = w.values(mode=EVAL, worker="worker_1")
    assert list(vals) == [0, 1]
    np.testing.assert_array_equal(vals[0], expected_value("w", 999, "worker_1"))
    np.testing.assert_array_equal(vals[1], expected_value("w", 1001, "worker_1"))
    allv = w.values(worker="worker_2")
    assert list(allv) == ALL_STEPS
    for g in ALL_STEPS:
        np.testing.assert_array_equal(allv[g], expected_value("w", g, "worker_2"))
    tv = trial.tensor("b").values(mode=TRAIN)
    assert list(tv) == [0, 1, 2]
    np.testing.assert_array_equal(tv[2], expected_value("b", 1000, "worker_0"))


def test_workers_and_invalid_worker(trial):
    assert trial.tensor("w").workers(0) == W
    assert trial.tensor("w").workers(1, mode=EVAL) == W
    lr = trial.tensor("lr")
    assert lr.workers(5) == ["worker_0"]
    got = lr.value(5, worker="worker_0")
    assert got.dtype == np.float64 and got.shape == (1,)
    np.testing.assert_array_equal(got, np.array([0.1]))
    np.testing.assert_array_equal(lr.value(5), np.array([0.1]))
    with pytest.raises(InvalidWorker):
        lr.value(5, worker="worker_1")
    with pytest.raises(InvalidWorker) as ei:
        trial.tensor("w").value(0, worker="worker_9")
    assert "worker_9" in str(ei.value)


@pytest.mark.parametrize(
    "name, step, mode",
    [("lr", 0, GLOBAL), ("lr", 1000, GLOBAL), ("preds", 0, GLOBAL), ("preds", 1, TRAIN), ("b", 1, EVAL)],
)
def test_value_of_tensor_not_saved_at_existing_step(trial, name, step, mode):
    """The step exists (other tensors were saved there): the error is about the tensor, not the step.

    Rules catch TensorUnavailableForStep to skip such steps; StepUnavailable would end them.
    """
    assert step in trial.steps(mode=mode)
    t = trial.tensor(name)
    with pytest.raises(TensorUnavailableForStep) as ei:
        t.value(step, mode=mode)
    assert not isinstance(ei.value, StepUnavailable)
    assert (ei.value.tname, ei.value.step, ei.value.mode) == (name, step, mode)
    with pytest.raises(TensorUnavailableForStep):
        t.value(step, mode=mode, worker="worker_1")
    with pytest.raises(TensorUnavailableForStep):
        t.reduction_value(step, "mean", mode=mode)


def test_value_at_step_that_does_not_exist_is_step_unavailable(trial):
    with pytest.raises(StepUnavailable) as ei:
        trial.tensor("w").value(2)
    assert not isinstance(ei.value, TensorUnavailableForStep)
    assert ei.value.step == 2


@pytest.mark.parametrize("name, step, mode", [("lr", 0, GLOBAL), ("preds", 1, TRAIN), ("w", 2, GLOBAL), ("w", 9, EVAL)])
def test_workers_where_tensor_not_saved_raises(trial, name, step, mode):
    """Like 1.0.34: workers() of a step where the tensor was not saved raises, never returns []."""
    with pytest.raises(TensorUnavailableForStep) as ei:
        trial.tensor(name).workers(step, mode=mode)
    assert (ei.value.tname, ei.value.step, ei.value.mode) == (name, step, mode)


def test_prev_steps(trial):
    w = trial.tensor("w")
    assert w.prev_steps(1000, 2) == [999, 1000]
    assert w.prev_steps(1000, 10) == [0, 1, 5, 999, 1000]
    assert w.prev_steps(998, 2) == [1, 5]
    assert w.prev_steps(0, 3) == [0]
    assert w.prev_steps(1, 5, mode=TRAIN) == [0, 1]
    assert w.prev_steps(2, 1, mode=TRAIN) == [2]
    assert w.prev_steps(1, 1, mode=EVAL) == [1]


# ---------------------------------------------------------------------------- shapes
def test_shapes_from_values(trial):
    w = trial.tensor("w")
    assert w.shape(0) == (2, 3)
    assert w.shape(0, mode=PREDICT, worker="worker_2") == (2, 3)
    assert w.shapes(mode=EVAL) == {0: (2, 3), 1: (2, 3)}
    assert trial.tensor("conv").shapes(mode=TRAIN, worker="worker_1") == {0: (2, 3, 4), 1: (2, 3, 4), 2: (2, 3, 4)}
    assert trial.tensor("loss").shape(1, mode=EVAL) == ()
    assert trial.tensor("lr").shapes() == {5: (1,)}


def test_shape_only_tensor(trial):
    so = trial.tensor("so")
    for ms, g in ((0, 0), (1, 1), (2, 1000)):
        for worker in W:
            assert so.shape(ms, mode=TRAIN, worker=worker) == so_shape(ms, worker)
            assert so.shape(g, worker=worker) == so_shape(ms, worker)
    assert so.shapes(mode=TRAIN) == {0: (1, 2), 1: (2, 2), 2: (3, 2)}
    assert so.shapes(mode=TRAIN, worker="worker_2") == {0: (1, 4), 1: (2, 4), 2: (3, 4)}
    assert so.shapes() == {0: (1, 2), 1: (2, 2), 1000: (3, 2)}
    with pytest.raises(TensorUnavailableForStep):
        so.value(0, mode=TRAIN)


def test_value_and_shape_in_same_step_keeps_both(trial):
    both = trial.tensor("both")
    for g in (0, 1, 1000):
        for worker in W:
            got = both.value(g, worker=worker)
            assert got.dtype == np.int32
            np.testing.assert_array_equal(got, expected_value("both", g, worker))
            assert both.shape(g, worker=worker) == (4,)
    assert both.shapes(mode=TRAIN) == {0: (4,), 1: (4,), 2: (4,)}
    assert list(both.values(mode=TRAIN)) == [0, 1, 2]


# ---------------------------------------------------------------------------- reductions
def test_saved_reductions(trial):
    act = trial.tensor("act")
    for g, ms in ((0, 0), (1, 1), (1000, 2)):
        for worker in W:
            a = act_value(g, worker)
            reds = act.reduction_values(ms, mode=TRAIN, worker=worker)
            assert sorted(reds) == [("l2", False), ("max", True), ("mean", False)]
            exp = {
                ("mean", False): np.float32(np.mean(a)),
                ("max", True): np.float32(np.max(np.abs(a))),
                ("l2", False): np.float32(np.linalg.norm(a.ravel(), 2)),
            }
            for k, v in reds.items():
                assert v.dtype == np.float32 and v.shape == (1,)
                assert v[0] == exp[k]
            # a saved reduction is returned as saved (float32, shape (1,)), not recomputed
            got = act.reduction_value(g, "mean", worker=worker)
            assert got.dtype == np.float32 and got.shape == (1,)
            assert got[0] == exp[("mean", False)]
            got = act.reduction_value(ms, "max", mode=TRAIN, worker=worker, abs=True)
            assert got.dtype == np.float32 and got[0] == exp[("max", True)]


def test_reduction_values_empty_without_saved(trial):
    assert trial.tensor("w").reduction_values(0) == {}
    assert trial.tensor("conv").reduction_values(1, mode=TRAIN, worker="worker_2") == {}


@pytest.mark.parametrize("name", ["act", "conv", "w"])
def test_reductions_computed_on_the_fly(trial, name):
    t = trial.tensor(name)
    for worker in W:
        x = expected_value(name, 1000, worker)
        ax = np.abs(x)
        assert t.reduction_value(1000, "l1", worker=worker) == np.linalg.norm(x.ravel(), 1)
        if name != "act":  # act's l2 was saved (checked in test_saved_reductions)
            assert t.reduction_value(1000, "l2", worker=worker) == np.linalg.norm(x.ravel(), 2)
            assert np.isclose(t.reduction_value(1000, "l2", worker=worker), np.sqrt((x.astype(np.float64) ** 2).sum()))
        assert t.reduction_value(2, "l1", mode=TRAIN, worker=worker, abs=True) == np.linalg.norm(ax.ravel(), 1)
        assert t.reduction_value(2, "l2", mode=TRAIN, worker=worker, abs=True) == np.linalg.norm(ax.ravel(), 2)
        # vector norms, not matrix norms (1.0.34 defect 1)
        assert np.isclose(t.reduction_value(1000, "l1", worker=worker), np.abs(x).sum())
        for op, fn in (("min", np.min), ("sum", np.sum), ("prod", np.prod), ("std", np.std), ("variance", np.var)):
            assert t.reduction_value(1000, op, worker=worker) == fn(x)
            assert t.reduction_value(1000, op, worker=worker, abs=True) == fn(ax)
    if name != "act":  # act has a saved mean; w and conv compute it
        x = expected_value(name, 0, "worker_1")
        assert t.reduction_value(0, "mean", worker="worker_1") == np.mean(x)
        assert t.reduction_value(0, "max", worker="worker_1", abs=True) == np.max(np.abs(x))
    else:  # the l1 and non-abs max of act were not saved: computed from the raw value
        x = act_value(0, "worker_1")
        assert t.reduction_value(0, "max", worker="worker_1") == np.max(x)
        assert t.reduction_value(0, "mean", worker="worker_1", abs=True) == np.mean(np.abs(x))


def test_unknown_reduction_name(trial):
    with pytest.raises(ValueError):
        trial.tensor("w").reduction_value(0, "median")


def test_reductions_only_tensor(trial):
    t = trial.tensor("red_only")
    for g, ms in ((0, 0), (1, 1), (1000, 2)):
        for worker in W:
            saved = red_only_saved(g, worker)
            reds = t.reduction_values(ms, mode=TRAIN, worker=worker)
            assert sorted(reds) == sorted(saved)
            for k, v in saved.items():
                assert reds[k].shape == (1,)
                assert reds[k][0] == np.float32(v)
                assert t.reduction_value(g, k[0], worker=worker, abs=k[1])[0] == np.float32(v)
            with pytest.raises(TensorUnavailableForStep) as ei:
                t.value(g, worker=worker)
            assert "reductions" in str(ei.value)
            with pytest.raises(ShapeUnavailableForStep):
                t.shape(ms, mode=TRAIN, worker=worker)
            with pytest.raises(TensorUnavailableForStep):
                t.reduction_value(g, "l2", worker=worker)  # neither saved nor computable
            with pytest.raises(TensorUnavailableForStep):
                t.reduction_value(g, "min", worker=worker, abs=True)
    with pytest.raises(TensorUnavailableForStep):
        t.values(mode=TRAIN)
    with pytest.raises(InvalidWorker):
        t.reduction_value(0, "min", worker="worker_7")


# ---------------------------------------------------------------------------- dtypes
DTYPE_CASES = {
    "int8": np.array([-128, -1, 0, 1, 127], dtype=np.int8),
    "int16": np.array([[-32768, -1], [0, 32767]], dtype=np.int16),
    "uint16": np.array([0, 1, 65535], dtype=np.uint16),
    "uint32": np.array([0, 1, 2**32 - 1], dtype=np.uint32),
    "uint64": np.array([0, 1, 2**63 + 5, 2**64 - 1], dtype=np.uint64),
    "complex64": np.array([[1 + 2j, -3.5 - 0.25j], [0, 1e-3j]], dtype=np.complex64),
    "bfloat16": np.array([0.0, 1.0, -2.5, 3.140625, 1e30, -np.inf], dtype=ml_dtypes.bfloat16),
    "uint8": np.array([0, 200, 255], dtype=np.uint8),
    "float16": np.array([0.5, -65504.0, np.inf], dtype=np.float16),
    "complex128": np.array([1 + 1j, -2.5e300j], dtype=np.complex128),
    "bool": np.array([True, False, True]),
    "int64": np.array([-(2**63), 2**63 - 1], dtype=np.int64),
    "float64_3d": np.arange(24, dtype=np.float64).reshape(2, 3, 4) / 7,
}


@pytest.fixture(scope="module")
def dtype_trial(module_root):
    path = module_root / "dtypes"
    tg.write_collections(path, ["worker_0"])
    tg.write_step(path, 0, "worker_0", dict(DTYPE_CASES), mode=TRAIN, mode_step=0)
    tg.write_step(path, 3, "worker_0", {k: v[::-1].copy() for k, v in DTYPE_CASES.items()})
    tg.end_job(path)
    return create_trial(path.url)


@pytest.mark.parametrize("name", sorted(DTYPE_CASES))
def test_dtypes_round_trip(dtype_trial, name):
    exp = DTYPE_CASES[name]
    t = dtype_trial.tensor(name)
    for got, want in ((t.value(0), exp), (t.value(0, mode=TRAIN), exp), (t.value(3), exp[::-1])):
        assert got.dtype == want.dtype
        assert got.shape == want.shape
        assert got.tobytes() == np.ascontiguousarray(want).tobytes()
    assert t.shape(3) == exp.shape


def test_no_predict_data_gives_empty_lists(dtype_trial):
    assert dtype_trial.tensor_names(mode=PREDICT) == []
    assert dtype_trial.tensor_names(mode=EVAL) == []
    assert dtype_trial.steps(mode=PREDICT) == []
    assert dtype_trial.modes() == [TRAIN]
    assert dtype_trial.steps() == [0, 3]
    assert dtype_trial.tensor_names(mode=TRAIN) == sorted(DTYPE_CASES)
    assert dtype_trial.tensor("int8").steps(mode=PREDICT) == []


# ---------------------------------------------------------------------------- create_trial
def test_create_trial_documented_positional_order(main, monkeypatch):
    """create_trial(path, name=None, profiler=False, output_dir=..., **kwargs): range_steps is a
    keyword; profiler=True is never dropped (it goes to create_profiler_trial: the profiler trial,
    which refuses a tensor trial's folder: it holds no profile)."""
    import smdebug.trials as trials
    from smdebug.exceptions import SMDebugTypeError, SMDebugValueError

    url = main.url
    t = create_trial(url, "named", False)
    assert t.name == "named" and t.steps() == ALL_STEPS
    t = create_trial(url, "named", False, "/tmp/reports/", range_steps=(2, 5))
    assert t.steps() == [s for s in ALL_STEPS if 2 <= s < 5]
    with pytest.raises(SMDebugTypeError, match=r"range_steps=\(begin, end\)"):
        create_trial(url, "named", (2, 5))  # a range where the profiler flag goes
    with pytest.raises(SMDebugValueError, match="is a tensor trial"):  # not read as an empty profile
        create_trial(url, profiler=True)
    with pytest.raises(SMDebugValueError, match="is a tensor trial"):
        create_trial(url, "named", True)
    seen = []
    monkeypatch.setattr(trials, "create_profiler_trial", lambda *a, **k: seen.append((a, k)) or "profiler trial")
    assert create_trial(url, "p", True, "/tmp/out/") == "profiler trial"
    assert seen == [((url, "p", "/tmp/out/"), {"range_steps": None})]


def test_create_trial_out_dir_and_name(main):
    url = main.url
    a = create_trial(out_dir=url)
    assert a.name == "main_job"
    assert a.steps() == ALL_STEPS
    assert a.tensor_names() == ALL_NAMES
    np.testing.assert_array_equal(a.tensor("w").value(999, worker="worker_2"), expected_value("w", 999, "worker_2"))
    assert create_trial(url + ("/" if main.is_s3 else os.sep)).name == "main_job"
    if not main.is_s3:  # a pathlib.Path is a local path only; an s3:// URL has no Path form
        assert create_trial(pathlib.Path(url)).name == "main_job"
    named = create_trial(url, name="custom")
    assert named.name == "custom"
    assert named.steps(mode=EVAL) == [0, 1]
    assert create_trial(path=url).steps() == ALL_STEPS
