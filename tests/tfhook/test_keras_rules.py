"""Built-in rules that need layer tensors, on real Keras runs built to trigger them (and healthy ones).

Keras names layer tensors ``<layer>/inputs`` and ``<layer>/outputs``; the rules' default regexes
are MXNet's (``.*relu_output``), so a Keras user passes the layer's names (documented in README).
"""

from __future__ import annotations

import keras
import numpy as np
import pytest
from kerasutil import digits

import smdebug.tensorflow as smd
from smdebug.exceptions import RuleEvaluationConditionMet
from smdebug.rules import invoke_rule
from smdebug.rules.builtin import get_rule_class
from smdebug.trials import create_trial


def _fit(out, layers, *, lr=0.1, steps=6, colls=("losses",), loss_scale=1.0, same_batch=False):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((64,)), *layers, keras.layers.Dense(10, name="head")])
    model.compile(keras.optimizers.SGD(lr), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    x, y = digits(32 * steps)
    if same_batch:  # every step sees the same 32 images: a constant loss when nothing learns
        x, y = np.tile(x[:32], (steps, 1)), np.tile(y[:32], steps)
    hook = smd.KerasHook(str(out), save_config=smd.SaveConfig(save_interval=1), include_collections=list(colls))
    model.fit(x * loss_scale, y, batch_size=32, epochs=1, shuffle=False, callbacks=[hook], verbose=0)
    hook.close()
    return create_trial(str(out))


def fires_at(trial, rule_name, **params):
    rule = get_rule_class(rule_name)(trial, **params)
    try:
        invoke_rule(rule, raise_eval_cond=True)
    except RuleEvaluationConditionMet as exc:
        return exc.step
    return None


def test_dead_relu(tmp_path):
    dead = _fit(
        tmp_path / "dead",
        [keras.layers.Dense(32, bias_initializer=keras.initializers.Constant(-100.0)), keras.layers.ReLU(name="relu")],
        colls=("layers",),
    )
    assert fires_at(dead, "DeadRelu", tensor_regex="relu/outputs") == 0
    ok = _fit(tmp_path / "ok", [keras.layers.Dense(32), keras.layers.ReLU(name="relu_1")], colls=("layers",))
    assert fires_at(ok, "DeadRelu", tensor_regex="relu_1/outputs") is None


def test_saturated_activation(tmp_path):
    big = keras.initializers.RandomNormal(stddev=50.0, seed=1)
    sat = _fit(
        tmp_path / "sat",
        [keras.layers.Dense(32, kernel_initializer=big), keras.layers.Activation("tanh", name="tanh")],
        colls=("layers",),
    )
    assert fires_at(sat, "SaturatedActivation", tensor_regex="tanh/inputs") == 0
    ok = _fit(
        tmp_path / "ok", [keras.layers.Dense(32), keras.layers.Activation("tanh", name="tanh_1")], colls=("layers",)
    )
    assert fires_at(ok, "SaturatedActivation", tensor_regex="tanh_1/inputs") is None


def test_vanishing_gradient(tmp_path):
    tiny = keras.initializers.RandomNormal(stddev=1e-3, seed=2)
    deep = [keras.layers.Dense(32, activation="sigmoid", kernel_initializer=tiny) for _ in range(8)]
    van = _fit(tmp_path / "van", deep, colls=("gradients",))
    assert fires_at(van, "VanishingGradient") == 0
    ok = _fit(tmp_path / "ok", [keras.layers.Dense(32, activation="relu")], colls=("gradients",))
    assert fires_at(ok, "VanishingGradient") is None


def test_exploding_tensor(tmp_path):
    boom = _fit(tmp_path / "boom", [keras.layers.Dense(32, activation="relu")], lr=1e12, colls=("losses", "weights"))
    step = fires_at(boom, "ExplodingTensor")
    losses = boom.tensor("loss")
    first_bad = min(
        s
        for s in boom.steps()
        if not np.all(
            np.isfinite(np.concatenate([np.ravel(boom.tensor(n).value(s)) for n in boom.tensor_names(step=s)]))
        )
    )
    assert step == first_bad and step <= 2
    assert not np.isfinite(float(np.ravel(losses.value(boom.steps()[-1]))[0]))
    ok = _fit(tmp_path / "ok", [keras.layers.Dense(32, activation="relu")], colls=("losses", "weights"))
    assert fires_at(ok, "ExplodingTensor") is None


@pytest.mark.parametrize("lr, expected", [(0.0, 10), (0.5, None)])
def test_loss_not_decreasing(tmp_path, lr, expected):
    trial = _fit(tmp_path / "t", [keras.layers.Dense(32, activation="relu")], lr=lr, steps=12, same_batch=True)
    assert fires_at(trial, "LossNotDecreasing") == expected
