"""KerasHook overhead on each Keras 3 backend (tensorflow, jax, torch): fit without a hook against
fit with a KerasHook saving weights, biases, gradients and the loss as reductions (min, max, mean,
std, abs mean, l2) every 10th step.

One process per backend (``KERAS_BACKEND``), the framework on one thread. In it, two copies of the
same MLP 256-512-512-10 (batch 128, SGD): one fitted bare, one with the hook (made once and kept
across fits, as in a long training: its dual train function is traced once). After one untimed
warm-up fit of each, --rounds rounds each time one fit of --steps batches of both, in alternating
order; the median per step of the wall clock and of the process CPU time, and the ratio
hook / hookless, are printed per backend (CPU ratios hold on a machine loaded by other work where
wall-clock ratios do not). Writes bench/out/keras_backends.json.

usage: python bench/bench_keras_backends.py [--steps 100] [--rounds 5] [--backends tensorflow,jax,torch]
       python bench/bench_keras_backends.py --worker BACKEND STEPS ROUNDS OUT_JSON   (one backend)
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchutil import machine

HERE = Path(__file__).resolve().parent
BACKENDS = ("tensorflow", "jax", "torch")


def _one_thread(backend: str) -> None:
    if backend == "tensorflow":
        import tensorflow as tf

        tf.config.threading.set_inter_op_parallelism_threads(1)
        tf.config.threading.set_intra_op_parallelism_threads(1)
    elif backend == "torch":
        import torch

        torch.set_num_threads(1)


def worker(backend: str, steps: int, rounds: int, out_json: str) -> None:
    import keras
    import numpy as np

    import smdebug.tensorflow as smd

    _one_thread(backend)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((128 * steps, 256)).astype("float32")
    y = rng.integers(0, 10, 128 * steps)

    def model():
        m = keras.Sequential(
            [
                keras.Input((256,)),
                keras.layers.Dense(512, activation="relu"),
                keras.layers.Dense(512, activation="relu"),
                keras.layers.Dense(10),
            ]
        )
        m.compile(keras.optimizers.SGD(0.01), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        return m

    with tempfile.TemporaryDirectory() as tmp:
        hook = smd.KerasHook(
            os.path.join(tmp, "run"),
            save_config=smd.SaveConfig(save_interval=10),
            include_collections=["weights", "biases", "gradients", "losses"],
            reduction_config=smd.ReductionConfig(
                reductions=["min", "max", "mean", "std"], abs_reductions=["mean"], norms=["l2"]
            ),
        )
        fits = {"none": (model(), []), "hook": (model(), [hook])}

        def timed(config: str) -> tuple[float, float]:
            m, callbacks = fits[config]
            w0, c0 = time.perf_counter(), time.process_time()
            m.fit(x, y, batch_size=128, epochs=1, shuffle=False, callbacks=callbacks, verbose=0)
            return (time.perf_counter() - w0) / steps, (time.process_time() - c0) / steps

        for config in fits:  # warm-up: tracing / compiling of both functions
            timed(config)
        times: dict = {"none": [], "hook": []}
        for r in range(rounds):
            for config in ("none", "hook") if r % 2 == 0 else ("hook", "none"):
                times[config].append(timed(config))
        hook.close()
    result = {
        c: {"wall_ms": 1e3 * statistics.median(t[0] for t in ts), "cpu_ms": 1e3 * statistics.median(t[1] for t in ts)}
        for c, ts in times.items()
    }
    result["ratio_wall"] = result["hook"]["wall_ms"] / result["none"]["wall_ms"]
    result["ratio_cpu"] = result["hook"]["cpu_ms"] / result["none"]["cpu_ms"]
    Path(out_json).write_text(json.dumps(result))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--backends", default=",".join(BACKENDS))
    p.add_argument("--worker", nargs=4, metavar=("BACKEND", "STEPS", "ROUNDS", "OUT_JSON"))
    args = p.parse_args()
    if args.worker:
        backend, steps, rounds, out_json = args.worker
        worker(backend, int(steps), int(rounds), out_json)
        return
    print(machine())
    print(
        f"MLP 256-512-512-10, batch 128, {args.steps} steps per fit, median of {args.rounds} interleaved rounds; "
        "hook: weights, biases, gradients, loss as reductions every 10th step"
    )
    results = {}
    for backend in args.backends.split(","):
        if importlib.util.find_spec(backend) is None:
            print(f"{backend:10s}  not installed")
            continue
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            env = {
                **os.environ,
                "KERAS_BACKEND": backend,
                "TF_CPP_MIN_LOG_LEVEL": "3",
                "XLA_FLAGS": (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false").strip(),
            }
            subprocess.run(
                [sys.executable, __file__, "--worker", backend, str(args.steps), str(args.rounds), f.name],
                env=env,
                check=True,
            )
            r = results[backend] = json.loads(Path(f.name).read_text())
        print(
            f"{backend:10s}  hookless {r['none']['wall_ms']:7.2f} ms/step wall {r['none']['cpu_ms']:7.2f} cpu | "
            f"hook {r['hook']['wall_ms']:7.2f} wall {r['hook']['cpu_ms']:7.2f} cpu | "
            f"ratio wall {r['ratio_wall']:.3f}x cpu {r['ratio_cpu']:.3f}x"
        )
    out = HERE / "out"
    out.mkdir(exist_ok=True)
    (out / "keras_backends.json").write_text(
        json.dumps({"steps": args.steps, "rounds": args.rounds, **results}, indent=1)
    )


if __name__ == "__main__":
    main()
