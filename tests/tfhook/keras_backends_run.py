"""Run by test_keras_backends.py once per Keras backend (``KERAS_BACKEND`` set by the test):
trains a Sequential, a functional and an unbuilt subclassed model with a KerasHook saving
everything at every step (fit with validation, then predict), and writes to ``argv[2]`` (JSON)
what each trial holds and how far its values are from what Keras itself computes:

- ``final``: the weights saved at the last TRAIN step against ``model.get_weights()`` after fit;
- ``grad``: each step's saved gradient against (weights before - weights after) / lr (plain SGD);
- ``outputs``: each TRAIN step's saved ``dense/outputs`` against relu(saved inputs @ W + b) with
  the weights saved at the step before; the EVAL step's against the final weights;
- ``inputs``: the first step's ``dense/inputs`` against the first batch (no shuffle);
- ``loss``: the saved ``loss`` of each TRAIN step against the batch logs Keras gave callbacks.

``argv[1]`` is the run folder. Nothing here depends on the backend but the environment.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time

import keras
import numpy as np

import smdebug.tensorflow as smd
from smdebug.trials import create_trial

LR, BS = 0.1, 16
T, E, P = smd.modes.TRAIN, smd.modes.EVAL, smd.modes.PREDICT


class Sub(keras.Model):
    def __init__(self):
        super().__init__(name="sub")
        self.d1 = keras.layers.Dense(8, activation="relu", name="dense")
        self.d2 = keras.layers.Dense(3, name="dense_1")

    def call(self, x):
        return self.d2(self.d1(x))


def sequential():
    return keras.Sequential(
        [
            keras.Input((6,)),
            keras.layers.Dense(8, activation="relu", name="dense"),
            keras.layers.Dense(3, name="dense_1"),
        ],
        name="sequential",
    )


def functional():
    inp = keras.Input((6,))
    h = keras.layers.Dense(8, activation="relu", name="dense")(inp)
    return keras.Model(inp, keras.layers.Dense(3, name="dense_1")(h), name="functional")


class Logs(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.train = []

    def on_train_batch_end(self, batch, logs=None):
        self.train.append(float(logs["loss"]))


class Warnings(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def _err(a, b) -> float:
    a, b = np.asarray(a, "float64"), np.asarray(b, "float64")
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))


def run(kind: str, make, out: str, x, y) -> dict:
    model = make()
    model.compile(
        keras.optimizers.SGD(LR, name="sgd"),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    before = [w.copy() for w in model.get_weights()] if model.built else None
    hook = smd.KerasHook(out, save_all=True, save_config=smd.SaveConfig(save_interval=1))
    logs = Logs()
    model.fit(
        x[:64],
        y[:64],
        batch_size=BS,
        epochs=1,
        shuffle=False,
        validation_data=(x[64:], y[64:]),
        callbacks=[hook, logs],
        verbose=0,
    )
    model.predict(x[64:], batch_size=BS, callbacks=[hook], verbose=0)
    hook.close()
    tr = create_trial(out)
    wname = {
        "k0": "dense/weights/dense/kernel:0",
        "b0": "dense/weights/dense/bias:0",
        "k1": "dense_1/weights/dense_1/kernel:0",
        "b1": "dense_1/weights/dense_1/bias:0",
    }
    steps = tr.steps(mode=T)

    def w(key, step):
        if step < 0:
            return before[["k0", "b0", "k1", "b1"].index(key)]
        return tr.tensor(wname[key]).value(step, mode=T)

    first = 0 if before is not None else 1
    grad = max(
        _err(tr.tensor(f"gradients/{n}Grad").value(s, mode=T), (w(k, s - 1) - w(k, s)) / LR)
        for s in steps[first:]
        for k, n in (("k0", "dense/kernel"), ("b1", "dense_1/bias"))
    )
    outputs = max(
        _err(
            tr.tensor("dense/outputs").value(s, mode=T),
            np.maximum(tr.tensor("dense/inputs").value(s, mode=T) @ w("k0", s - 1) + w("b0", s - 1), 0),
        )
        for s in steps[first:]
    )
    final_w = model.get_weights()
    eval_out = np.maximum(x[64 : 64 + BS] @ final_w[0] + final_w[1], 0)
    return {
        "names": tr.tensor_names(),
        "steps": {m.name: tr.steps(mode=m) for m in (T, E, P)},
        "final": max(_err(w(k, steps[-1]), v) for k, v in zip(("k0", "b0", "k1", "b1"), final_w)),
        "grad": grad,
        "outputs": max(outputs, _err(tr.tensor("dense/outputs").value(tr.steps(mode=E)[0], mode=E), eval_out)),
        "inputs": _err(tr.tensor("dense/inputs").value(steps[0], mode=T), x[:BS]),
        "loss": max(_err(tr.tensor("loss").value(s, mode=T), v) for s, v in zip(steps, logs.train)),
    }


def main() -> None:
    t0 = time.perf_counter()
    folder, report = sys.argv[1], sys.argv[2]
    warned = Warnings()
    logging.getLogger("smdebug").addHandler(warned)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(96, 6)).astype("float32")
    y = (x[:, 0] > 0).astype("int64") + (x[:, 1] > 0).astype("int64")
    result = {"backend": keras.backend.backend(), "models": {}}
    for kind, make in (("sequential", sequential), ("functional", functional), ("subclassed", Sub)):
        result["models"][kind] = run(kind, make, os.path.join(folder, kind), x, y)
    result["warnings"] = [m for m in warned.messages if "KerasHook" in m or "disabl" in m or "rror" in m]
    result["seconds"] = time.perf_counter() - t0
    result["tensorflow_imported"] = "tensorflow" in sys.modules
    with open(report, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
