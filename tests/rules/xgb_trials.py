"""Trials of real XGBoost boosting runs, written with FileWriter in the XGBoost hook's naming.

Until ``smdebug.xgboost`` lands, this writes per boosting round what smdebug 1.0.34's XGBoost hook
writes (as ``smdebug.xgboost.extract`` does): metrics ``<evals name>-<metric>`` equal to
``evals_result``, ``hyperparameters/<key>`` at the first saved round, ``predictions`` and
``labels`` of the validation set at that round, ``feature_importance/<type>/<feature>`` (get_score
normalised per type) and ``trees/<column>`` (the rows of ``trees_to_dataframe`` for the trees built
in that round), plus the collections file with 1.0.34's collection regexes, so that
``trial.tensor_names(collection=...)`` works.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import xgboost as xgb

from smdebug.core.collection import Collection
from smdebug.core.collection_manager import CollectionManager
from smdebug.core.locations import END_OF_JOB
from smdebug.core.writer import FileWriter
from smdebug.storage import open_store

WORKER = "worker_0"
IMPORTANCE_TYPES = ("weight", "gain", "cover", "total_gain", "total_cover")

# 1.0.34's XGBoost collections and their regexes
COLLECTION_REGEX = {
    "metrics": r"^[a-zA-z]+-[a-zA-z0-9]+$",
    "losses": r"^[a-zA-z]+-.+(?<!(auc|map))$",
    "hyperparameters": r"^hyperparameters/.*$",
    "predictions": r"^predictions$",
    "labels": r"^labels$",
    "feature_importance": r"^feature_importance/.*",
    "trees": r"^trees/.*",
}


@dataclass
class XgbRun:
    """What was trained and written: the trial folder, the booster and the values per step."""

    path: str
    booster: xgb.Booster
    evals_result: dict
    steps: list = field(default_factory=list)
    predictions: dict = field(default_factory=dict)  # step -> validation predictions
    labels: np.ndarray | None = None
    importance: dict = field(default_factory=dict)  # step -> {type: {feature: normalised}}
    node_max: dict = field(default_factory=dict)  # step -> max node id of the round's trees


def write_collections(path: str) -> None:
    cm = CollectionManager()
    for name, regex in COLLECTION_REGEX.items():
        cm.add(Collection(name, include_regex=[regex]))
    cm.export(path, f"{WORKER}_collections.json")


def end_trial(path: str) -> None:
    """Mark the end of training, as a hook does when it closes."""
    open_store(path).write(END_OF_JOB, b"")


def _column(series) -> np.ndarray:
    values = series.to_numpy()
    if values.dtype.kind in "fiub":
        return values
    return np.array(["nan" if v is None or (isinstance(v, float) and np.isnan(v)) else str(v) for v in values])


class _Writer(xgb.callback.TrainingCallback):
    def __init__(self, run: XgbRun, dval: xgb.DMatrix, params: dict, save_interval: int):
        self.run, self.dval, self.params, self.save_interval = run, dval, params, save_interval

    def after_iteration(self, model, epoch, evals_log):
        if epoch % self.save_interval:
            return False
        run = self.run
        with FileWriter(trial_dir=run.path, step=epoch, worker=WORKER) as fw:
            for data_name, metrics in evals_log.items():
                for metric, history in metrics.items():
                    fw.write_tensor(np.array([history[-1]], dtype=np.float64), f"{data_name}-{metric}")
            if not run.steps:
                for k, v in self.params.items():
                    fw.write_tensor(np.array(v if isinstance(v, list) else [v]), f"hyperparameters/{k}")
            preds = model.predict(self.dval)
            run.labels = self.dval.get_label()
            fw.write_tensor(preds, "predictions")
            fw.write_tensor(run.labels, "labels")
            run.predictions[epoch] = preds
            run.importance[epoch] = {}
            for kind in IMPORTANCE_TYPES:
                score = model.get_score(importance_type=kind)
                total = sum(score.values())
                run.importance[epoch][kind] = {f: v / total for f, v in score.items()}
                for f, v in score.items():
                    fw.write_tensor(np.array([v / total], dtype=np.float64), f"feature_importance/{kind}/{f}")
            df = model.trees_to_dataframe()
            per_round = df["Tree"].nunique() // (epoch + 1)
            rows = df[(df["Tree"] >= epoch * per_round) & (df["Tree"] < (epoch + 1) * per_round)]
            for col in rows.columns:
                fw.write_tensor(_column(rows[col]), f"trees/{col}")
            run.node_max[epoch] = int(rows["Node"].max())
        run.steps.append(epoch)
        return False


class _Schedule(xgb.callback.TrainingCallback):
    """Changes booster parameters before given rounds (``{round: {param: value}}``), with set_param."""

    def __init__(self, schedule: dict):
        self.schedule = schedule

    def before_iteration(self, model, epoch, evals_log):
        for k, v in self.schedule.get(epoch, {}).items():
            model.set_param(k, v)
        return False


def write_xgb_trial(path, params, train, validation, num_round, save_interval=1, end=True, schedule=None) -> XgbRun:
    """Train ``xgboost.train(params, ...)`` on ``train``/``validation`` ((X, y) pairs) and write the trial.

    ``schedule`` (``{round: {param: value}}``) changes parameters from a given round on.
    """
    dtrain = xgb.DMatrix(train[0], label=train[1])
    dval = xgb.DMatrix(validation[0], label=validation[1])
    path = str(path)
    write_collections(path)
    evals_result: dict = {}
    run = XgbRun(path=path, booster=None, evals_result=evals_result)
    run.booster = xgb.train(
        params,
        dtrain,
        num_boost_round=num_round,
        evals=[(dtrain, "train"), (dval, "validation")],
        evals_result=evals_result,
        verbose_eval=False,
        callbacks=[_Schedule(schedule or {}), _Writer(run, dval, params, save_interval)],
    )
    if end:
        end_trial(path)
    return run


def split(X, y, n_val, seed=0):
    """A seeded train/validation split: the last ``n_val`` of a permutation are the validation set."""
    idx = np.random.default_rng(seed).permutation(len(y))
    tr, va = idx[:-n_val], idx[-n_val:]
    return (X[tr], y[tr]), (X[va], y[va])


def breast_cancer():
    from sklearn.datasets import load_breast_cancer

    return load_breast_cancer(return_X_y=True)


def digits():
    from sklearn.datasets import load_digits

    return load_digits(return_X_y=True)
