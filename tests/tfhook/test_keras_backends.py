"""KerasHook on Keras 3's three backends (``KERAS_BACKEND`` = tensorflow, jax, torch).

Each backend runs in its own process (keras_backends_run.py: Sequential, functional and an unbuilt
subclassed model, everything saved at every step); the three run at once, and the tests read what
they wrote: the same tensor names on every backend (1.0.34's, as on TensorFlow), values as Keras
computed them. Then: a subclassed model that Keras builds inside fit, with layer capture, on TF in
graph mode and eagerly (it broke fit: Keras' build-time tensors leaked out of the step); and the
zero-code-change attach (``smdebug run``) on jax and torch.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest

import smdebug
import smdebug.tensorflow as smd
from smdebug.trials import create_trial

HERE = Path(__file__).parent
BACKENDS = ("tensorflow", "jax", "torch")
INSTALLED = [b for b in BACKENDS if importlib.util.find_spec(b) is not None]
NAMES = [  # 1.0.34's names (frameworks.md), on every backend
    "accuracy",
    "batch",
    "dense/inputs",
    "dense/outputs",
    "dense/weights/dense/bias:0",
    "dense/weights/dense/kernel:0",
    "dense_1/inputs",
    "dense_1/outputs",
    "dense_1/weights/dense_1/bias:0",
    "dense_1/weights/dense_1/kernel:0",
    "gradients/dense/biasGrad",
    "gradients/dense/kernelGrad",
    "gradients/dense_1/biasGrad",
    "gradients/dense_1/kernelGrad",
    "loss",
    "sgd/iteration:0",
    "sgd/learning_rate:0",
    "val_accuracy",
    "val_loss",
]


def _env(backend: str) -> dict:
    return {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONWARNINGS": "ignore"}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    """Each installed backend's report (keras_backends_run.py), the three processes at once."""
    root = tmp_path_factory.mktemp("backends")
    procs = {}
    for b in INSTALLED:
        procs[b] = subprocess.Popen(
            [sys.executable, str(HERE / "keras_backends_run.py"), str(root / b), str(root / f"{b}.json")],
            env=_env(b),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
    out = {}
    for b, p in procs.items():
        text, _ = p.communicate(timeout=600)
        assert p.returncode == 0, f"{b}:\n{text[-4000:]}"
        out[b] = json.loads((root / f"{b}.json").read_text())
    return out


@pytest.mark.parametrize("keras_backend", BACKENDS)
def test_every_model_saves_what_keras_computed(runs, keras_backend):
    if keras_backend not in runs:
        pytest.skip(f"{keras_backend} is not installed")
    run = runs[keras_backend]
    assert run["backend"] == keras_backend
    assert run["warnings"] == []  # nothing this backend cannot give here; the hook never disabled itself
    if keras_backend != "tensorflow":
        assert not run["tensorflow_imported"]  # the hook imports TensorFlow only on its own backend
    for kind, m in run["models"].items():
        assert m["names"] == NAMES, kind
        assert m["steps"] == {"TRAIN": [0, 1, 2, 3], "EVAL": [0, 1], "PREDICT": [0, 1]}, kind
        assert m["final"] < 1e-6, kind  # the weights saved at the last step are the model's after fit
        assert m["grad"] < 1e-4, kind  # gradient == (weights before - weights after) / lr
        assert m["outputs"] < 1e-5, kind  # dense/outputs == relu(inputs @ W + b), in TRAIN and EVAL
        assert m["inputs"] == 0 and m["loss"] < 1e-6, kind


def test_same_names_on_every_backend(runs):
    if len(runs) < 2:
        pytest.skip("needs two Keras backends installed")
    names = {b: {kind: m["names"] for kind, m in r["models"].items()} for b, r in runs.items()}
    first = next(iter(names.values()))
    assert all(n == first for n in names.values()), names


class _Embed(keras.Model):
    """1.0.34's test_embedding_grad model, subclassed: Keras builds it inside fit."""

    def __init__(self):
        super().__init__(name="embed")
        self.emb = keras.layers.Embedding(20, 4, name="embedding")
        self.flat = keras.layers.Flatten(name="flatten")
        self.out = keras.layers.Dense(3, name="dense")

    def call(self, x):
        return self.out(self.flat(self.emb(x)))


@pytest.mark.parametrize("eagerly", [False, True])
def test_layers_of_a_subclassed_model_built_inside_fit(tmp_path, eagerly):
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 20, size=(48, 5)), rng.integers(0, 3, size=(48,))
    model = _Embed()
    model.compile(
        keras.optimizers.SGD(0.1), keras.losses.SparseCategoricalCrossentropy(from_logits=True), run_eagerly=eagerly
    )
    assert not model.built
    hook = smd.KerasHook(str(tmp_path), save_all=True, save_config=smd.SaveConfig(save_interval=1))
    model.fit(x, y, batch_size=16, epochs=1, shuffle=False, callbacks=[hook], verbose=0)
    hook.close()
    tr = create_trial(str(tmp_path))
    assert tr.steps() == [0, 1, 2]
    for name in (
        "embedding/inputs",
        "embedding/outputs",
        "flatten/outputs",
        "dense/outputs",
        "gradients/embedding/embeddingsGrad",
        "embedding/weights/embedding/embeddings:0",
    ):
        assert tr.tensor(name).steps() == [0, 1, 2], name
    assert "flatten/outputs_1" not in tr.tensor_names()  # Keras' build-time call is not a second call
    np.testing.assert_array_equal(tr.tensor("embedding/inputs").value(0), x[:16])
    table = tr.tensor("embedding/weights/embedding/embeddings:0").value(2)
    flat = tr.tensor("flatten/outputs").value(2)
    assert flat.shape == (16, 20)
    # the embedding's gradient (IndexedSlices in TF) saved dense, rows of unused ids zero
    grad = tr.tensor("gradients/embedding/embeddingsGrad").value(2)
    assert grad.shape == table.shape
    unused = sorted(set(range(20)) - set(x[32:48].ravel().tolist()))
    assert not grad[unused].any()


