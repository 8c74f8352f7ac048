"""Real boosters, read back: every saved value equals what XGBoost itself answers at that round."""

from __future__ import annotations

import math

import numpy as np
import pytest
from xgbutil import full_hook, task, train, value

from smdebug.core.modes import ModeKeys
from smdebug.trials import create_trial
from smdebug.xgboost.extract import IMPORTANCE_TYPES, TREE_COLUMNS

ROUNDS, INTERVAL = 5, 2
STEPS = [0, 2, 4]


@pytest.fixture(scope="module", params=["binary", "multi", "regression"])
def run(request, tmp_path_factory):
    t = task(request.param, feature_names=request.param == "binary")
    out = tmp_path_factory.mktemp(request.param)
    r = train(t, full_hook(out, t, INTERVAL), ROUNDS)
    return request.param, t, r, create_trial(str(out))


def _features(t):
    return t.train.feature_names or [f"f{i}" for i in range(t.train.num_col())]


def test_steps_workers_and_collection_names(run):
    kind, t, r, trial = run
    assert trial.steps() == STEPS
    assert trial.workers() == ["worker_0"]
    assert trial.modes() == []  # GLOBAL steps only: no mode, as in 1.0.34
    assert trial.mode(STEPS[-1]) == ModeKeys.GLOBAL
    metric_names = [f"{d}-{m}" for d in ("train", "validation") for m in t.params["eval_metric"]]
    assert sorted(trial.tensor_names(collection="metrics")) == sorted(metric_names)
    assert sorted(trial.tensor_names(collection="losses")) == sorted(n for n in metric_names if not n.endswith("auc"))
    assert sorted(trial.tensor_names(collection="hyperparameters")) == sorted(f"hyperparameters/{k}" for k in t.params)
    assert trial.tensor_names(collection="predictions") == ["predictions"]
    assert trial.tensor_names(collection="labels") == ["labels"]
    names = _features(t)
    assert sorted(trial.tensor_names(collection="average_shap")) == sorted(f"average_shap/{f}" for f in names)
    assert sorted(trial.tensor_names(collection="full_shap")) == sorted(f"full_shap/{f}" for f in names)
    assert "average_shap/bias" in trial.tensor_names() and "full_shap/bias" in trial.tensor_names()
    assert sorted(trial.tensor_names(collection="trees")) == sorted(f"trees/{c}" for c in TREE_COLUMNS)
    used = r.booster.get_score(importance_type="weight")
    assert sorted(trial.tensor_names(collection="feature_importance")) == sorted(
        f"feature_importance/{k}/{f}" for k in IMPORTANCE_TYPES for f in used
    )
    for name in trial.tensor_names():
        if not name.startswith("feature_importance/"):  # a feature appears from the round that first splits on it
            assert trial.tensor(name).steps() == STEPS, name


def test_metrics_equal_evals_result(run):
    _kind, _t, r, trial = run
    for data_name, metrics in r.evals_result.items():
        for metric, history in metrics.items():
            for s in STEPS:
                v = value(trial, f"{data_name}-{metric}", s)
                assert v.dtype == np.float64 and v.shape == (1,)
                assert v[0] == history[s]


def test_predictions_and_labels_equal_booster_predict_at_that_round(run):
    _kind, t, r, trial = run
    for s in STEPS:
        expected = r.booster.predict(t.valid, iteration_range=(0, s + 1))
        np.testing.assert_array_equal(value(trial, "predictions", s), expected)
        np.testing.assert_array_equal(value(trial, "labels", s), t.valid.get_label())


def test_feature_importance_equals_get_score_normalised(run):
    _kind, _t, r, trial = run
    for s in STEPS:
        at_round = r.booster[0 : s + 1]
        for kind in IMPORTANCE_TYPES:
            scores = at_round.get_score(importance_type=kind)
            total = math.fsum(scores.values())
            saved = {
                n.rsplit("/", 1)[1]: value(trial, n, s)
                for n in trial.tensor_names(step=s)
                if n.startswith(f"feature_importance/{kind}/")
            }
            assert sorted(saved) == sorted(scores)
            for f, score in scores.items():
                assert saved[f].shape == (1,) and saved[f][0] == pytest.approx(score / total, rel=1e-12)
            assert math.fsum(v[0] for v in saved.values()) == pytest.approx(1.0)


def test_shap_equals_pred_contribs(run):
    _kind, t, r, trial = run
    names = _features(t) + ["bias"]
    for s in STEPS:
        contribs = r.booster.predict(t.train, pred_contribs=True, iteration_range=(0, s + 1))
        mean = contribs.mean(axis=tuple(range(contribs.ndim - 1)))
        for i, f in enumerate(names):
            np.testing.assert_allclose(value(trial, f"full_shap/{f}", s), contribs[..., i], rtol=1e-6, atol=1e-7)
            np.testing.assert_allclose(value(trial, f"average_shap/{f}", s), [mean[i]], rtol=1e-5, atol=1e-7)


def test_trees_equal_trees_to_dataframe_rows_of_that_round(run):
    kind, _t, r, trial = run
    df = r.booster.trees_to_dataframe()
    per_round = 10 if kind == "multi" else 1
    for s in STEPS:
        rows = df[(df.Tree >= s * per_round) & (df.Tree < (s + 1) * per_round)].reset_index(drop=True)
        assert len(rows) > 0
        for col in TREE_COLUMNS:
            saved = value(trial, f"trees/{col}", s)
            if saved.dtype.kind == "U":
                expected = [
                    "nan" if x is None or (isinstance(x, float) and math.isnan(x)) else str(x) for x in rows[col]
                ]
                assert saved.tolist() == expected, col
            else:
                np.testing.assert_array_equal(saved, rows[col].to_numpy(dtype=saved.dtype), err_msg=col)


def test_hyperparameters(run):
    _kind, t, _r, trial = run
    for key, v in t.params.items():
        saved = value(trial, f"hyperparameters/{key}", 0)
        assert saved.tolist() == (list(v) if isinstance(v, list) else [v])
