"""The XGBoost demo: boost trees on scikit-learn's digits with the smdebug hook as a callback,
then open the trial and show what was saved — metrics per round, the most important features,
the SHAP values, the trees of a round and the confusion of the validation predictions.

usage: python examples/xgboost_digits.py [--out-dir DIR] [--rounds 20]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time

import numpy as np
import xgboost as xgb
from sklearn.datasets import load_digits

import smdebug.xgboost as smd
from smdebug.trials import create_trial


def train(out_dir: str, rounds: int) -> float:
    X, y = load_digits(return_X_y=True)
    perm = np.random.default_rng(0).permutation(len(y))
    tr, va = perm[:1400], perm[1400:]
    dtrain, dvalid = xgb.DMatrix(X[tr], y[tr]), xgb.DMatrix(X[va], y[va])
    params = {
        "objective": "multi:softprob",
        "num_class": 10,
        "max_depth": 3,
        "eta": 0.3,
        "eval_metric": ["mlogloss", "merror"],
        "nthread": 1,
    }
    hook = smd.Hook(
        out_dir=out_dir,
        save_config=smd.SaveConfig(save_interval=5),
        include_collections=[
            "metrics",
            "hyperparameters",
            "feature_importance",
            "average_shap",
            "predictions",
            "labels",
            "trees",
        ],
        hyperparameters=params,
        train_data=dtrain,
        validation_data=dvalid,
    )
    hook.get_collection("metrics").save_config = smd.SaveConfig(save_interval=1)
    booster = xgb.train(
        params, dtrain, rounds, evals=[(dtrain, "train"), (dvalid, "validation")], callbacks=[hook], verbose_eval=False
    )  # every round is written when training ends
    acc = float((booster.predict(dvalid).argmax(1) == y[va]).mean())
    hook.save_scalar("validation_accuracy", acc)  # after training: the step after the last round
    hook.close()  # marks the end of training
    return acc


def show(out_dir: str) -> None:
    trial = create_trial(out_dir)
    steps = trial.steps()
    print(f"\ntrial {out_dir}")
    print(
        f"  {len(steps)} saved steps ({steps[0]}..{steps[-1]}: the boosting rounds, then the step after training "
        f"with scalar/validation_accuracy), workers {trial.workers()}"
    )
    print(f"  {len(trial.tensor_names())} tensors in collections:")
    for coll in sorted(trial.collections()):
        names = trial.tensor_names(collection=coll)
        if names:
            shown = ", ".join(names[:4]) + (f", ... ({len(names)})" if len(names) > 4 else "")
            print(f"    {coll:<19} {shown}")

    print("\n  metrics per round (round: train-mlogloss / validation-mlogloss / validation-merror)")
    tl, vl, ve = (trial.tensor(n).values() for n in ("train-mlogloss", "validation-mlogloss", "validation-merror"))
    pick = sorted(tl)[:: max(1, len(tl) // 6)]
    for s in pick:
        print(f"    {s:>3}: {float(tl[s][0]):.4f} / {float(vl[s][0]):.4f} / {float(ve[s][0]):.4f}")

    last = trial.tensor("predictions").steps()[-1]  # the last round all collections were saved
    gain = {
        n.rsplit("/", 1)[1]: float(trial.tensor(n).value(last)[0])
        for n in trial.tensor_names(step=last)
        if n.startswith("feature_importance/gain/")
    }
    top = sorted(gain.items(), key=lambda kv: -kv[1])[:5]
    print(
        f"\n  top features by gain at round {last} (share of the total): " + ", ".join(f"{f} {v:.3f}" for f, v in top)
    )
    shap = {
        n.rsplit("/", 1)[1]: float(trial.tensor(n).value(last)[0])
        for n in trial.tensor_names(collection="average_shap")
    }
    print("  their average SHAP values: " + ", ".join(f"{f} {shap[f]:+.4f}" for f, _ in top if f in shap))

    nodes = trial.tensor("trees/Feature").value(last)
    tree_ids = trial.tensor("trees/Tree").value(last)
    print(
        f"\n  round {last} built {len(np.unique(tree_ids))} trees (one per class), {len(nodes)} nodes, "
        f"{int((nodes == 'Leaf').sum())} leaves"
    )

    pred = trial.tensor("predictions").value(last).argmax(1)
    labels = trial.tensor("labels").value(last).astype(int)
    confusion = np.zeros((10, 10), dtype=int)
    np.add.at(confusion, (labels, pred), 1)
    print(f"\n  validation confusion at round {last} (rows: label, columns: prediction)")
    for i, row in enumerate(confusion):
        print(f"    {i}: " + " ".join(f"{v:>3}" for v in row))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-dir", default=None, help="where to save the trial (default: a new temp folder)")
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()
    out_dir = args.out_dir or tempfile.mkdtemp(prefix="smdebug-xgb-demo-")
    shutil.rmtree(out_dir, ignore_errors=True)
    t0 = time.perf_counter()
    acc = train(out_dir, args.rounds)
    print(f"trained {args.rounds} boosting rounds in {time.perf_counter() - t0:.1f} s, validation accuracy {acc:.3f}")
    show(out_dir)


if __name__ == "__main__":
    main()
