"""Helpers of the XGBoost hook tests: scikit-learn's data sets as DMatrix pairs, a training run."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import xgboost as xgb
from sklearn.datasets import load_breast_cancer, load_digits

import smdebug.xgboost as smd


@dataclass
class Task:
    params: dict
    train: xgb.DMatrix
    valid: xgb.DMatrix


def task(kind: str, feature_names: bool = False) -> Task:
    """'binary' (breast cancer), 'multi' (digits, 10 classes) or 'regression' (digits' label as a number)."""
    if kind == "binary":
        data = load_breast_cancer()
        X, y = data.data, data.target
        names = [n.replace(" ", "_") for n in data.feature_names] if feature_names else None
        params = {"objective": "binary:logistic", "max_depth": 2, "eval_metric": ["logloss", "auc", "error"]}
    else:
        X, y = load_digits(return_X_y=True)
        X, y = X[:600], y[:600]
        names = None
        if kind == "multi":
            params = {
                "objective": "multi:softprob",
                "num_class": 10,
                "max_depth": 2,
                "eval_metric": ["mlogloss", "merror"],
            }
        else:
            params = {"objective": "reg:squarederror", "max_depth": 3, "eval_metric": ["rmse", "mae"]}
    params["nthread"] = 1  # the machine's cores are shared: several threads wait on each other
    n = int(len(y) * 0.7)
    return Task(params, xgb.DMatrix(X[:n], y[:n], feature_names=names), xgb.DMatrix(X[n:], y[n:], feature_names=names))


@dataclass
class Run:
    booster: xgb.Booster
    evals_result: dict = field(default_factory=dict)


def train(t: Task, hook, rounds: int = 5, **kw) -> Run:
    res: dict = {}
    b = xgb.train(
        t.params,
        t.train,
        rounds,
        evals=[(t.train, "train"), (t.valid, "validation")],
        evals_result=res,
        callbacks=[hook] if hook is not None else None,
        verbose_eval=False,
        **kw,
    )
    return Run(b, res)


def full_hook(out_dir, t: Task, interval: int = 1, **kw) -> smd.Hook:
    """A hook that saves every collection every ``interval`` rounds."""
    return smd.Hook(
        out_dir=str(out_dir),
        save_all=True,
        save_config=smd.SaveConfig(save_interval=interval),
        hyperparameters=t.params,
        train_data=t.train,
        validation_data=t.valid,
        **kw,
    )


def value(trial, name, step):
    return np.asarray(trial.tensor(name).value(step))
