"""Confusion and ClassImbalance on predictions and labels of real XGBoost runs (and the spec's cases)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import confusion_matrix as sk_confusion
from xgb_trials import breast_cancer, digits, end_trial, split, write_collections, write_xgb_trial

from smdebug.core.collection import Collection
from smdebug.core.collection_manager import CollectionManager
from smdebug.core.writer import FileWriter
from smdebug.exceptions import RuleConfigurationError, RuleEvaluationConditionMet
from smdebug.rules import invoke_rule
from smdebug.rules.builtin import ClassImbalance, Confusion, required_collections
from smdebug.rules.builtin.classification import class_ids
from smdebug.trials import create_trial

# a healthy model: boosted small forests, every class recalled and predicted at >= 0.94 from round 0
GOOD = {
    "objective": "binary:logistic",
    "max_depth": 4,
    "eta": 1.0,
    "num_parallel_tree": 4,
    "subsample": 0.8,
    "colsample_bynode": 0.8,
    "seed": 0,
    "nthread": 1,
}
# a poor, underfit model: starts at p = 0.9 and barely moves, so it predicts "benign" for everything
POOR = {"objective": "binary:logistic", "max_depth": 1, "eta": 0.01, "base_score": 0.9, "nthread": 1}


def fired_at(rule, **kw):
    try:
        invoke_rule(rule, raise_eval_cond=True, **kw)
    except RuleEvaluationConditionMet as exc:
        return exc.step
    return None


def violates(c: np.ndarray, min_diag=0.9, max_off_diag=0.1) -> bool:
    """The reference decision, written independently: per-class recall, per-column off-diagonal share."""
    rows, cols = c.sum(axis=1), c.sum(axis=0)
    recall_bad = any(c[i, i] / rows[i] < min_diag for i in range(len(c)) if rows[i])
    off_bad = any(c[j, i] / cols[i] > max_off_diag for i in range(len(c)) if cols[i] for j in range(len(c)) if j != i)
    return recall_bad or off_bad


def subset(X, y, n_per_class: dict, seed=0):
    """(train, validation): validation with n_per_class[c] samples of class c, train the rest."""
    rng = np.random.default_rng(seed)
    va = np.concatenate([rng.permutation(np.flatnonzero(y == c))[:n] for c, n in n_per_class.items()])
    tr = np.setdiff1d(np.arange(len(y)), va)
    return (X[tr], y[tr]), (X[va], y[va])


@pytest.fixture(scope="module")
def cancer():
    return breast_cancer()


@pytest.fixture(scope="module")
def good(tmp_path_factory, cancer):
    return write_xgb_trial(tmp_path_factory.mktemp("good"), GOOD, *split(*cancer, 150, seed=1), num_round=6)


@pytest.fixture(scope="module")
def poor_balanced(tmp_path_factory, cancer):
    train, val = subset(*cancer, {0: 60, 1: 60})
    return write_xgb_trial(tmp_path_factory.mktemp("poor"), POOR, train, val, num_round=6)


# --------------------------------------------------------------------------------- Confusion
def test_confusion_quiet_on_good_model(good):
    labels = good.labels.astype(int)
    matrices = [sk_confusion(labels, (good.predictions[s] > 0.5).astype(int)) for s in good.steps]
    assert not any(violates(c) for c in matrices)
    rule = Confusion(create_trial(good.path))
    assert fired_at(rule) is None
    np.testing.assert_array_equal(rule.last_matrix, matrices[-1])


def test_confusion_fires_on_poor_model(poor_balanced):
    run = poor_balanced
    labels = run.labels.astype(int)
    matrices = {s: sk_confusion(labels, (run.predictions[s] > 0.5).astype(int), labels=[0, 1]) for s in run.steps}
    expected = next(s for s in run.steps if violates(matrices[s]))
    rule = Confusion(create_trial(run.path))
    assert fired_at(rule) == expected == 0
    np.testing.assert_array_equal(rule.last_matrix, matrices[expected])
    assert rule.last_matrix[0, 0] == 0  # no malignant sample recognised
    assert "class 0" in rule.last_reason


def test_confusion_multiclass_softprob_matches_sklearn_every_step(tmp_path):
    X, y = digits()
    params = {"objective": "multi:softprob", "num_class": 10, "max_depth": 3, "nthread": 1}
    run = write_xgb_trial(tmp_path, params, *split(X, y, 200), num_round=4, save_interval=3)
    assert run.steps == [0, 3] and run.predictions[0].shape == (200, 10)
    trial = create_trial(str(tmp_path))
    for s in run.steps:
        c = sk_confusion(run.labels.astype(int), run.predictions[s].argmax(axis=1), labels=range(10))
        for min_diag, max_off in ((0.9, 0.1), (0.5, 0.5), (0.0, 1.0)):
            rule = Confusion(trial, min_diag=min_diag, max_off_diag=max_off)
            assert rule.invoke_at_step(s) == violates(c, min_diag, max_off)
            np.testing.assert_array_equal(rule.last_matrix, c)


def _write(path, step, tensors: dict, collections: dict) -> None:
    cm = CollectionManager()
    for name, members in collections.items():
        cm.add(Collection(name, tensor_names=members))
    cm.export(str(path), "worker_0_collections.json")
    with FileWriter(trial_dir=str(path), step=step) as fw:
        for name, value in tensors.items():
            fw.write_tensor(value, name)
    end_trial(str(path))


def test_confusion_spec_cases(tmp_path):
    # smdebug's historic tests of the rule (docs/builtin-rules.md 3.8)
    rng = np.random.default_rng(0)
    y = rng.integers(0, 10, 100)
    _write(tmp_path / "a", 0, {"y": y, "y_hat": y}, {"labels": ["y"], "preds": ["y_hat"]})
    assert fired_at(Confusion(create_trial(str(tmp_path / "a")), predictions_collection="preds")) is None
    y, y_hat = np.arange(10), np.arange(10)
    y_hat[4] = 7
    _write(tmp_path / "b", 2, {"foo": y, "bar": y_hat}, {})
    trial = create_trial(str(tmp_path / "b"))
    assert fired_at(Confusion(trial, category_no="10", labels="foo", predictions="bar")) == 2
    rule = Confusion(trial, category_no=10, labels="foo", predictions="bar", min_diag="0.0", max_off_diag="0.01")
    assert fired_at(rule) == 2 and "off-diagonal ratio 0.5" in rule.last_reason
    _write(tmp_path / "c", 0, {"labels": y, "predictions": y}, {})
    assert fired_at(Confusion(create_trial(str(tmp_path / "c")))) is None


# ---------------------------------------------------------------------------- ClassImbalance
def test_class_imbalance_fires_once_enough_skewed_labels_are_seen(tmp_path, cancer):
    train, val = subset(*cancer, {0: 10, 1: 150})  # 15 benign for 1 malignant
    run = write_xgb_trial(tmp_path, GOOD, train, val, num_round=8, save_interval=2)
    assert run.steps == [0, 2, 4, 6]
    rule = ClassImbalance(create_trial(str(tmp_path)))
    # 160 labels a saved round: 480 < 500 after step 4, 640 after step 6
    assert fired_at(rule) == 6
    assert rule.counts.tolist() == [40, 600] and rule.total == 640
    assert "600/40 = 15 > 10" in rule.last_reason


def test_class_imbalance_quiet_on_balanced_labels_and_good_model(tmp_path, cancer):
    train, val = subset(*cancer, {0: 60, 1: 60})
    run = write_xgb_trial(tmp_path, GOOD, train, val, num_round=6)
    rule = ClassImbalance(create_trial(str(tmp_path)))
    assert fired_at(rule) is None
    labels = run.labels.astype(int)
    wrong = sum(np.bincount(labels[(run.predictions[s] > 0.5) != labels], minlength=2) for s in run.steps)
    assert rule.counts.tolist() == [360, 360] and rule.mispredicted.tolist() == wrong.tolist()
    assert max(wrong) / 360 < 0.7


def test_class_imbalance_fires_on_mispredicted_class(poor_balanced):
    rule = ClassImbalance(create_trial(poor_balanced.path))
    # 120 labels a round, judged from 600 on (step 4): every malignant sample is mispredicted
    assert fired_at(rule) == 4
    assert rule.mispredicted.tolist() == [300, 0]
    assert "class 0: mispredicted fraction 1 > threshold_misprediction 0.7" in rule.last_reason


def test_class_imbalance_spec_case_and_samples(tmp_path):
    labels = np.r_[np.zeros(990), np.ones(10)]
    write_collections(str(tmp_path))
    with FileWriter(trial_dir=str(tmp_path), step=3) as fw:
        fw.write_tensor(labels, "labels_0")
    end_trial(str(tmp_path))
    trial = create_trial(str(tmp_path))
    assert fired_at(ClassImbalance(trial, predictions_regex="labels_0")) == 3
    assert fired_at(ClassImbalance(trial, samples="1001")) is None
    assert fired_at(ClassImbalance(trial, threshold_imbalance="99")) is None  # 990/10 is not > 99
    rule = ClassImbalance(trial)
    assert rule.invoke_at_step(3) is True and rule.invoke_at_step(3) is True
    assert rule.total == 1000  # a step evaluated twice is counted once


def test_class_ids():
    np.testing.assert_array_equal(class_ids(np.array([0.2, 0.7, 0.5, 1.0], np.float32)), [0, 1, 0, 1])
    np.testing.assert_array_equal(class_ids(np.array([0.0, 2.0, 9.0])), [0, 2, 9])
    np.testing.assert_array_equal(class_ids(np.array([[0.1, 0.9], [0.8, 0.2]])), [1, 0])
    np.testing.assert_array_equal(class_ids(np.array([[0.3], [0.6]]), argmax=True), [0, 0])
    np.testing.assert_array_equal(class_ids(np.array([[0.3], [0.6]])), [0, 1])
    np.testing.assert_array_equal(class_ids(np.array([np.nan, 1.0])), [-1, 1])
    # a probability vector holding NaN or inf is no class (argmax would name the NaN's index)
    np.testing.assert_array_equal(
        class_ids(np.array([[0.1, np.nan, 0.2], [0.1, 0.7, 0.2], [np.inf, 0, 0]])), [-1, 1, -1]
    )


# ------------------------------------------------------------------------------- parameters
def test_defaults_and_hook_collections(good):
    trial = create_trial(good.path)
    c = Confusion(trial)
    assert (c.category_no, c.labels, c.predictions, c.labels_collection, c.predictions_collection) == (
        None,
        "labels",
        "predictions",
        "labels",
        "predictions",
    )
    assert (c.min_diag, c.max_off_diag) == (0.9, 0.1)
    assert Confusion(trial, category_no="None").category_no is None
    ci = ClassImbalance(trial)
    assert (ci.threshold_imbalance, ci.threshold_misprediction, ci.samples, ci.argmax) == (10.0, 0.7, 500, False)
    assert (ci.labels_regex.pattern, ci.predictions_regex.pattern) == (".*labels", ".*predictions")
    assert ClassImbalance(trial, argmax="True").argmax is True and ClassImbalance(trial, argmax="False").argmax is False
    for name in ("Confusion", "ClassImbalance"):
        assert [h.name for h in required_collections(name)] == ["labels", "predictions"]


@pytest.mark.parametrize(
    ("cls", "param", "value"),
    [
        (Confusion, "category_no", "1"),
        (Confusion, "category_no", "ten"),
        (Confusion, "min_diag", "abc"),
        (Confusion, "min_diag", "1.5"),
        (Confusion, "max_off_diag", "-0.1"),
        (Confusion, "labels", 5),
        (ClassImbalance, "threshold_imbalance", "0"),
        (ClassImbalance, "threshold_misprediction", "abc"),
        (ClassImbalance, "samples", "-3"),
        (ClassImbalance, "samples", "5.5"),
        (ClassImbalance, "argmax", "maybe"),
        (ClassImbalance, "labels_regex", "[labels"),
        (ClassImbalance, "predictions_regex", "(predictions"),
        (ClassImbalance, "threshold", "10"),
    ],
)
def test_bad_parameters_raise_at_construction(good, cls, param, value):
    with pytest.raises(RuleConfigurationError) as info:
        cls(create_trial(good.path), **{param: value})
    assert info.value.parameter == param and info.value.rule_name == cls.__name__
    assert repr(param) in str(info.value)


def test_class_imbalance_misprediction_over_labels_with_predictions(tmp_path):
    write_collections(str(tmp_path))
    with FileWriter(trial_dir=str(tmp_path), step=0) as fw:  # labels alone
        fw.write_tensor(np.repeat([0.0, 1.0], 300), "labels")
    with FileWriter(trial_dir=str(tmp_path), step=1) as fw:  # every class-0 sample predicted as 1
        fw.write_tensor(np.repeat([0.0, 1.0], 50), "labels")
        fw.write_tensor(np.full(100, 0.9, np.float32), "predictions")
    end_trial(str(tmp_path))
    rule = ClassImbalance(create_trial(str(tmp_path)))
    assert fired_at(rule) == 1
    assert rule.counts.tolist() == [350, 350] and rule.judged.tolist() == [50, 50]
    assert rule.mispredicted.tolist() == [50, 0] and "class 0: mispredicted fraction 1 >" in rule.last_reason
