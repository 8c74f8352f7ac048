"""A trial written by KerasHook loads in smdebug 1.0.34 with the same names, steps and values;
the hook configured from SageMaker's JSON behaves as the one built from keyword arguments."""

from __future__ import annotations

import json
import sys

from kerasutil import compile_sgd, digits, sequential

import smdebug.tensorflow as smd
from smdtest import ORACLE, run_json


def _keras_trial(out, hook):
    model = compile_sgd(sequential())
    x, y = digits(96)
    model.fit(
        x, y, batch_size=32, epochs=1, shuffle=False, callbacks=[hook], verbose=0, validation_data=(x[:32], y[:32])
    )
    model.predict(x[:32], batch_size=32, callbacks=[hook], verbose=0)
    hook.close()


def test_1_0_34_reads_our_keras_trial(tmp_path, peer):
    out = tmp_path / "keras"
    hook = smd.KerasHook(
        str(out),
        save_config=smd.SaveConfig(save_interval=1),
        include_collections=["weights", "biases", "gradients", "losses", "metrics", "layers"],
    )
    _keras_trial(out, hook)
    theirs = run_json(peer, ORACLE, out)
    ours = run_json(sys.executable, ORACLE, out)
    for key in (
        "tensor_names",
        "steps",
        "modes",
        "workers",
        "collections",
        "steps_TRAIN",
        "steps_EVAL",
        "steps_PREDICT",
    ):
        assert ours[key] == theirs[key], key
    assert theirs["steps_TRAIN"] == [0, 1, 2] and theirs["steps_EVAL"] == [0] and theirs["steps_PREDICT"] == [0]
    assert {"gradients/dense/kernelGrad", "dense/weights/dense/kernel:0", "dense/outputs", "loss"} <= set(
        theirs["tensor_names"]
    )
    compared = 0
    for name, t in theirs["tensors"].items():
        for step, entry in t["per_step"].items():
            assert "raises" not in entry["value@worker_0"], (name, step)
            assert ours["tensors"][name]["per_step"][step]["value@worker_0"] == entry["value@worker_0"], (name, step)
            compared += 1
    assert compared > 40


def test_json_config_equals_keyword_arguments(tmp_path, monkeypatch):
    cfg = {
        "LocalPath": str(tmp_path / "json"),
        "HookParameters": {"save_interval": "2"},
        "CollectionConfigurations": [
            {"CollectionName": "weights"},
            {"CollectionName": "losses"},
            {"CollectionName": "gradients"},
        ],
    }
    path = tmp_path / "hook.json"
    path.write_text(json.dumps(cfg))
    monkeypatch.setenv("SMDEBUG_CONFIG_FILE_PATH", str(path))
    from_json = smd.get_hook(create_if_not_exists=True)
    assert isinstance(from_json, smd.KerasHook)
    _keras_trial(tmp_path / "json", from_json)
    smd.del_hook()
    kw = smd.KerasHook(
        str(tmp_path / "kw"),
        save_config=smd.SaveConfig(save_interval=2),
        include_collections=["weights", "losses", "gradients"],
    )
    _keras_trial(tmp_path / "kw", kw)
    a = run_json(sys.executable, ORACLE, tmp_path / "json")
    b = run_json(sys.executable, ORACLE, tmp_path / "kw")
    assert a["tensor_names"] == b["tensor_names"] and a["steps"] == b["steps"]
    assert "gradients/dense/kernelGrad" in a["tensor_names"]
    for name in a["tensor_names"]:
        assert a["tensors"][name]["per_step"] == b["tensors"][name]["per_step"], name
