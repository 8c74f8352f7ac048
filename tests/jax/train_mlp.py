"""A Flax NNX MLP trained by a jitted step with smdebug.jax's hook: imported by the tests, and run
as a script for the runs on several host devices or processes.

usage: python tests/jax/train_mlp.py OUT_DIR [--shard] [--process-id I --processes N --port P]
(``--shard``: the parameters sharded over this process's devices: set
XLA_FLAGS=--xla_force_host_platform_device_count=2 first; ``--process-id``: one of N processes of
one JAX job, jax.distributed initialized with a coordinator on 127.0.0.1:P)
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import smdebug.jax as smd  # noqa: E402

STEPS = 12
SAVE_INTERVAL = 4
REDUCTIONS = smd.ReductionConfig(reductions=["min", "max", "mean", "std"], abs_reductions=["mean"], norms=["l2"])


class MLP(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.linear1 = nnx.Linear(16, 8, rngs=rngs)
        self.linear2 = nnx.Linear(8, 4, rngs=rngs)

    def __call__(self, x):
        return self.linear2(jax.nn.relu(self.linear1(x)))


def batches(steps: int, size: int = 32):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((steps * size, 16)).astype(np.float32)
    y = (x[:, :4].argmax(axis=1)).astype(np.int32)
    return [(x[i * size : (i + 1) * size], y[i * size : (i + 1) * size]) for i in range(steps)]


def make_step(graphdef, tx):
    @partial(jax.jit, static_argnames=("save", "reduce"))
    def step(params, opt_state, x, y, poison, save: bool, reduce: bool):
        def loss_fn(p):
            logits = nnx.merge(graphdef, p)(x + poison)  # poison: 0, or NaN to inject one
            return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean(), logits

        (loss, logits), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        out = {"loss": loss, "metrics": {"accuracy": jnp.mean(logits.argmax(-1) == y)}}
        if save:  # a static flag: steps that save nothing return (and compute) nothing more
            out["grads"] = smd.reductions(grads, REDUCTIONS) if reduce else grads
            out["updates"] = updates
        return params, opt_state, out

    return step


def shard_params(params):
    """The parameters sharded over the host's devices along their last axis (biases along theirs)."""
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = jax.sharding.Mesh(np.array(jax.local_devices()), ("x",))
    return jax.tree_util.tree_map(
        lambda a: jax.device_put(a, NamedSharding(mesh, P(*([None] * (a.ndim - 1)), "x"))), params
    )


@dataclass
class Run:
    seen: dict  # saved global step -> what the loop handed to the hook then, as numpy
    param_devices: int  # the devices the parameters were spread over


def train(
    out_dir: str,
    steps: int = STEPS,
    nan_at: int | None = None,
    shard: bool = False,
    reduce: bool = False,
    include_workers: str = "one",
    eval_steps: int = 2,
    **hook_kwargs,
) -> Run:
    model = MLP(nnx.Rngs(0))
    graphdef, params = nnx.split(model, nnx.Param)
    if shard:
        params = shard_params(params)
    tx = optax.adam(1e-2)
    opt_state = tx.init(params)
    step = make_step(graphdef, tx)
    kwargs = {
        "save_config": smd.SaveConfig(save_interval=SAVE_INTERVAL),
        "include_collections": ["weights", "biases", "gradients", "optimizer_variables", "losses", "metrics"],
        **hook_kwargs,
    }
    hook = smd.Hook(out_dir=out_dir, include_workers=include_workers, **kwargs)
    seen: dict = {}
    for i, (x, y) in enumerate(batches(steps)):
        save = hook.begin_step(smd.modes.TRAIN)
        poison = jnp.float32(np.nan if i == nan_at else 0.0)
        before = params
        params, opt_state, out = step(params, opt_state, x, y, poison, save=save, reduce=reduce)
        hook.record(params=before, opt_state=opt_state if save else None, **out)
        if save:
            seen[hook.step] = jax.device_get({"params": before, **out})
    for x, y in batches(eval_steps):
        if hook.begin_step(smd.modes.EVAL):
            logits = nnx.merge(graphdef, params)(x)
            hook.record(loss=optax.softmax_cross_entropy_with_integer_labels(logits, y).mean())
    hook.close()
    return Run(seen, len(jax.tree_util.tree_leaves(params)[0].sharding.device_set))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    ap.add_argument("--shard", action="store_true")
    ap.add_argument("--process-id", type=int)
    ap.add_argument("--processes", type=int, default=1)
    ap.add_argument("--port", type=int)
    a = ap.parse_args()
    if a.process_id is not None:
        jax.distributed.initialize(
            coordinator_address=f"127.0.0.1:{a.port}",
            num_processes=a.processes,
            process_id=a.process_id,
            local_device_ids=None,
        )
    run = train(a.out_dir, shard=a.shard, include_workers="all" if a.processes > 1 else "one")
    json.dump(
        {"param_devices": run.param_devices, "process": jax.process_index(), "processes": jax.process_count()},
        sys.stdout,
    )


if __name__ == "__main__":
    main()
