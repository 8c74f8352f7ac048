"""smdebug with JAX: a Flax NNX MLP on scikit-learn's digits, trained by a jitted step, with the
hook saving every 10th step (weights whole, gradients as reductions computed on the device, the
loss and accuracy), then the built-in rule ExplodingTensor over the trial.

usage: python examples/jax_mlp.py [--out-dir DIR] [--steps 300] [--nan-at STEP]
(``--nan-at``: a NaN is injected into that step's input; the rule then fires)
"""

from __future__ import annotations

import argparse
import shutil
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx
from sklearn.datasets import load_digits

import smdebug.jax as smd
from smdebug.exceptions import RuleEvaluationConditionMet
from smdebug.rules import invoke_rule
from smdebug.rules.builtin import ExplodingTensor
from smdebug.trials import create_trial

GRAD_REDUCTIONS = smd.ReductionConfig(reductions=["min", "max", "mean"], abs_reductions=["mean"], norms=["l2"])


class MLP(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.linear1 = nnx.Linear(64, 64, rngs=rngs)
        self.linear2 = nnx.Linear(64, 10, rngs=rngs)

    def __call__(self, x):
        return self.linear2(jax.nn.relu(self.linear1(x)))


def loss_and_logits(model, x, y):
    logits = model(x)
    return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean(), logits


@nnx.jit(static_argnames="save")
def train_step(model, optimizer, x, y, poison, save: bool):
    (loss, logits), grads = nnx.value_and_grad(loss_and_logits, has_aux=True)(model, x + poison, y)
    optimizer.update(model, grads)
    out = {"loss": loss, "metrics": {"accuracy": jnp.mean(logits.argmax(-1) == y)}}
    if save:  # static: the steps that save nothing compute nothing more
        out["grads"] = smd.reductions(grads, GRAD_REDUCTIONS)
    return out


@nnx.jit
def eval_step(model, x, y):
    loss, logits = loss_and_logits(model, x, y)
    return {"loss": loss, "metrics": {"accuracy": jnp.mean(logits.argmax(-1) == y)}}


def train(out_dir: str, steps: int = 300, nan_at: int | None = None, batch: int = 64) -> dict:
    digits = load_digits()
    x, y = (digits.data / 16.0).astype(np.float32), digits.target.astype(np.int32)
    rng = np.random.default_rng(0)
    order = rng.permutation(len(x))
    train_idx, test_idx = order[:1400], order[1400:]
    model = MLP(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
    hook = smd.Hook(
        out_dir=out_dir,
        save_config=smd.SaveConfig(save_interval=10),
        include_collections=["weights", "biases", "gradients", "losses", "metrics"],
    )
    for step in range(steps):
        b = rng.choice(train_idx, batch)
        save = hook.begin_step(smd.modes.TRAIN)
        hook.record(params=model)  # the weights the step starts from (only looked at when it saves)
        poison = jnp.float32(np.nan if step == nan_at else 0.0)
        out = train_step(model, optimizer, x[b], y[b], poison, save=save)
        hook.record(**out)
        if (step + 1) % 100 == 0 or step + 1 == steps:
            hook.begin_step(smd.modes.EVAL)
            hook.record(**eval_step(model, x[test_idx], y[test_idx]))
    hook.close()

    trial = create_trial(out_dir)
    fired = None
    try:
        invoke_rule(ExplodingTensor(trial), raise_eval_cond=True)
    except RuleEvaluationConditionMet as exc:
        fired = str(exc)
    accuracy = trial.tensor("accuracy")
    last_eval = accuracy.steps(mode=smd.modes.EVAL)[-1]
    return {
        "saved_steps": trial.steps(mode=smd.modes.TRAIN),
        "tensors": trial.tensor_names(),
        "fired": fired,
        "test_accuracy": float(accuracy.value(last_eval, mode=smd.modes.EVAL)),
        "grad_l2": trial.tensor("gradient/linear1/kernel").reduction_value(trial.steps()[0], "l2"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out-dir", help="the trial's folder (default: a temporary one, removed after)")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--nan-at", type=int, help="inject a NaN into this step's input")
    a = ap.parse_args()
    out_dir = a.out_dir or tempfile.mkdtemp(prefix="smdebug-jax-")
    try:
        r = train(out_dir, a.steps, a.nan_at)
        print(f"saved TRAIN steps {r['saved_steps'][:5]}... ({len(r['saved_steps'])}), {len(r['tensors'])} tensors")
        print(
            f"test accuracy {r['test_accuracy']:.3f}; l2 norm of linear1's kernel gradient at step 0: {r['grad_l2']:.4f}"
        )
        print(f"ExplodingTensor: {r['fired'] or 'no NaN or infinity saved'}")
    finally:
        if not a.out_dir:
            shutil.rmtree(out_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
