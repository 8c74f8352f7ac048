"""smdebug.xgboost.extract on real boosters, without a hook."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import xgboost as xgb
from xgbutil import task

from smdebug.exceptions import SMDebugTypeError, SMDebugValueError
from smdebug.xgboost import extract


@pytest.fixture(scope="module")
def multi():
    t = task("multi")
    return t, xgb.train(t.params, t.train, 3)


def test_evaluation_metrics_takes_the_last_round_in_evals_order():
    log = {"train": {"logloss": [0.5, 0.4], "auc": [0.9, 0.95]}, "validation": {"logloss": [0.6, 0.55]}}
    assert extract.evaluation_metrics(log) == {"train-logloss": 0.4, "train-auc": 0.95, "validation-logloss": 0.55}
    assert list(extract.evaluation_metrics(log)) == ["train-logloss", "train-auc", "validation-logloss"]
    assert extract.evaluation_metrics({"train": {"rmse": []}}) == {}


def test_feature_importances_are_get_score_divided_by_their_sum(multi):
    _t, b = multi
    fi = extract.feature_importances(b)
    assert list(fi) == list(extract.IMPORTANCE_TYPES)
    for kind, scores in fi.items():
        raw = b.get_score(importance_type=kind)
        assert scores.keys() == raw.keys()
        total = math.fsum(raw.values())
        assert all(scores[f] == raw[f] / total for f in raw)


def test_feature_importances_of_a_booster_without_splits_are_empty():
    X = np.zeros((20, 3))
    b = xgb.train({"max_depth": 2}, xgb.DMatrix(X, np.arange(20.0)), 2)
    assert extract.feature_importances(b) == {}


def test_shap_full_and_average(multi):
    t, b = multi
    shap = extract.shap_values(b, t.train)
    contribs = b.predict(t.train, pred_contribs=True)
    assert shap.names == [f"f{i}" for i in range(64)] + ["bias"]
    np.testing.assert_array_equal(shap.full, contribs)
    assert shap.full.shape == (t.train.num_row(), 10, 65)
    np.testing.assert_array_equal(shap.column(3), contribs[:, :, 3])
    np.testing.assert_allclose(shap.average(), contribs.mean(axis=(0, 1)))


def _expected_column(df, col):
    return ["nan" if x is None or (isinstance(x, float) and math.isnan(x)) else str(x) for x in df[col]]


@pytest.mark.parametrize("r", [0, 1, 2])
def test_round_trees_equal_trees_to_dataframe(multi, r):
    _t, b = multi
    trees = extract.round_trees(b, r)
    df = b.trees_to_dataframe()
    rows = df[df.Tree // 10 == r].reset_index(drop=True)
    assert list(trees) == list(extract.TREE_COLUMNS) == list(df.columns)
    for col, arr in trees.items():
        if arr.dtype.kind == "U":
            assert arr.tolist() == _expected_column(rows, col)
        else:
            np.testing.assert_array_equal(arr, rows[col].to_numpy(dtype=arr.dtype))
    assert extract.round_trees(b)["ID"].tolist() == extract.round_trees(b, 2)["ID"].tolist()
    with pytest.raises(IndexError):
        extract.round_trees(b, 3)


def test_round_trees_with_categorical_splits():
    rng = np.random.default_rng(0)
    cat = rng.integers(0, 5, 300)
    X = pd.DataFrame({"c": pd.Categorical(cat), "x": rng.standard_normal(300)})
    y = (cat % 2 == 0).astype(float) + 0.1 * X["x"].to_numpy()
    b = xgb.train({"max_depth": 3, "max_cat_to_onehot": 1}, xgb.DMatrix(X, y, enable_categorical=True), 2)
    df = b.trees_to_dataframe()
    trees = extract.round_trees(b, 0)
    rows = df[df.Tree == 0].reset_index(drop=True)
    cats = rows["Category"].tolist()
    assert any(isinstance(c, list) for c in cats)  # the data really has categorical splits
    assert trees["Category"].tolist() == [",".join(c) if isinstance(c, list) else "nan" for c in cats]
    assert trees["Feature"].tolist() == rows["Feature"].tolist()


def test_validation_outputs(multi):
    t, b = multi
    out = extract.validation_outputs(b, t.valid)
    np.testing.assert_array_equal(out.predictions, b.predict(t.valid))
    np.testing.assert_array_equal(out.labels, t.valid.get_label())


def test_booster_kind_and_feature_names():
    t = task("binary", feature_names=True)
    assert extract.booster_kind(xgb.train({"booster": "gblinear"}, t.train, 1)) == "gblinear"
    b = xgb.train({"booster": "dart"}, t.train, 1)
    assert extract.booster_kind(b) == "dart"
    assert extract.feature_names(b)[:2] == ["mean_radius", "mean_texture"]


def test_hyperparameter_value():
    assert extract.hyperparameter_value(2).tolist() == [2]
    assert extract.hyperparameter_value("binary:logistic").tolist() == ["binary:logistic"]
    assert extract.hyperparameter_value(["logloss", "auc"]).tolist() == ["logloss", "auc"]
    assert extract.hyperparameter_value({"a": 1}).tolist() == ["{'a': 1}"]
    assert extract.hyperparameter_value(None).tolist() == ["None"]


def test_as_dmatrix_reads_csv_and_libsvm_and_names_bad_arguments(tmp_path):
    csv = tmp_path / "d.csv"
    csv.write_text("1,0.5,2\n0,1.5,3\n")
    d = extract.as_dmatrix((str(csv), "text/csv"), "train_data")
    assert d.get_label().tolist() == [1, 0] and d.num_col() == 2
    svm = tmp_path / "d.svm"
    svm.write_text("1 0:0.5 1:2\n0 0:1.5\n")
    assert extract.as_dmatrix((svm, "libsvm"), "train_data").get_label().tolist() == [1, 0]
    with pytest.raises(SMDebugValueError, match="validation_data.*parquet"):
        extract.as_dmatrix((str(csv), "parquet"), "validation_data")
    with pytest.raises(SMDebugValueError, match="train_data.*nope.csv is not a file"):
        extract.as_dmatrix((str(tmp_path / "nope.csv"), "csv"), "train_data")
    with pytest.raises(SMDebugTypeError, match="train_data must be an xgboost.DMatrix"):
        extract.as_dmatrix(np.zeros((2, 2)), "train_data")
