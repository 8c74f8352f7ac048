"""The XGBoost built-in rules on trials written by our XGBoost hook during real boosting runs.

Each rule fires where it should, at the step (boosting round) computed here independently from
XGBoost's own answers (``evals_result``, ``booster[:r + 1]``, ``trees_to_dataframe``), and stays
quiet on a healthy run. CreateXgboostReport writes its page from a hook-written trial; the page
opens in headless Chromium without console errors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
import xgboost as xgb
from sklearn.datasets import load_breast_cancer

import smdebug.xgboost as smd
from chromium import needs_chromium
from smdebug.exceptions import RuleEvaluationConditionMet
from smdebug.rules import invoke_rule
from smdebug.rules.builtin import (
    ClassImbalance,
    Confusion,
    CreateXgboostReport,
    FeatureImportanceOverweight,
    LossNotDecreasing,
    Overfit,
    TreeDepth,
)
from smdebug.trials import create_trial

COLLECTIONS = ["metrics", "losses", "predictions", "labels", "feature_importance", "trees", "hyperparameters"]
# a classifier every classification rule finds healthy: boosted small forests, every class recalled and
# predicted at >= 0.9 from round 0 on, importances spread over many features, trees of depth <= 4
GOOD = {
    "objective": "binary:logistic",
    "max_depth": 4,
    "eta": 1.0,
    "num_parallel_tree": 4,
    "subsample": 0.8,
    "colsample_bynode": 0.8,
    "seed": 0,
}
# a model whose losses fall steadily and whose validation loss stays within 5% of its training loss
STEADY = {"objective": "binary:logistic", "max_depth": 1, "eta": 0.3, "eval_metric": ["logloss"]}


@dataclass
class HookRun:
    path: str  # the trial the hook wrote
    booster: xgb.Booster
    evals_result: dict
    valid: xgb.DMatrix
    rounds: int
    hook: smd.Hook = field(repr=False, default=None)

    def predictions(self, step: int) -> np.ndarray:
        """XGBoost's own predictions of the validation set by the model as it was after round ``step``."""
        return self.booster[: step + 1].predict(self.valid)

    def labels(self) -> np.ndarray:
        return self.valid.get_label().astype(int)


class _Schedule(xgb.callback.TrainingCallback):
    """Sets booster parameters before given rounds (``{round: {param: value}}``)."""

    def __init__(self, schedule: dict):
        self.schedule = schedule

    def before_iteration(self, model, epoch, evals_log):
        for k, v in self.schedule.get(epoch, {}).items():
            model.set_param(k, v)
        return False


def hook_run(out_dir, params, train, valid, rounds, schedule=None, collections=COLLECTIONS) -> HookRun:
    """Train with our hook saving ``collections`` every round; the trial is complete when it returns."""
    params = {**params, "nthread": 1}
    dtrain, dvalid = xgb.DMatrix(*train), xgb.DMatrix(*valid)
    hook = smd.Hook(
        out_dir=str(out_dir),
        include_collections=collections,
        save_config=smd.SaveConfig(save_interval=1),
        hyperparameters=params,
        validation_data=dvalid,
    )
    res: dict = {}
    callbacks = ([_Schedule(schedule)] if schedule else []) + [hook]
    booster = xgb.train(
        params,
        dtrain,
        rounds,
        evals=[(dtrain, "train"), (dvalid, "validation")],
        evals_result=res,
        verbose_eval=False,
        callbacks=callbacks,
    )
    assert not hook.disabled
    hook.close()  # the trial is complete
    return HookRun(str(out_dir), booster, res, dvalid, rounds, hook)


def fired_at(rule, **kw):
    """The step at which invoke_rule sees the rule fire, or None when it never does."""
    try:
        invoke_rule(rule, raise_eval_cond=True, **kw)
    except RuleEvaluationConditionMet as exc:
        return exc.step
    return None


def subset(X, y, n_per_class: dict, seed=0):
    """(train, validation): validation with n_per_class[c] samples of class c, train the rest."""
    rng = np.random.default_rng(seed)
    va = np.concatenate([rng.permutation(np.flatnonzero(y == c))[:n] for c, n in n_per_class.items()])
    tr = np.setdiff1d(np.arange(len(y)), va)
    return (X[tr], y[tr]), (X[va], y[va])


