"""smdebug.jax's step-time overhead: a jitted MLP without the hook, and with the hook saving
reductions every 10th step, in one process.

JAX on the CPU, MLP 256-512-512-512-10 (Flax NNX, split into a pytree of parameters for
``jax.jit``), batch 128, adam. The hook saves the weights, biases and gradients as reductions
computed on the device inside the step (min, max, mean, std, abs mean, l2: ``smdebug.jax.reductions``,
``save_raw_tensor=False``) and the loss, every 10th step; it is handed the loss every step (the
non-finite watch). The step's ``save`` flag (``hook.begin_step()``) is static: two compiled
versions, the one that saves nothing is the hookless step. Both loops are compiled and run once
untimed, then timed in interleaved rounds (hookless, hook, hookless, ...): STEPS steps, the last
result waited for, and for the hook its ``close()`` (which waits for the writer). Prints the
median time per step of each, their ratio, CPU time of the process, the CPU time the training
thread spent in the hook's calls (a figure a loaded machine inflates less than it does the ratio;
at the step after a saved one, begin_step waits for the device to finish the saved step: a wait,
not CPU) and the machine.

usage: python bench/bench_jax.py [--steps 300] [--rounds 5] [--width 512]
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE))

from benchutil import machine  # noqa: E402

SAVE_INTERVAL = 10


def setup(width: int, steps: int):
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax
    from flax import nnx

    import smdebug.jax as smd

    class MLP(nnx.Module):
        def __init__(self, rngs):
            self.layers = nnx.List(
                [nnx.Linear(a, b, rngs=rngs) for a, b in ((256, width), (width, width), (width, width), (width, 10))]
            )

        def __call__(self, x):
            for layer in self.layers[:-1]:
                x = jax.nn.relu(layer(x))
            return self.layers[-1](x)

    graphdef, params = nnx.split(MLP(nnx.Rngs(0)), nnx.Param)
    tx = optax.adam(1e-3)
    config = smd.ReductionConfig(
        reductions=["min", "max", "mean", "std"], abs_reductions=["mean"], norms=["l2"], save_raw_tensor=False
    )

    @partial(jax.jit, static_argnames="save")
    def step(params, opt_state, x, y, save: bool):
        def loss_fn(p):
            logits = nnx.merge(graphdef, p)(x)
            return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        out = {"loss": loss}
        if save:
            out["params"] = smd.reductions(params, config)
            out["grads"] = smd.reductions(grads, config)
        return optax.apply_updates(params, updates), opt_state, out

    rng = np.random.default_rng(0)
    xs = jnp.asarray(rng.standard_normal((steps, 128, 256)).astype(np.float32))
    ys = jnp.asarray(rng.integers(0, 10, (steps, 128)).astype(np.int32))
    return smd, config, step, params, tx.init(params), xs, ys


def run(ctx, with_hook: bool, steps: int) -> tuple[float, float, float]:
    import jax

    smd, config, step, params, opt_state, xs, ys = ctx
    out_dir = tempfile.mkdtemp(prefix="bench-jax-")
    hook = None
    if with_hook:
        hook = smd.Hook(
            out_dir=os.path.join(out_dir, "t"),
            save_config=smd.SaveConfig(save_interval=SAVE_INTERVAL),
            reduction_config=config,
            include_collections=["weights", "biases", "gradients", "losses"],
        )
    clock = time.thread_time  # the training thread's CPU time (waiting for the device costs none)
    in_hook = 0.0
    t0, c0 = time.perf_counter(), time.process_time()
    for i in range(steps):
        if hook is None:
            params, opt_state, out = step(params, opt_state, xs[i], ys[i], save=False)
            continue
        h0 = clock()
        save = hook.begin_step()
        h1 = clock()
        params, opt_state, out = step(params, opt_state, xs[i], ys[i], save=save)
        h2 = clock()
        hook.record(**out)
        in_hook += (h1 - h0) + (clock() - h2)
    jax.block_until_ready(params)
    if hook is not None:
        h0 = clock()
        hook.close()
        in_hook += clock() - h0
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    shutil.rmtree(out_dir, ignore_errors=True)
    return elapsed / steps, cpu / steps, in_hook / steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--width", type=int, default=512)
    a = ap.parse_args()
    logging.getLogger("smdebug").setLevel(logging.ERROR)  # (each run's closing line)
    ctx = setup(a.width, a.steps)
    run(ctx, False, SAVE_INTERVAL + 1)  # compiles both versions of the step, and the hook's path
    run(ctx, True, SAVE_INTERVAL + 1)
    wall: dict[bool, list[float]] = {False: [], True: []}
    cpu: dict[bool, list[float]] = {False: [], True: []}
    in_hook: list[float] = []
    for _ in range(a.rounds):
        for with_hook in (False, True):
            w, c, h = run(ctx, with_hook, a.steps)
            wall[with_hook].append(w)
            cpu[with_hook].append(c)
            if with_hook:
                in_hook.append(h)
    print(f"machine: {machine()}")
    print(
        f"jitted MLP 256-{a.width}x3-10, batch 128, {a.steps} steps x {a.rounds} interleaved rounds; "
        "median per step: wall clock, CPU time of the process (all threads)"
    )
    med = {k: (statistics.median(wall[k]), statistics.median(cpu[k])) for k in wall}
    for k, label in ((False, "no hook"), (True, f"hook, reductions on device every {SAVE_INTERVAL}th step")):
        (w, c), (w0, c0) = med[k], med[False]
        print(f"  {label:45s} {w * 1e3:8.3f} ms wall ({w / w0:.3f}x)  {c * 1e3:8.3f} ms CPU ({c / c0:.3f}x)")
    h = statistics.median(in_hook)
    print(
        f"  training thread's CPU time in the hook's calls (begin_step, record, close), per step: {h * 1e6:.0f} us "
        f"({h / med[False][0]:.1%} of the hookless step's wall time)"
    )


if __name__ == "__main__":
    main()
