"""KerasHook step-time overhead against the same fit without the hook, in one benchmark run.

Keras MLP 256-512-512-512-10, batch 128, CPU, TensorFlow on one thread, SGD. Configurations:
(a) weights, biases, gradients, losses raw, every step; (b) the same as reductions only (min, max,
mean, std, abs mean, l2), every step; (c) as (a) but every 100th step. Each run is a fresh
process: a fresh model and hook, one untimed warm-up fit (tracing), then a timed fit of STEPS
batches plus hook.close() (which waits for the writer); the wall time leaves out what fit does
after its last batch (tf.data's iterator teardown, which can wait 1.2 s for tf.data's
autotuning thread, with or without the hook: printed separately). Runs are interleaved (--warmup-rounds
untimed rounds of every configuration first), and the median of --rounds is reported per step:
wall clock, CPU time of the main thread (where Keras runs the callbacks), of the whole process
(all threads: TensorFlow's and the hook's writer) and of each thread, with the ratios to the
hookless run. CPU ratios hold on a machine loaded by other work where wall-clock ratios do not.
Prints the machine (lscpu model, cores, load average) and writes bench/out/keras.json.

usage: python bench/bench_keras.py [--steps 200] [--rounds 5] [--warmup-rounds 1] [--configs none,reductions]
       SMDEBUG_BENCH_PROFILE=FILE python bench/bench_keras.py --worker CONFIG OUT_DIR STEPS
       (one run; cProfile of the timed fit dumped to FILE)
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
    "none": "no hook",
    "raw": "(a) raw, every step",
    "reductions": "(b) reductions, every step",
    "raw100": "(c) raw, every 100th step",
}


def keras_model(steps: int) -> tuple:
    """The benchmark's compiled model and ``steps`` batches of data: ``(model, x, y)`` (TF on one
    thread; bench/keras_parts.py uses it too)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import keras
    import numpy as np
    import tensorflow as tf

    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.config.threading.set_intra_op_parallelism_threads(1)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((128 * steps, 256)).astype("float32")
    y = rng.integers(0, 10, 128 * steps)
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((256,)),
            keras.layers.Dense(512, activation="relu"),
            keras.layers.Dense(512, activation="relu"),
            keras.layers.Dense(512, activation="relu"),
            keras.layers.Dense(10),
        ]
    )
    model.compile(keras.optimizers.SGD(0.01), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model, x, y


def workload(config: str, out_dir: str, steps: int) -> dict:
    import keras
    import tensorflow as tf

    model, x, y = keras_model(steps)
    hook = None
    if config != "none":
        import smdebug.tensorflow as smd

        colls = ["weights", "biases", "gradients", "losses"]
        kw: dict = {
            "include_collections": colls,
            "save_config": smd.SaveConfig(save_interval=100 if config == "raw100" else 1),
        }
        if config == "reductions":
            kw["reduction_config"] = smd.ReductionConfig(
                reductions=["min", "max", "mean", "std"], abs_reductions=["mean"], norms=["l2"]
            )
        hook = smd.KerasHook(out_dir, **kw)
    last_end: list[float] = []

    class LastBatch(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            last_end[:] = [time.perf_counter()]

    cbs = [hook] if hook is not None else []
    model.fit(x[: 128 * 5], y[: 128 * 5], batch_size=128, epochs=1, callbacks=cbs, verbose=0)  # tracing
    if hook is not None:
        try:  # the one-pass moments kernel (where the tree has it): compiled before any step is timed
            from smdebug.core.tensors import moments_kernel
        except ImportError:
            pass
        else:
            moments_kernel.wait()
    clock = CpuClock()
    clock.start()
    with maybe_profiled():
        model.fit(x, y, batch_size=128, epochs=1, callbacks=[*cbs, LastBatch()], verbose=0, shuffle=False)
        fit_end = time.perf_counter()
        if hook is not None:
            hook.close()
    r = clock.stop()
    # fit's return destroys its tf.data iterator, which waits for tf.data's autotuning thread to
    # wake: 1.2 s in some runs, with or without the hook (about 1 run in 6 without it, 280 steps),
    # once per fit call. It is left out of the wall time (the CPU clocks do not see it: a wait).
    r["teardown_s"] = fit_end - last_end[0]
    r["wall_s"] -= r["teardown_s"]
    r["steps"] = steps
    r["versions"] = f"TF {tf.__version__} / Keras {keras.__version__}"
    return r


def run(config: str, out_dir: str, steps: int) -> dict:
    shutil.rmtree(out_dir, ignore_errors=True)
    os.sync()  # the previous run's writeback does not land in this one's timing
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), TF_CPP_MIN_LOG_LEVEL="3", OMP_NUM_THREADS="1")
    p = subprocess.run(
        [sys.executable, __file__, "--worker", config, out_dir, str(steps)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if p.returncode != 0:
        raise SystemExit(f"{config} failed:\n{p.stderr[-3000:]}")
    shutil.rmtree(out_dir, ignore_errors=True)
    return json.loads(p.stdout.strip().splitlines()[-1])


def report(res: dict, steps: int) -> dict:
    med = {
        c: {k: statistics.median(r[k] for r in v) / steps for k in ("wall_s", "thread_cpu_s", "proc_cpu_s")}
        for c, v in res.items()
    }
    print(f"\n{'configuration':<30}{'wall ms':>9}{'ratio':>7}{'main CPU':>10}{'ratio':>7}{'proc CPU':>10}{'ratio':>7}")
    for c, label in CONFIGS.items():
        if c not in med:
            continue
        m, b = med[c], med["none"]
        print(
            f"{label:<30}{m['wall_s'] * 1e3:9.2f}{m['wall_s'] / b['wall_s']:6.2f}x"
            f"{m['thread_cpu_s'] * 1e3:10.2f}{m['thread_cpu_s'] / b['thread_cpu_s']:6.2f}x"
            f"{m['proc_cpu_s'] * 1e3:10.2f}{m['proc_cpu_s'] / b['proc_cpu_s']:6.2f}x"
        )
    print(
        "\nfit after its last batch (tf.data's teardown, left out of the wall times above), s: "
        + ", ".join(
            f"{c} {statistics.median(r.get('teardown_s', 0.0) for r in v):.3f} "
            f"(max {max(r.get('teardown_s', 0.0) for r in v):.3f})"
            for c, v in res.items()
        )
    )
    print("\nCPU ms per step by thread (median):")
    threads = {c: median_threads([r["threads_cpu_s"] for r in v]) for c, v in res.items()}
    for c, label in CONFIGS.items():
        if c not in threads:
            continue
        busy = {n: s for n, s in threads[c].items() if s / steps >= 5e-5}
        print(
            f"  {label:<28} "
            + ", ".join(f"{n} {s / steps * 1e3:.2f}" for n, s in sorted(busy.items(), key=lambda kv: -kv[1]))
        )
    return {
        "median_s_per_step": med,
        "threads_s_per_step": {c: {n: s / steps for n, s in t.items()} for c, t in threads.items()},
    }


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        print(json.dumps(workload(sys.argv[2], sys.argv[3], int(sys.argv[4]))))
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warmup-rounds", type=int, default=1)
    ap.add_argument(
        "--configs",
        default=",".join(CONFIGS),
        help="comma-separated, of " + ", ".join(CONFIGS) + " (none is always run: the ratios' base)",
    )
    a = ap.parse_args()
    configs = ["none", *(c for c in CONFIGS if c != "none" and c in a.configs.split(","))]
    base = Path(tempfile.mkdtemp(prefix="smdebug-kerasbench-"))
    res: dict = {c: [] for c in configs}
    start = machine()
    versions = ""
    try:
        for rep in range(a.warmup_rounds + a.rounds):  # interleaved: drift hits every configuration
            for c in configs:
                r = run(c, str(base / c), a.steps)
                versions = r["versions"]
                if rep >= a.warmup_rounds:
                    res[c].append(r)
                print(
                    f"  round {rep}{' (warm-up)' if rep < a.warmup_rounds else ''}: {c:<11} wall "
                    f"{r['wall_s'] / a.steps * 1e3:7.2f} ms, process CPU {r['proc_cpu_s'] / a.steps * 1e3:7.2f} ms "
                    "per step",
                    flush=True,
                )
    finally:
        shutil.rmtree(base, ignore_errors=True)
    end = machine()
    print(f"\nmachine: at the start {start}; at the end {end}")
    print(
        f"Keras MLP 256-512-512-512-10, batch 128, {a.steps} steps, {versions}, 1 thread, "
        f"median of {a.rounds} interleaved rounds in fresh processes"
    )
    out = report(res, a.steps)
    (HERE / "out").mkdir(exist_ok=True)
    (HERE / "out" / "keras.json").write_text(
        json.dumps({"machine": [start, end], "steps": a.steps, "rounds": a.rounds, **out, "runs": res}, indent=1)
    )


if __name__ == "__main__":
    main()