def confusion(labels, predictions) -> np.ndarray:
    p = (predictions > 0.5).astype(int)
    return np.array([[np.sum((labels == i) & (p == j)) for j in (0, 1)] for i in (0, 1)])


def confusion_is_poor(c: np.ndarray, min_diag=0.9, max_off_diag=0.1) -> bool:
    """Confusion's documented decision: a class's recall below min_diag or a column's off-diagonal share above max."""
    rows, cols = c.sum(axis=1), c.sum(axis=0)
    recall = any(c[i, i] / rows[i] < min_diag for i in (0, 1) if rows[i])
    off = any(c[1 - i, i] / cols[i] > max_off_diag for i in (0, 1) if cols[i])
    return recall or off


def top3_share(booster) -> float:
    w = np.sort(np.array(list(booster.get_score(importance_type="weight").values())))[::-1]
    return float(w[:3].sum() / w.sum())


def estimated_depth(booster, step: int) -> int:
    """TreeDepth's estimator for the trees of round ``step``: floor(log2(largest node id))."""
    df = booster.trees_to_dataframe()
    per_round = df["Tree"].nunique() // booster.num_boosted_rounds()
    top = int(df[df["Tree"] // per_round == step]["Node"].max())
    return int(np.floor(np.log2(top))) if top > 0 else 0


def true_depth(booster, tree: int) -> int:
    rows = booster.trees_to_dataframe().query("Tree == @tree")
    children = {r.ID: (r.Yes, r.No) for r in rows.itertuples() if r.Feature != "Leaf"}
    depth, level = 0, [f"{tree}-0"]
    while level := [c for node in level for c in children.get(node, ())]:
        depth += 1
    return depth


@pytest.fixture(scope="module")
def cancer():
    return load_breast_cancer(return_X_y=True)


@pytest.fixture(scope="module")
def good(tmp_path_factory, cancer):
    """A healthy classifier on a balanced validation set (60 of each class)."""
    return hook_run(tmp_path_factory.mktemp("good") / "trial", GOOD, *subset(*cancer, {0: 60, 1: 60}), rounds=6)


@pytest.fixture(scope="module")
def steady(tmp_path_factory, cancer):
    """Healthy losses: stumps, learning rate 0.3, 400 training samples."""
    X, y = cancer
    idx = np.random.default_rng(1).permutation(len(y))
    tr, va = idx[:-150], idx[-150:]
    return hook_run(tmp_path_factory.mktemp("steady") / "trial", STEADY, (X[tr], y[tr]), (X[va], y[va]), rounds=8)


# ---------------------------------------------------------------------------- healthy runs
def test_classification_rules_quiet_on_a_healthy_classifier(good):
    labels = good.labels()
    assert not any(confusion_is_poor(confusion(labels, good.predictions(s))) for s in range(good.rounds))
    assert max(top3_share(good.booster[: s + 1]) for s in range(good.rounds)) <= 0.8
    trial = create_trial(good.path)
    assert trial.steps() == list(range(6))
    for rule in (TreeDepth(trial, depth=4), FeatureImportanceOverweight(trial)):
        assert fired_at(rule) is None, type(rule).__name__
    assert fired_at(rule := Confusion(trial)) is None
    np.testing.assert_array_equal(rule.last_matrix, confusion(labels, good.predictions(5)))
    assert fired_at(rule := ClassImbalance(trial)) is None
    assert rule.counts.tolist() == [360, 360]  # 120 labels a round, 6 rounds


def test_loss_rules_quiet_on_steady_training(steady):
    tl, vl = (np.array(steady.evals_result[d]["logloss"]) for d in ("train", "validation"))
    assert np.all((vl - tl) / tl <= 0.1) and np.all(np.diff(tl) < 0) and np.all(np.diff(vl) < 0)
    trial = create_trial(steady.path)
    assert sorted(trial.tensor_names(collection="losses")) == ["train-logloss", "validation-logloss"]
    assert fired_at(Overfit(trial)) is None
    assert fired_at(LossNotDecreasing(trial, num_steps=3)) is None


# ---------------------------------------------------------------------------- each rule fires
def test_tree_depth_fires_at_the_first_depth_12_round(tmp_path, cancer):
    # max_depth 3, then 12 from round 3 on (set before the round, as XGBoost's schedulers do)
    params = {"objective": "binary:logistic", "max_depth": 3}
    deep = {3: {"max_depth": 12, "min_child_weight": 0, "lambda": 0}}
    run = hook_run(
        tmp_path / "trial", params, *subset(*cancer, {0: 60, 1: 60}), rounds=5, schedule=deep, collections=["trees"]
    )
    assert [true_depth(run.booster, t) for t in range(3)] == [3, 3, 3]
    assert min(true_depth(run.booster, t) for t in (3, 4)) > 4
    expected = next(s for s in range(run.rounds) if estimated_depth(run.booster, s) > 4)
    rule = TreeDepth(create_trial(run.path), depth="4")
    assert fired_at(rule) == expected == 3
    assert rule.last_depth == estimated_depth(run.booster, 3)


def test_feature_importance_overweight_fires_on_one_dominant_feature(tmp_path):
    # the label is the sign of feature 0: every split of every tree is on f0
    X = np.random.default_rng(0).normal(size=(300, 10))
    y = (X[:, 0] > 0).astype(float)
    run = hook_run(
        tmp_path / "trial",
        {"objective": "binary:logistic", "max_depth": 3},
        (X[:200], y[:200]),
        (X[200:], y[200:]),
        rounds=3,
        collections=["feature_importance"],
    )
    assert list(run.booster[:1].get_score(importance_type="weight")) == ["f0"]
    trial = create_trial(run.path)
    assert trial.tensor_names(regex="feature_importance/weight") == ["feature_importance/weight/f0"]
    expected = next(s for s in range(run.rounds) if top3_share(run.booster[: s + 1]) > 0.8)
    rule = FeatureImportanceOverweight(trial)
    assert fired_at(rule) == expected == 0
    assert rule.last_share == 1.0


def test_class_imbalance_fires_on_skewed_labels_once_enough_are_seen(tmp_path, cancer):
    run = hook_run(
        tmp_path / "trial", GOOD, *subset(*cancer, {0: 10, 1: 150}), rounds=5, collections=["predictions", "labels"]
    )
    assert np.bincount(run.labels()).tolist() == [10, 150]
    # 160 labels a round: judged from 500 on, i.e. after 4 rounds
    expected = next(s for s in range(run.rounds) if 160 * (s + 1) >= 500)
    rule = ClassImbalance(create_trial(run.path))
    assert fired_at(rule) == expected == 3
    assert rule.counts.tolist() == [40, 600]
    assert "600/40 = 15 > 10" in rule.last_reason


def test_confusion_fires_on_a_poor_model(tmp_path, cancer):
    # starts at p = 0.9 and barely moves: predicts "benign" for every sample
    poor = {"objective": "binary:logistic", "max_depth": 1, "eta": 0.01, "base_score": 0.9}
    run = hook_run(
        tmp_path / "trial", poor, *subset(*cancer, {0: 60, 1: 60}), rounds=3, collections=["predictions", "labels"]
    )
    matrices = [confusion(run.labels(), run.predictions(s)) for s in range(run.rounds)]
    expected = next(s for s, c in enumerate(matrices) if confusion_is_poor(c))
    rule = Confusion(create_trial(run.path))
    assert fired_at(rule) == expected == 0
    np.testing.assert_array_equal(rule.last_matrix, matrices[0])
    assert rule.last_matrix.tolist() == [[0, 60], [0, 60]]
    assert "class 0" in rule.last_reason
    # ClassImbalance sees the same model mispredict every malignant sample, once 500 labels are counted
    rule = ClassImbalance(create_trial(run.path), samples=240)
    assert fired_at(rule) == 1 and rule.mispredicted.tolist() == [120, 0]


def test_overfit_fires_when_a_booster_overfits_a_tiny_train_set(tmp_path, cancer):
    X, y = cancer
    idx = np.random.default_rng(1).permutation(len(y))
    tr, va = idx[:20], idx[-150:]
    params = {
        "objective": "binary:logistic",
        "max_depth": 6,
        "eta": 0.3,
        "lambda": 0,
        "min_child_weight": 0,
        "eval_metric": ["logloss"],
    }
    run = hook_run(tmp_path / "trial", params, (X[tr], y[tr]), (X[va], y[va]), rounds=8, collections=["metrics"])
    tl, vl = (np.array(run.evals_result[d]["logloss"]) for d in ("train", "validation"))
    ratio = (vl - tl) / tl
    expected = int(np.flatnonzero(ratio > 0.1)[0])
    # training loss falls to a few percent of its start; validation loss turns up again
    assert ratio[0] <= 0.1 and tl[-1] < tl[0] / 10 and vl[-1] > vl.min()
    assert fired_at(Overfit(create_trial(run.path))) == expected == 1


def test_loss_not_decreasing_fires_once_the_learning_rate_is_0(tmp_path, cancer):
    X, y = cancer
    idx = np.random.default_rng(1).permutation(len(y))
    tr, va = idx[:-150], idx[-150:]
    params = {"objective": "binary:logistic", "max_depth": 2, "eta": 0.3, "eval_metric": ["logloss"]}
    # eta 0 from round 4 on: rounds 4, 5, 6 add trees that change nothing
    run = hook_run(
        tmp_path / "trial",
        params,
        (X[tr], y[tr]),
        (X[va], y[va]),
        rounds=7,
        schedule={4: {"eta": 0.0}},
        collections=["losses"],
    )
    losses = {f"{d}-logloss": np.array(run.evals_result[d]["logloss"]) for d in ("train", "validation")}
    assert all(np.all(v[4:] == v[3]) for v in losses.values())

    def not_decreasing(v, s):  # the rule's test with num_steps=3, diff_percent 0.1
        return 100 * (v[s - 3] - v[s]) / abs(v[s - 3]) < 0.1

    expected = next(s for s in (3, 6) if any(not_decreasing(v, s) for v in losses.values()))
    trial = create_trial(run.path)
    assert trial.tensor_names() == ["train-logloss", "validation-logloss"]
    assert fired_at(LossNotDecreasing(trial, num_steps=3)) == expected == 6
    # a booster with learning rate 0 from the start: the first comparison fires
    flat = hook_run(
        tmp_path / "flat", {**params, "eta": 0.0}, (X[tr], y[tr]), (X[va], y[va]), rounds=4, collections=["losses"]
    )
    assert len(set(flat.evals_result["validation"]["logloss"])) == 1
    assert fired_at(LossNotDecreasing(create_trial(flat.path), num_steps=3)) == 3


# ---------------------------------------------------------------------------- the report
@needs_chromium
def test_xgboost_report_from_a_hook_trial_opens_clean_in_chromium(tmp_path, cancer, chromium):
    params = {**GOOD, "eval_metric": ["logloss", "auc"]}
    run = hook_run(
        tmp_path / "job" / "debug-output",
        params,
        *subset(*cancer, {0: 60, 1: 60}),
        rounds=4,
        collections=["metrics", "feature_importance", "predictions", "labels", "hyperparameters"],
    )
    rule = CreateXgboostReport(create_trial(run.path))
    assert fired_at(rule) is None  # it never fires; it writes at the last step
    page = Path(rule.report_path)
    assert page == tmp_path / "job" / "rule-output" / "CreateXgboostReport" / "xgboost_report.html"
    assert rule.reports_written == 1
    state = chromium.open(page.as_uri())
    assert chromium.problems() == []
    assert state["title"] == "XGBoost training report"
    assert state["sections"] == [
        "summary",
        "hyperparameters",
        "labels-distribution",
        "metrics",
        "feature-importance",
        "confusion-matrix",
        "classification-scores",
        "accuracy-per-class",
        "roc",
    ]
    assert state["images"] and all(img["complete"] and img["width"] > 100 for img in state["images"])
    by_section: dict = {}
    for img in state["images"]:
        by_section.setdefault(img["section"], []).append(img["alt"])
    assert by_section["metrics"] == ["auc per step", "logloss per step"]
    # the numbers shown are those of the model after the last round, as XGBoost predicts
    y, p = run.labels(), run.predictions(3)
    assert f"Accuracy {np.mean((p > 0.5) == y):.4f} on 120 validation samples" in state["text"]
    assert "binary classification" in state["text"] and "0 to 3 (4 saved)" in state["text"]
    assert "binary:logistic" in state["text"]  # hyperparameters/objective, saved by the hook
