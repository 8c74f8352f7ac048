"""One worker of a distributed XGBoost run (XGBoost's collective on 127.0.0.1), with the hook.

usage: dist_worker.py TRACKER_ARGS_JSON OUT_DIR RANK INCLUDE_WORKERS RESULT_DIR
"""

import json
import os
import sys

import numpy as np
import xgboost as xgb
from sklearn.datasets import load_breast_cancer

import smdebug.xgboost as smd


def main():
    args, out_dir, rank, include, result_dir = sys.argv[1:6]
    rank = int(rank)
    X, y = load_breast_cancer(return_X_y=True)
    X, y = X[rank::2], y[rank::2]  # each worker its own shard
    dtrain, dvalid = xgb.DMatrix(X[:200], y[:200]), xgb.DMatrix(X[200:], y[200:])
    hook = smd.Hook(
        out_dir=out_dir,
        include_workers=include,
        save_config=smd.SaveConfig(save_interval=1),
        include_collections=["metrics", "predictions"],
        validation_data=dvalid,
    )
    with xgb.collective.CommunicatorContext(**json.loads(args), dmlc_task_id=str(rank)):
        res = {}
        params = {"objective": "binary:logistic", "max_depth": 2, "eval_metric": "logloss", "nthread": 1}
        booster = xgb.train(
            params,
            dtrain,
            3,
            evals=[(dtrain, "train"), (dvalid, "validation")],
            evals_result=res,
            callbacks=[hook],
            verbose_eval=False,
        )
    np.save(os.path.join(result_dir, f"pred_{rank}.npy"), booster.predict(dvalid))
    with open(os.path.join(result_dir, f"evals_{rank}.json"), "w") as f:
        json.dump({"hook_worker": hook.worker, "evals": res}, f)


if __name__ == "__main__":
    main()
