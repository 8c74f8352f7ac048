"""What the XGBoost hook saves, taken out of xgboost objects as numpy: pure functions, no hook.

Each function takes a ``xgboost.Booster`` (the model at the end of a boosting round) and/or a
``DMatrix`` and returns numpy arrays in plain dicts or dataclasses; the hook only names and
saves them. They work on any Booster, inside a training callback or after training.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass

import numpy as np

from smdebug.exceptions import SMDebugTypeError, SMDebugValueError

__all__ = [
    "IMPORTANCE_TYPES",
    "TREE_COLUMNS",
    "TREE_BOOSTERS",
    "Shap",
    "ValidationOutputs",
    "evaluation_metrics",
    "booster_kind",
    "feature_names",
    "feature_importances",
    "shap_values",
    "round_trees",
    "validation_outputs",
    "hyperparameter_value",
    "as_dmatrix",
]

IMPORTANCE_TYPES = ("weight", "gain", "cover", "total_gain", "total_cover")
TREE_COLUMNS = ("Tree", "Node", "ID", "Feature", "Split", "Yes", "No", "Missing", "Gain", "Cover", "Category")
TREE_BOOSTERS = ("gbtree", "dart")


@dataclass
class Shap:
    """SHAP values (``predict(pred_contribs=True)``) of a data set: ``full`` has the features,
    then the bias, on its last axis: (rows, features + 1), or (rows, classes, features + 1)."""

    names: list  # feature names, then "bias"
    full: np.ndarray

    def average(self) -> np.ndarray:
        """One value per name: the mean over every axis but the last (rows, and classes), as 1.0.34."""
        return self.full.mean(axis=tuple(range(self.full.ndim - 1)))

    def column(self, i: int) -> np.ndarray:
        """The contributions of ``names[i]``: (rows,) or (rows, classes)."""
        return np.ascontiguousarray(self.full[..., i])


@dataclass
class ValidationOutputs:
    predictions: np.ndarray  # booster.predict(data): (rows,) or (rows, classes)
    labels: np.ndarray  # data.get_label()


def evaluation_metrics(evals_log) -> dict:
    """``{"<data set>-<metric>": value at the last round}`` from a callback's ``evals_log``
    (``{data set: {metric: [value per round]}}``), in evals order."""
    out = {}
    for data_name, metrics in evals_log.items():
        for metric, history in metrics.items():
            if len(history):
                last = history[-1]
                # with xgb.cv the history holds (mean, std) pairs: the mean is the metric
                out[f"{data_name}-{metric}"] = float(last[0] if isinstance(last, tuple) else last)
    return out


def booster_kind(booster) -> str:
    """The booster's type: 'gbtree', 'dart' or 'gblinear'."""
    return json.loads(booster.save_config())["learner"]["gradient_booster"]["name"]


def feature_names(booster) -> list:
    """The booster's feature names, else 'f0', 'f1', ... as XGBoost names them in scores and dumps."""
    names = booster.feature_names
    return list(names) if names is not None else [f"f{i}" for i in range(booster.num_features())]


def feature_importances(booster) -> dict:
    """``{importance type: {feature: score / sum of scores}}`` for every type of
    :data:`IMPORTANCE_TYPES`, from ``booster.get_score`` (features used in splits only).
    A type whose scores sum to 0 (a model without splits) is left out."""
    out = {}
    for kind in IMPORTANCE_TYPES:
        scores = booster.get_score(importance_type=kind)
        total = math.fsum(scores.values())
        if total > 0:
            out[kind] = {f: s / total for f, s in scores.items()}
    return out


def shap_values(booster, data) -> Shap:
    """SHAP values of every row of ``data`` (a DMatrix) for the booster as it is now."""
    return Shap(feature_names(booster) + ["bias"], booster.predict(data, pred_contribs=True))


def validation_outputs(booster, data) -> ValidationOutputs:
    """The booster's predictions for ``data`` (a DMatrix) and its labels."""
    return ValidationOutputs(predictions=booster.predict(data), labels=data.get_label())


# a node of a text dump (get_dump(with_stats=True)): a split or a leaf
_SPLIT = re.compile(r"^\s*(\d+):\[(.+)\] yes=(\d+),no=(\d+),missing=(\d+),gain=([^,]+),cover=(\S+)$")
_LEAF = re.compile(r"^\s*(\d+):leaf=([^,]+),cover=(\S+)$")


