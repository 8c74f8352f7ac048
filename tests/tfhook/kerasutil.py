"""Small real Keras models on sklearn's digits, and a callback that records what the hook should save."""

from __future__ import annotations

import keras
import numpy as np
from sklearn.datasets import load_digits


def digits(n: int = 160):
    x, y = load_digits(return_X_y=True)
    return (x[:n] / 16.0).astype("float32"), y[:n].astype("int64")


def sequential(seed: int = 0, hidden: int = 16, activation: str = "relu", bias_init="zeros"):
    keras.utils.set_random_seed(seed)
    return keras.Sequential(
        [
            keras.Input((64,)),
            keras.layers.Dense(hidden, activation=activation, bias_initializer=bias_init, name="dense"),
            keras.layers.Dense(10, name="dense_1"),
        ]
    )


def functional(seed: int = 0):
    keras.utils.set_random_seed(seed)
    inp = keras.Input((64,))
    h = keras.layers.Dense(16, activation="relu", name="dense")(inp)
    out = keras.layers.Dense(10, name="dense_1")(h)
    return keras.Model(inp, out, name="functional_model")


class Sub(keras.Model):
    def __init__(self):
        super().__init__(name="sub")
        self.d1 = keras.layers.Dense(16, activation="relu", name="dense")
        self.d2 = keras.layers.Dense(10, name="dense_1")

    def call(self, x):
        return self.d2(self.d1(x))


def subclassed(seed: int = 0):
    keras.utils.set_random_seed(seed)
    m = Sub()
    m(np.zeros((1, 64), "float32"))
    return m


def compile_sgd(model, lr=0.1, jit=False):
    model.compile(
        keras.optimizers.SGD(lr),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
        jit_compile=jit,
    )
    return model


class Recorder(keras.callbacks.Callback):
    """Per mode and batch: the weights before and after, and the logs."""

    def __init__(self):
        super().__init__()
        self.before, self.after, self.logs = {}, {}, {}

    def _w(self):
        return {v.path: v.numpy().copy() for v in self.model.weights}

    def on_train_batch_begin(self, batch, logs=None):
        self.before.setdefault("TRAIN", []).append(self._w())

    def on_train_batch_end(self, batch, logs=None):
        self.after.setdefault("TRAIN", []).append(self._w())
        self.logs.setdefault("TRAIN", []).append(dict(logs))

    def on_test_batch_end(self, batch, logs=None):
        self.after.setdefault("EVAL", []).append(self._w())
        self.logs.setdefault("EVAL", []).append(dict(logs))
