"""XGBoost hook overhead: ``xgboost.train`` with the hook saving every round, against no hook.

Synthetic binary classification (numpy, seeded): 120,000 x 60 training rows, 30,000 validation
rows, ``hist`` trees of depth 6, one thread, logloss and auc on both sets. Configurations:
none; metrics + feature importance every round (target <= 1.10x); metrics + feature importance
+ predictions + labels every round. Each run is a fresh process, configurations interleaved;
the time is ``xgb.train`` (which includes the hook closing itself: waiting for the writer), as
wall-clock and as process CPU time (all threads: the writer's too; steadier on a shared machine).
Then the hook's own CPU time per round, measured without training noise (the hook's callbacks
on an already trained booster). Prints the per-round times and the ratios, and writes
bench/out/xgboost.json.

usage: python bench/bench_xgboost.py [--rounds 30] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CONFIGS = {
    "none": None,
    "metrics+importance": ["metrics", "feature_importance"],
    "metrics+importance+predictions": ["metrics", "feature_importance", "predictions", "labels"],
}


def data():
    import numpy as np
    import xgboost as xgb

    rng = np.random.default_rng(0)
    n, nv, f = 120_000, 30_000, 60
    X = rng.standard_normal((n + nv, f), dtype=np.float32)
    w = rng.standard_normal(f)
    y = ((X[:, :10] @ w[:10] + np.sin(3 * X[:, 10]) + 0.5 * rng.standard_normal(n + nv)) > 0).astype(np.float32)
    dtrain, dvalid = xgb.DMatrix(X[:n], y[:n]), xgb.DMatrix(X[n:], y[n:])
    params = {"objective": "binary:logistic", "tree_method": "hist", "max_depth": 6, "nthread": 1,
              "eval_metric": ["logloss", "auc"]}
    return dtrain, dvalid, params


def workload(config: str, out_dir: str, rounds: int) -> dict:
    import xgboost as xgb

    dtrain, dvalid, params = data()
    callbacks = []
    if CONFIGS[config] is not None:
        import smdebug.xgboost as smd

        callbacks = [smd.Hook(out_dir=out_dir, include_collections=CONFIGS[config], validation_data=dvalid,
                              save_config=smd.SaveConfig(save_interval=1))]
    t0, c0 = time.perf_counter(), time.process_time()
    xgb.train(params, dtrain, rounds, evals=[(dtrain, "train"), (dvalid, "validation")], callbacks=callbacks,
              verbose_eval=False)
    for hook in callbacks:  # the end of training is marked at close (timed, as when training closed it)
        hook.close()
    return {"train_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0, "rounds": rounds}


def hook_cost(out_dir: str, rounds: int) -> dict:
    """The hook's own CPU time per round, without training noise: a trained booster handed to the
    hook's round callback ``rounds`` times (with that round's evals log), then hook.close()."""
    import xgboost as xgb

    import smdebug.xgboost as smd

    dtrain, dvalid, params = data()
    log: dict = {}
    booster = xgb.train(params, dtrain, rounds, evals=[(dtrain, "train"), (dvalid, "validation")],
                        evals_result=log, verbose_eval=False)
    out = {}
    for config, colls in CONFIGS.items():
        if colls is None:
            continue
        shutil.rmtree(out_dir, ignore_errors=True)
        hook = smd.Hook(out_dir=out_dir, include_collections=colls, validation_data=dvalid,
                        save_config=smd.SaveConfig(save_interval=1))
        booster = hook.before_training(booster)
        c0 = time.process_time()
        for epoch in range(rounds):
            round_log = {d: {m: v[: epoch + 1] for m, v in ms.items()} for d, ms in log.items()}
            hook.after_iteration(booster, epoch, round_log)
        hook.after_training(booster)
        hook.close()
        out[config] = (time.process_time() - c0) / rounds
    return out


def run(config: str, out_dir: str, rounds: int) -> dict:
    shutil.rmtree(out_dir, ignore_errors=True)
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(REPO / "src"))
    p = subprocess.run([sys.executable, __file__, "--worker", config, out_dir, str(rounds)],
                       capture_output=True, text=True, env=env, check=False)
    if p.returncode != 0:
        raise SystemExit(f"{config} failed:\n{p.stderr[-3000:]}")
    r = json.loads(p.stdout.strip().splitlines()[-1])
    return {"wall": r["train_s"] / r["rounds"], "cpu": r["cpu_s"] / r["rounds"]}


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        print(json.dumps(workload(sys.argv[2], sys.argv[3], int(sys.argv[4]))))
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="smdebug-xgbbench-"))
    res: dict = {c: [] for c in CONFIGS}
    try:
        for rep in range(args.repeat):  # interleaved: drift hits every configuration
            for c in CONFIGS:
                res[c].append(run(c, str(base / c), args.rounds))
                r = res[c][-1]
                print(f"  round {rep}: {c:<32} wall {r['wall'] * 1000:7.1f} ms, cpu {r['cpu'] * 1000:7.1f} ms "
                      "per boosting round", flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    med = {c: {k: statistics.median(r[k] for r in v) for k in ("wall", "cpu")} for c, v in res.items()}
    print(f"\n{'configuration':<32} {'wall ms/round':>14} {'ratio':>7} {'cpu ms/round':>13} {'ratio':>7}")
    for c in CONFIGS:
        w, cp = med[c]["wall"], med[c]["cpu"]
        print(f"{c:<32} {w * 1000:14.1f} {w / med['none']['wall']:6.2f}x {cp * 1000:13.1f} "
              f"{cp / med['none']['cpu']:6.2f}x")
    env_path = str(REPO / "src")
    if env_path not in sys.path:
        sys.path.insert(0, env_path)
    os.environ["OMP_NUM_THREADS"] = "1"
    cost = hook_cost(str(base / "hook-only"), args.rounds)
    shutil.rmtree(base, ignore_errors=True)
    print("\nthe hook's own CPU time per round (same booster, no training), against no hook's CPU per round:")
    for c, v in cost.items():
        print(f"{c:<32} {v * 1000:8.2f} ms  {(med['none']['cpu'] + v) / med['none']['cpu']:6.3f}x")
    out = HERE / "out"
    out.mkdir(exist_ok=True)
    (out / "xgboost.json").write_text(json.dumps({"rounds": args.rounds, "repeat": args.repeat, "runs": res,
                                                  "median_s": med, "hook_cpu_s_per_round": cost}, indent=1))


if __name__ == "__main__":
    main()
