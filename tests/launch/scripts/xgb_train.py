"""An unmodified XGBoost script: xgb.train (--api train) or XGBClassifier().fit (--api sklearn).
--explicit: the same hooked by hand from the job's hook JSON (the reference for names)."""

import argparse

import numpy as np
import xgboost as xgb

p = argparse.ArgumentParser()
p.add_argument("--api", choices=("train", "sklearn"), default="train")
p.add_argument("--explicit", action="store_true")
args = p.parse_args()
rng = np.random.default_rng(0)
X = rng.normal(size=(200, 5))
y = (X[:, 0] + X[:, 1] > 0).astype(int)
hook = None
if args.explicit:
    import smdebug.xgboost as smd

    hook = smd.Hook.create_from_json_file()
if args.api == "train":
    dtrain, dval = xgb.DMatrix(X[:150], label=y[:150]), xgb.DMatrix(X[150:], label=y[150:])
    params = {"objective": "binary:logistic", "max_depth": 2, "eta": 0.3}
    if hook is not None:
        hook.hyperparameters, hook.train_data, hook.validation_data = params, dtrain, dval
    xgb.train(
        params,
        dtrain,
        num_boost_round=5,
        evals=[(dtrain, "train"), (dval, "validation")],
        callbacks=[hook] if hook is not None else None,
    )
else:
    clf = xgb.XGBClassifier(n_estimators=5, max_depth=2, callbacks=[hook] if hook is not None else None)
    clf.fit(X[:150], y[:150], eval_set=[(X[150:], y[150:])], verbose=False)
