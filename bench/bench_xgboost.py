"""XGBoost hook overhead: ``xgboost.train`` with the hook saving every round, against no hook.

Synthetic binary classification (numpy, seeded): 120,000 x 60 training rows, 30,000 validation
rows, ``hist`` trees of depth 6, one thread, logloss and auc on both sets. Configurations:
none; metrics + feature importance every round (target <= 1.10x); metrics + feature importance
+ predictions + labels every round. Each run is a fresh process, configurations interleaved;
the time is ``xgb.train`` (which includes the hook closing itself: waiting for the writer), as
wall-clock, as CPU time of the main thread (where XGBoost trains and calls the hook) and of the
whole process (all threads: the writer's too), and per thread; CPU ratios hold on a machine
loaded by other work where wall-clock ratios do not. --warmup-rounds untimed rounds of every
configuration run first. Then the hook's own CPU time per round, measured without training
noise (the hook's callbacks on an already trained booster). Prints the machine (lscpu model,
cores, load average), the per-round times and the ratios, and writes bench/out/xgboost.json.

usage: python bench/bench_xgboost.py [--rounds 30] [--repeat 5] [--warmup-rounds 1]
       SMDEBUG_BENCH_PROFILE=FILE python bench/bench_xgboost.py --worker CONFIG OUT_DIR ROUNDS
       (one run; cProfile of xgb.train dumped to FILE)
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

from benchutil import CpuClock, machine, maybe_profiled, median_threads

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
    params = {
        "objective": "binary:logistic",
        "tree_method": "hist",
        "max_depth": 6,
        "nthread": 1,
        "eval_metric": ["logloss", "auc"],
    }
    return dtrain, dvalid, params


def workload(config: str, out_dir: str, rounds: int) -> dict:
    import xgboost as xgb

    dtrain, dvalid, params = data()
    callbacks = []
    if CONFIGS[config] is not None:
        import smdebug.xgboost as smd

        callbacks = [
            smd.Hook(
                out_dir=out_dir,
                include_collections=CONFIGS[config],
                validation_data=dvalid,
                save_config=smd.SaveConfig(save_interval=1),
            )
        ]
    clock = CpuClock()
    clock.start()
    with maybe_profiled():
        xgb.train(
            params,
            dtrain,
            rounds,
            evals=[(dtrain, "train"), (dvalid, "validation")],
            callbacks=callbacks,
            verbose_eval=False,
        )
        for hook in callbacks:  # the end of training is marked at close (timed, as when training closed it)
            hook.close()
    return {**clock.stop(), "rounds": rounds}


def hook_cost(out_dir: str, rounds: int) -> dict:
    """The hook's own CPU time per round, without training noise: a trained booster handed to the
    hook's round callback ``rounds`` times (with that round's evals log), then hook.close()."""
    import xgboost as xgb

    import smdebug.xgboost as smd

    dtrain, dvalid, params = data()
    log: dict = {}
    booster = xgb.train(
        params, dtrain, rounds, evals=[(dtrain, "train"), (dvalid, "validation")], evals_result=log, verbose_eval=False
    )
    out = {}
    for config, colls in CONFIGS.items():
        if colls is None:
            continue
        shutil.rmtree(out_dir, ignore_errors=True)
        hook = smd.Hook(
            out_dir=out_dir,
            include_collections=colls,
            validation_data=dvalid,
            save_config=smd.SaveConfig(save_interval=1),
        )
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
    os.sync()  # the previous run's writeback does not land in this one's timing
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(REPO / "src"))
    p = subprocess.run(
        [sys.executable, __file__, "--worker", config, out_dir, str(rounds)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if p.returncode != 0:
        raise SystemExit(f"{config} failed:\n{p.stderr[-3000:]}")
    r = json.loads(p.stdout.strip().splitlines()[-1])
    n = r["rounds"]
    return {
        "wall": r["wall_s"] / n,
        "main_cpu": r["thread_cpu_s"] / n,
        "cpu": r["proc_cpu_s"] / n,
        "threads": {k: v / n for k, v in r["threads_cpu_s"].items()},
    }


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        print(json.dumps(workload(sys.argv[2], sys.argv[3], int(sys.argv[4]))))
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--warmup-rounds", type=int, default=1)
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="smdebug-xgbbench-"))
    res: dict = {c: [] for c in CONFIGS}
    start = machine()
    try:
        for rep in range(args.warmup_rounds + args.repeat):  # interleaved: drift hits every configuration
            for c in CONFIGS:
                r = run(c, str(base / c), args.rounds)
                if rep >= args.warmup_rounds:
                    res[c].append(r)
                print(
                    f"  round {rep}{' (warm-up)' if rep < args.warmup_rounds else ''}: {c:<32} wall "
                    f"{r['wall'] * 1000:7.1f} ms, cpu {r['cpu'] * 1000:7.1f} ms per boosting round",
                    flush=True,
                )
    finally:
        shutil.rmtree(base, ignore_errors=True)
    end = machine()
    print(f"\nmachine: at the start {start}; at the end {end}")
    print(f"{args.rounds} boosting rounds, median of {args.repeat} interleaved runs in fresh processes")
    med = {c: {k: statistics.median(r[k] for r in v) for k in ("wall", "main_cpu", "cpu")} for c, v in res.items()}
    print(
        f"\n{'configuration':<32} {'wall ms/round':>14} {'ratio':>7} {'main CPU':>9} {'ratio':>7} "
        f"{'proc CPU':>9} {'ratio':>7}"
    )
    for c in CONFIGS:
        line = f"{c:<32}"
        for k, width in (("wall", 14), ("main_cpu", 9), ("cpu", 9)):
            line += f" {med[c][k] * 1000:{width}.1f} {med[c][k] / med['none'][k]:6.2f}x"
        print(line)
    threads = {c: median_threads([r["threads"] for r in v]) for c, v in res.items()}
    print("\nCPU ms per boosting round by thread (median):")
    for c in CONFIGS:
        busy = {n: s for n, s in threads[c].items() if s >= 5e-5}
        print(f"  {c:<32} " + ", ".join(f"{n} {s * 1e3:.2f}" for n, s in sorted(busy.items(), key=lambda kv: -kv[1])))
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
    (out / "xgboost.json").write_text(
        json.dumps(
            {
                "machine": [start, end],
                "rounds": args.rounds,
                "repeat": args.repeat,
                "runs": res,
                "median_s": med,
                "threads_s": threads,
                "hook_cpu_s_per_round": cost,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