@pytest.mark.parametrize("keras_backend", ["jax", "torch"])
def test_smdebug_run_attaches_on_the_other_backends(tmp_path, monkeypatch, keras_backend):
    if keras_backend not in INSTALLED:
        pytest.skip(f"{keras_backend} is not installed")
    monkeypatch.setenv("KERAS_BACKEND", keras_backend)
    lines: list = []
    final_path = tmp_path / "final_kernel.npy"
    result = smdebug.launch(
        [sys.executable, str(HERE / "keras_zcc_script.py"), str(final_path)],
        run_dir=str(tmp_path),
        name="zcc",
        collection_configs=["weights:save_interval=1", "gradients:save_interval=2", "losses:save_interval=1"],
        echo=lines.append,
    )
    assert result.exit_code == 0, lines
    tr = create_trial(result.out_dir)
    assert [m.name for m in tr.modes()] == ["TRAIN", "EVAL"]
    assert tr.steps(mode=smd.modes.TRAIN) == [0, 1, 2, 3, 4, 5]
    assert tr.tensor("gradients/dense/kernelGrad").steps(mode=smd.modes.TRAIN) == [0, 2, 4]
    assert {"dense/weights/dense/kernel:0", "dense_1/weights/dense_1/kernel:0", "loss"} <= set(tr.tensor_names())
    final = np.load(final_path)
    np.testing.assert_allclose(
        tr.tensor("dense/weights/dense/kernel:0").value(5, mode=smd.modes.TRAIN), final, rtol=1e-6, atol=1e-7
    )


def test_what_a_backend_cannot_give_is_said_once_when_the_hook_is_made(tmp_path, monkeypatch, caplog):
    # Keras' Flax NNX mode on jax traces the class's train_step: gradients and layers cannot be captured
    import keras.src.backend.config as keras_config

    from smdebug.tensorflow import backends

    monkeypatch.setattr(backends, "name", lambda: "jax")
    monkeypatch.setattr(keras_config, "is_nnx_enabled", lambda: True)
    caplog.set_level("WARNING", logger="smdebug")
    smd.KerasHook(str(tmp_path), include_collections=["gradients", "losses"])
    said = [r.getMessage() for r in caplog.records if "cannot save" in r.getMessage()]
    assert len(said) == 1 and "jax" in said[0] and "gradients and layer inputs/outputs" in said[0] and "NNX" in said[0]
    monkeypatch.setattr(keras_config, "is_nnx_enabled", lambda: False)
    caplog.clear()
    smd.KerasHook(str(tmp_path / "b"), include_collections=["gradients", "losses"])
    assert not [r for r in caplog.records if "cannot save" in r.getMessage()]