def round_trees(booster, round_index: int | None = None) -> dict:
    """The trees of one boosting round (default: the last) as ``{column: array}``, with the
    columns, values and row order (tree, node) of ``booster.trees_to_dataframe()`` for those
    trees, without pandas. Text columns are strings: a leaf's Yes/No/Missing/Category is 'nan'
    (NaN in the dataframe), a categorical split's Category the categories joined by ','.

    A round holds one tree per class (and per parallel tree); tree numbers count from the
    first round of the booster."""
    rounds = booster.num_boosted_rounds()
    r = rounds - 1 if round_index is None else round_index
    if not 0 <= r < rounds:
        raise IndexError(f"round {r} of a booster with {rounds} rounds")
    dump = booster[r : r + 1].get_dump(with_stats=True)
    first_tree = r * len(dump)
    rows = []
    for k, text in enumerate(dump):
        tree = first_tree + k
        for line in text.splitlines():
            if line.strip():
                rows.append(_tree_row(tree, line))
    rows.sort(key=lambda row: (row[0], row[1]))
    cols = list(zip(*rows)) if rows else [()] * len(TREE_COLUMNS)
    types = (np.int64, np.int64, str, str, np.float64, str, str, str, np.float64, np.float64, str)
    return {name: np.array(col, dtype=t) for name, col, t in zip(TREE_COLUMNS, cols, types)}


def _tree_row(tree: int, line: str) -> tuple:
    m = _LEAF.match(line)
    if m:
        node = int(m.group(1))
        nan = float("nan")
        return (
            tree,
            node,
            f"{tree}-{node}",
            "Leaf",
            nan,
            "nan",
            "nan",
            "nan",
            float(m.group(2)),
            float(m.group(3)),
            "nan",
        )
    m = _SPLIT.match(line)
    if not m:
        raise ValueError(f"cannot parse tree {tree} of the model dump: {line.strip()!r}")
    node = int(m.group(1))
    cond = m.group(2)
    feature, sep, cats = cond.rpartition(":{")
    if sep:  # categorical: f0:{1,2}
        split, category = float("nan"), ",".join(c for c in cats.rstrip("}").split(",") if c)
    else:
        feature, _, value = cond.rpartition("<")
        split, category = float(value), "nan"
    yes, no, missing = (f"{tree}-{m.group(i)}" for i in (3, 4, 5))
    return (
        tree,
        node,
        f"{tree}-{node}",
        feature,
        split,
        yes,
        no,
        missing,
        float(m.group(6)),
        float(m.group(7)),
        category,
    )


def hyperparameter_value(value) -> np.ndarray:
    """A hyperparameter as an array: numbers and strings as shape (1,), lists as arrays (as
    1.0.34); anything else (dicts, None) as its text, shape (1,)."""
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, (list, tuple)):
        arr = np.asarray(value)
        if arr.dtype.kind in "biufcUS" and arr.ndim >= 1:
            return arr
    elif np.isscalar(value):
        return np.array([value])
    return np.array([str(value)])


_FORMATS = {"csv": "csv", "text/csv": "csv", "libsvm": "libsvm", "text/libsvm": "libsvm", "text/x-libsvm": "libsvm"}


def as_dmatrix(data, arg: str):
    """``data`` as a DMatrix: None, a DMatrix, or a ``(file path, content type)`` tuple with
    content type 'csv' (label in the first column) or 'libsvm'. ``arg`` names the argument in errors."""
    import xgboost as xgb

    if data is None or isinstance(data, xgb.DMatrix):
        return data
    if not (isinstance(data, tuple) and len(data) == 2 and isinstance(data[0], (str, os.PathLike))):
        raise SMDebugTypeError(
            f"{arg} must be an xgboost.DMatrix or a (file path, 'csv' | 'libsvm') tuple, not {type(data).__name__}"
        )
    path = os.path.expanduser(os.fspath(data[0]))
    fmt = _FORMATS.get(str(data[1]).strip().lower())
    if fmt is None:
        raise SMDebugValueError(f"{arg}: content type {data[1]!r} is not one of {', '.join(_FORMATS)}")
    if not os.path.isfile(path):
        raise SMDebugValueError(f"{arg}: {path} is not a file (only local files are read)")
    try:
        if fmt == "csv":  # label in the first column, as SageMaker's XGBoost reads CSV
            arr = np.loadtxt(path, delimiter=",", ndmin=2)
            return xgb.DMatrix(arr[:, 1:], label=arr[:, 0])
        return xgb.DMatrix(f"{path}?format=libsvm")
    except (ValueError, xgb.core.XGBoostError) as exc:
        raise SMDebugValueError(f"{arg}: cannot read {path} as {fmt}: {exc}") from None
