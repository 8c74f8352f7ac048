"""Our hook and smdebug 1.0.34's XGBoost hook on the same training run write the same trial,
except where 1.0.34 is wrong (README.md, "Saving what XGBoost does"): full_shap/<f> holds
feature f's column, not the whole matrix. Both trials are read with our create_trial."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
import xgboost as xgb
from sklearn.datasets import load_breast_cancer

import smdebug.xgboost as smd
from smdebug.trials import create_trial

PEER_RUN = Path(__file__).with_name("peer_xgb_run.py")
ROUNDS = 5


def _peer_has_xgboost(peer) -> bool:
    return subprocess.run([peer, "-c", "import xgboost"], capture_output=True).returncode == 0


@pytest.fixture(scope="module")
def trials(tmp_path_factory, peer):
    if not _peer_has_xgboost(peer):
        pytest.fail(f"{peer} has no xgboost: run `make peer-xgboost` (make test does)")
    tmp = tmp_path_factory.mktemp("vs1034")
    X, y = load_breast_cancer(return_X_y=True)
    params = {"objective": "binary:logistic", "max_depth": 2, "eval_metric": ["logloss", "auc", "error"], "nthread": 1}
    np.savez(
        tmp / "data.npz",
        X_train=X[:400],
        y_train=y[:400],
        X_valid=X[400:],
        y_valid=y[400:],
        params=json.dumps(params),
        rounds=ROUNDS,
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the peer imports its own smdebug
    p = subprocess.run(
        [peer, str(PEER_RUN), str(tmp / "data.npz"), str(tmp / "theirs")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    dtrain, dvalid = xgb.DMatrix(X[:400], y[:400]), xgb.DMatrix(X[400:], y[400:])
    hook = smd.Hook(
        out_dir=str(tmp / "ours"),
        save_all=True,
        save_config=smd.SaveConfig(save_interval=2),
        hyperparameters=params,
        train_data=dtrain,
        validation_data=dvalid,
    )
    xgb.train(
        params, dtrain, ROUNDS, evals=[(dtrain, "train"), (dvalid, "validation")], callbacks=[hook], verbose_eval=False
    )
    return create_trial(str(tmp / "ours")), create_trial(str(tmp / "theirs"))


def test_same_names_collections_and_steps(trials):
    ours, theirs = trials
    assert ours.steps() == theirs.steps() == [0, 2, 4]
    assert ours.workers() == theirs.workers() == ["worker_0"]
    assert ours.tensor_names() == theirs.tensor_names()
    assert sorted(ours.collections()) == sorted(theirs.collections())
    for c in theirs.collections():
        assert ours.tensor_names(collection=c) == theirs.tensor_names(collection=c), c
    for name in theirs.tensor_names():
        assert ours.tensor(name).steps() == theirs.tensor(name).steps(), name


def test_same_values_except_full_shap(trials):
    ours, theirs = trials
    for name in theirs.tensor_names():
        for s in theirs.tensor(name).steps():
            a, b = np.asarray(ours.tensor(name).value(s)), np.asarray(theirs.tensor(name).value(s))
            if name.startswith("full_shap/"):
                assert b.ndim == 2 and b.shape[1] == 31  # 1.0.34: the whole (rows, features + 1) matrix
                col = 30 if name == "full_shap/bias" else int(name.split("/f")[1])
                np.testing.assert_array_equal(a, b[:, col])
                continue
            assert a.dtype == b.dtype and a.shape == b.shape, (name, s, a.dtype, b.dtype, a.shape, b.shape)
            np.testing.assert_array_equal(a, b, err_msg=f"{name} at {s}")  # bit for bit
