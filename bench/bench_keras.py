"""KerasHook step-time overhead against the same fit without the hook, in one run.

Keras MLP 256-512-512-512-10, batch 128, CPU, TensorFlow on one thread, SGD. Configurations:
(a) weights, biases, gradients, losses raw, every step; (b) the same as reductions only (min, max,
mean, std, abs mean, l2), every step; (c) as (a) but every 100th step. Each configuration gets a
fresh model and hook, one untimed warm-up fit (tracing), then a timed fit of STEPS batches; the
rounds are interleaved and the median per-step time is reported with its ratio to the hookless run.

usage: python bench/bench_keras.py [--steps 200] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    import keras
    import numpy as np
    import tensorflow as tf

    import smdebug.tensorflow as smd

    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.config.threading.set_intra_op_parallelism_threads(1)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((128 * a.steps, 256)).astype("float32")
    y = rng.integers(0, 10, 128 * a.steps)
    tmp = tempfile.mkdtemp(prefix="bench_keras_")
    colls = ["weights", "biases", "gradients", "losses"]
    reds = smd.ReductionConfig(reductions=["min", "max", "mean", "std"], abs_reductions=["mean"], norms=["l2"])
    configs = {
        "none": None,
        "(a) raw, every step": dict(save_config=smd.SaveConfig(save_interval=1), include_collections=colls),
        "(b) reductions, every step": dict(save_config=smd.SaveConfig(save_interval=1), include_collections=colls,
                                           reduction_config=reds),
        "(c) raw, every 100th step": dict(save_config=smd.SaveConfig(save_interval=100), include_collections=colls),
    }
    times: dict = {k: [] for k in configs}

    def one(name, cfg, r):
        keras.utils.set_random_seed(r)
        model = keras.Sequential([keras.Input((256,)), keras.layers.Dense(512, activation="relu"),
                                  keras.layers.Dense(512, activation="relu"), keras.layers.Dense(512, activation="relu"),
                                  keras.layers.Dense(10)])
        model.compile(keras.optimizers.SGD(0.01), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        cbs = []
        hook = None
        if cfg is not None:
            out = os.path.join(tmp, f"{len(times[name])}_{name[:3]}")
            shutil.rmtree(out, ignore_errors=True)
            hook = smd.KerasHook(out, **cfg)
            cbs = [hook]
        model.fit(x[: 128 * 5], y[: 128 * 5], batch_size=128, epochs=1, callbacks=cbs, verbose=0)  # tracing
        t0 = time.perf_counter()
        model.fit(x, y, batch_size=128, epochs=1, callbacks=cbs, verbose=0, shuffle=False)
        dt = (time.perf_counter() - t0) / a.steps
        if hook is not None:
            hook.close()
            shutil.rmtree(hook.out_dir, ignore_errors=True)
        return dt

    try:
        for r in range(a.rounds):
            for name, cfg in configs.items():
                times[name].append(one(name, cfg, r))
        base = statistics.median(times["none"])
        print(f"Keras MLP 256-512-512-512-10, batch 128, {a.steps} steps, median of {a.rounds} rounds, "
              f"TF {tf.__version__} / Keras {keras.__version__}, 1 thread")
        for name in configs:
            m = statistics.median(times[name])
            print(f"  {name:<28} {m * 1000:7.2f} ms/step  {m / base:5.2f}x")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
