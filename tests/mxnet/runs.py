"""Gluon models trained on sklearn's digits with an smdebug MXNet hook, and runs built to trigger
the built-in rules that read MXNet tensors (CheckInputImages, DeadRelu, PoorWeightInitialization)
or to leave them silent.

Only the API smdebug 1.0.34 shares with us is used (Hook, SaveConfig, modes, register_block,
get_collection, set_mode, close), so tests/mxnet/write_fixture.py runs the same models with
1.0.34's own hook. Every model is built in a fresh mx.name.NameManager: its blocks are named
hybridsequential0, softmaxcrossentropyloss0, ... whatever ran before in the process.

    python tests/mxnet/runs.py OUT_DIR   writes the six rule runs under OUT_DIR
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon, nd
from mxnet.gluon import nn

import smdebug.mxnet as smd

# the default regexes of the rules these runs are for
INPUT_IMAGES_REGEX = ".*hybridsequential0_input_0"
RELU_OUTPUT_REGEX = ".*relu_output"
RELU_INPUT_REGEX = ".*relu_input"


def digits(normalize: bool = True, n: int = 512, images: bool = True):
    """sklearn's 8x8 digits: float32 (n, 1, 8, 8) images (pixel values 0..16 unless normalised
    to mean 0, std 1) or (n, 64) rows, and float32 labels."""
    from sklearn.datasets import load_digits

    d = load_digits()
    x = d.images[:n].astype(np.float32)
    if normalize:
        x = (x - x.mean()) / x.std()
    x = x[:, None, :, :] if images else x.reshape(len(x), -1)
    return x, d.target[:n].astype(np.float32)


def mlp(hidden=(32, 16), bias_init=None, weight_init=None, seed: int = 0):
    """Dense(h, relu) per hidden size, then Dense(10); ``bias_init``: the first layer's bias
    initializer; ``weight_init``: every layer's weight initializer, or a list of one per layer
    (default Xavier weights, zero biases)."""
    inits = weight_init if isinstance(weight_init, list) else [weight_init] * (len(hidden) + 1)
    mx.random.seed(seed)
    with mx.name.NameManager():
        net = nn.HybridSequential()
        with net.name_scope():
            for i, h in enumerate(hidden):
                kw = {"bias_initializer": bias_init} if i == 0 and bias_init is not None else {}
                net.add(nn.Dense(h, activation="relu", weight_initializer=inits[i], **kw))
            net.add(nn.Dense(10, weight_initializer=inits[-1]))
        loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    net.initialize(mx.init.Xavier())
    return net, loss_fn


def cnn(seed: int = 0):
    """Conv2D(4, 3x3, relu) -> MaxPool2D(2) -> Dense(10), for (n, 1, 8, 8) images."""
    mx.random.seed(seed)
    with mx.name.NameManager():
        net = nn.HybridSequential()
        with net.name_scope():
            net.add(nn.Conv2D(4, kernel_size=3, activation="relu"), nn.MaxPool2D(2), nn.Dense(10))
        loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    net.initialize(mx.init.Xavier())
    return net, loss_fn


@dataclass
class Record:
    """What training saw, per global step: parameters after the forward (the values the forward
    used), gradients after backward, the mean loss; the batches; the modes."""

    params: dict = field(default_factory=dict)
    grads: dict = field(default_factory=dict)
    loss: dict = field(default_factory=dict)
    batches: dict = field(default_factory=dict)
    modes: list = field(default_factory=list)


def train(
    hook,
    net,
    loss_fn,
    x,
    y,
    schedule: str = "TTTTE",
    batch: int = 32,
    lr: float = 0.1,
    same_batch: bool = False,
    record: Record | None = None,
    step_fn=None,
) -> Record:
    """One forward per letter of ``schedule``: T trains (autograd.record, backward, SGD step),
    E evaluates; ``step_fn(i)`` after step i. ``hook`` None: no hook."""
    record = record if record is not None else Record()
    if hook is not None:
        hook.register_block(net)
        hook.register_block(loss_fn)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": lr})
    modes = {"T": smd.modes.TRAIN, "E": smd.modes.EVAL}
    for i, m in enumerate(schedule):
        if hook is not None:
            hook.set_mode(modes[m])
        lo = 0 if same_batch else (i * batch) % (len(x) - batch + 1)
        xb, yb = nd.array(x[lo : lo + batch]), nd.array(y[lo : lo + batch])
        record.batches[i], record.modes = x[lo : lo + batch], [*record.modes, m]
        if m == "T":
            with autograd.record():
                loss = loss_fn(net(xb), yb)
            loss.backward()
        else:
            loss = loss_fn(net(xb), yb)
        params = net.collect_params().values()
        record.params[i] = {p.name: p.data().asnumpy() for p in params}
        record.loss[i] = float(loss.mean().asscalar())
        if m == "T":
            record.grads[i] = {p.name: p.grad().asnumpy() for p in params if p.grad_req != "null"}
            trainer.step(batch)
        if step_fn is not None:
            step_fn(i)
    return record


def _rule_hook(out_dir, collection: str, regex: str):
    """A hook saving ``collection`` = ``regex`` at every step, as a rule's hook configuration does
    (every step here rather than 1.0.34's every 500th, for short runs); losses are saved by default."""
    hook = smd.Hook(out_dir=str(out_dir), save_config=smd.SaveConfig(save_interval=1), include_collections=[collection])
    hook.get_collection(collection).include(regex)
    return hook


def check_input_images_run(out_dir, normalized: bool) -> Record:
    """The CNN on digit images, unnormalised (pixel mean ~4.9: CheckInputImages fires) or
    normalised (mean 0: silent); 4 steps of 128 images (the rule needs 500)."""
    net, loss_fn = cnn()
    x, y = digits(normalize=normalized)
    hook = _rule_hook(out_dir, "input_image", INPUT_IMAGES_REGEX)
    rec = train(hook, net, loss_fn, x, y, "TTTT", batch=128, lr=0.01)
    hook.close()
    return rec


def dead_relu_run(out_dir, dead: bool) -> Record:
    """The MLP with its first layer's bias at -100 (every unit of that ReLU is inactive: DeadRelu
    fires) or at 0 (silent)."""
    net, loss_fn = mlp(bias_init=mx.init.Constant(-100.0) if dead else None)
    x, y = digits(images=False)
    hook = _rule_hook(out_dir, "relu_output", RELU_OUTPUT_REGEX)
    rec = train(hook, net, loss_fn, x, y, "TTT", batch=64)
    hook.close()
    return rec


def poor_weight_initialization_run(out_dir, bad: bool) -> Record:
    """Three ReLU layers: weights ~ N(0, 10) in the first and N(0, 0.001) after it (the variance
    of the ReLU inputs changes by orders of magnitude from layer to layer: the rule fires), or He
    initialisation (variances of one order: silent, and the loss falls at every step)."""
    if bad:
        init = [mx.init.Normal(10.0)] + [mx.init.Normal(0.001)] * 3
    else:
        init = mx.init.MSRAPrelu(factor_type="in", slope=0.0)
    net, loss_fn = mlp(hidden=(32, 32, 32), weight_init=init)
    x, y = digits(images=False)
    hook = _rule_hook(out_dir, "relu_input", RELU_INPUT_REGEX)
    rec = train(hook, net, loss_fn, x, y, "T" * 10, batch=256, lr=0.05, same_batch=True)
    hook.close()
    return rec


RULE_RUNS = {
    "check_input_images": check_input_images_run,
    "dead_relu": dead_relu_run,
    "poor_weight_initialization": poor_weight_initialization_run,
}


def write_rule_runs(root) -> dict:
    """Each rule's triggering and healthy run under ``root``/<rule>/{trigger,healthy}."""
    out = {}
    for rule, fn in RULE_RUNS.items():
        for kind, flag in (("trigger", True), ("healthy", False)):
            path = Path(root) / rule / kind
            out[(rule, kind)] = (path, fn(path, flag if rule != "check_input_images" else not flag))
    return out


if __name__ == "__main__":
    write_rule_runs(sys.argv[1])
