"""XGBoost on Dask: ``xgboost.dask.train`` and ``DaskXGBClassifier`` on a 2-worker LocalCluster
(worker processes on 127.0.0.1) with our hook, passed as a callback. Dask pickles the hook to each
worker; each Dask worker is the trial's ``worker_<rank>``, its rank the one XGBoost's collective gives it.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

pytest.importorskip("dask.distributed")
import xgboost as xgb  # noqa: E402
import xgboost.dask  # noqa: E402,F401  (xgb.dask)
from dask import array as da  # noqa: E402
from dask.distributed import Client, LocalCluster  # noqa: E402

import smdebug.xgboost as smd  # noqa: E402
from smdebug.trials import create_trial  # noqa: E402
from smdtest import ORACLE, run_json  # noqa: E402

ROUNDS = 4
PARAMS = {"objective": "binary:logistic", "max_depth": 2, "nthread": 1, "eval_metric": "logloss"}
COLLECTIONS = ["metrics", "losses", "hyperparameters", "trees"]


@pytest.fixture(scope="module")
def client():
    # one cluster for the module: starting two worker processes costs seconds on this machine
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
        ) as cluster,
        Client(cluster) as c,
    ):
        yield c


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 5))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(np.float64)
    return X, y


def _hook(out_dir, include):
    return smd.Hook(
        out_dir=str(out_dir),
        include_workers=include,
        save_config=smd.SaveConfig(save_interval=1),
        include_collections=COLLECTIONS,
        hyperparameters=PARAMS,
    )


def _dask_train(client, out_dir, include):
    X, y = _data()
    dtrain = xgb.dask.DaskDMatrix(client, da.from_array(X, chunks=(100, 5)), da.from_array(y, chunks=100))
    hook = _hook(out_dir, include)
    out = xgb.dask.train(client, PARAMS, dtrain, ROUNDS, evals=[(dtrain, "train")], callbacks=[hook])
    return out["history"], hook


def _single_process_names(out_dir):
    X, y = _data()
    dtrain = xgb.DMatrix(X, y)
    hook = _hook(out_dir, "one")
    xgb.train(PARAMS, dtrain, ROUNDS, evals=[(dtrain, "train")], callbacks=[hook], verbose_eval=False)
    hook.close()
    trial = create_trial(str(out_dir))
    return trial.tensor_names(), trial.steps()


@pytest.mark.parametrize("include", ["all", "one"])
def test_dask_train_writes_one_worker_per_dask_worker(client, tmp_path, include, caplog):
    history, hook = _dask_train(client, tmp_path / "run", include)
    # the workers' copies closed when training ended there: the trial is complete now
    assert (tmp_path / "run/training_job_end.ts").exists()
    # the hook left in the client saved nothing and writes nothing (it would claim worker_0, one worker)
    hook.save_scalar("test_accuracy", 0.5)  # refused, loudly (the hook's errors are logged, not raised)
    assert "sent to the Dask workers" in caplog.text
    hook.close()
    trial = create_trial(str(tmp_path / "run"))
    workers = ["worker_0", "worker_1"] if include == "all" else ["worker_0"]
    assert trial.workers() == workers
    assert trial.steps() == list(range(ROUNDS))
    for w in workers:  # the collections file of each worker says how many workers wrote
        colls = json.loads((tmp_path / f"run/collections/000000000/{w}_collections.json").read_text())
        assert colls["_meta"]["num_workers"] == len(workers)
    names, steps = _single_process_names(tmp_path / "single")
    assert trial.tensor_names() == names and trial.steps() == steps
    assert "train-logloss" in names and "trees/Feature" in names
    # the metric is the collective's (all rows): every worker saved the value dask.train returned
    for w in workers:
        for step in range(ROUNDS):
            np.testing.assert_allclose(
                trial.tensor("train-logloss").value(step, worker=w)[0], history["train"]["logloss"][step], rtol=1e-6
            )


def test_dask_classifier(client, tmp_path):
    X, y = _data()
    dX, dy = da.from_array(X, chunks=(100, 5)), da.from_array(y, chunks=100)
    clf = xgb.dask.DaskXGBClassifier(
        n_estimators=ROUNDS, max_depth=2, n_jobs=1, eval_metric="logloss", callbacks=[_hook(tmp_path / "run", "all")]
    )
    clf.client = client
    clf.fit(dX, dy, eval_set=[(dX, dy)])
    trial = create_trial(str(tmp_path / "run"))
    assert trial.workers() == ["worker_0", "worker_1"]
    assert trial.steps() == list(range(ROUNDS))
    logloss = clf.evals_result()["validation_0"]["logloss"]
    for w in trial.workers():
        saved = [trial.tensor("validation_0-logloss").value(s, worker=w)[0] for s in range(ROUNDS)]
        np.testing.assert_allclose(saved, logloss, rtol=1e-6)
    assert {"validation_0-logloss", "trees/Feature", "hyperparameters/max_depth"} <= set(trial.tensor_names())


def test_peer_reads_the_dask_trial(client, tmp_path, peer):
    history, _ = _dask_train(client, tmp_path / "run", "all")
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("PYTHONPATH", raising=False)  # the peer imports its own smdebug
        theirs = run_json(peer, ORACLE, tmp_path / "run")
    ours = run_json(sys.executable, ORACLE, tmp_path / "run")
    assert theirs["workers"] == ours["workers"] == ["worker_0", "worker_1"]
    assert theirs["steps"] == ours["steps"] == list(range(ROUNDS))
    assert theirs["tensor_names"] == ours["tensor_names"]
    # the same values (the oracle's digests of every tensor at every step and worker)
    assert theirs["tensors"]["train-logloss"] == ours["tensors"]["train-logloss"]
    assert theirs["tensors"]["trees/Gain"] == ours["tensors"]["trees/Gain"]
    assert len(history["train"]["logloss"]) == ROUNDS
