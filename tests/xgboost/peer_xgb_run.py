"""Run by smdebug 1.0.34's interpreter: train a booster with 1.0.34's XGBoost hook.

usage: peer_xgb_run.py DATA_NPZ OUT_DIR   (the data comes from the test, so both runs see the same)
"""

import json
import sys

import numpy as np
import xgboost as xgb

from smdebug.xgboost import Hook, SaveConfig


def main():
    data = np.load(sys.argv[1])
    params = json.loads(str(data["params"]))
    dtrain = xgb.DMatrix(data["X_train"], data["y_train"])
    dvalid = xgb.DMatrix(data["X_valid"], data["y_valid"])
    hook = Hook(
        out_dir=sys.argv[2],
        save_all=True,
        save_config=SaveConfig(save_interval=2),
        hyperparameters=params,
        train_data=dtrain,
        validation_data=dvalid,
    )
    xgb.train(
        params,
        dtrain,
        int(data["rounds"]),
        evals=[(dtrain, "train"), (dvalid, "validation")],
        callbacks=[hook],
        verbose_eval=False,
    )


if __name__ == "__main__":
    main()
