"""The PyTorch hook configured by SageMaker's JSON, and its TensorBoard output."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import smdebug.pytorch as smd
from smdebug.trials import create_trial


def _train(hook, steps=6):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 2))
    loss_fn = nn.MSELoss()
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(6, 4), torch.randn(6, 2)
    losses = {}
    for i in range(steps):
        hook.set_mode(smd.modes.TRAIN if i % 3 else smd.modes.EVAL)
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        losses[i] = float(loss.detach())
    hook.close()
    return losses


def test_json_configured_hook_equals_kwargs_configured(tmp_path, monkeypatch):
    cfg = {
        "LocalPath": str(tmp_path / "from_json"),
        "HookParameters": {"save_interval": "2", "eval.save_interval": "1"},
        "CollectionConfigurations": [
            {"CollectionName": "weights"},
            {
                "CollectionName": "gradients",
                "CollectionParameters": {"reductions": "mean,l2_norm", "save_raw_tensor": "true"},
            },
        ],
    }
    path = tmp_path / "debughookconfig.json"
    path.write_text(json.dumps(cfg))
    monkeypatch.setenv("SMDEBUG_CONFIG_FILE_PATH", str(path))
    from_json = smd.get_hook(create_if_not_exists=True)
    assert isinstance(from_json, smd.Hook) and from_json.out_dir == str(tmp_path / "from_json")
    _train(from_json)

    every = {m: smd.SaveConfigMode(save_interval=2) for m in smd.modes.ModeKeys}
    every[smd.modes.EVAL] = smd.SaveConfigMode(save_interval=1)
    kw = smd.Hook(
        out_dir=str(tmp_path / "from_kwargs"),
        save_config=smd.SaveConfig(mode_save_configs=every),
        include_collections=["weights", "gradients"],
    )
    kw.get_collection("gradients").reduction_config = smd.ReductionConfig(
        reductions=["mean"], norms=["l2"], save_raw_tensor=True
    )
    _train(kw)

    a, b = create_trial(str(tmp_path / "from_json")), create_trial(str(tmp_path / "from_kwargs"))
    assert a.steps() == b.steps() == [0, 1, 3, 4]  # EVAL 0,1 every step; TRAIN mode steps 0, 2
    assert a.tensor_names() == b.tensor_names()
    assert "gradient/Sequential_0.weight" in a.tensor_names() and "Sequential_0.bias" not in a.tensor_names()
    for name in a.tensor_names():
        ta, tb = a.tensor(name), b.tensor(name)
        assert ta.steps() == tb.steps()
        for s in ta.steps():
            np.testing.assert_array_equal(ta.value(s), tb.value(s))
            assert ta.reduction_values(s).keys() == tb.reduction_values(s).keys()
    g = a.tensor("gradient/Sequential_0.weight")
    assert set(g.reduction_values(g.steps()[0])) == {("mean", False), ("l2", False)}
    assert (
        json.loads(next((tmp_path / "from_json" / "collections" / "000000000").iterdir()).read_text())["collections"][
            "gradients"
        ]["reduction_config"]["reductions"]
        == "mean,l2_norm"
    )


def test_missing_json_file_gives_no_hook(tmp_path, monkeypatch):
    monkeypatch.delenv("SMDEBUG_CONFIG_FILE_PATH", raising=False)
    smd.del_hook()
    assert smd.Hook.create_from_json_file() is None or Path("/opt/ml/input/config/debughookconfig.json").exists()
    with pytest.raises(ValueError, match="nope.json"):
        smd.Hook.create_from_json_file(str(tmp_path / "nope.json"))


def test_tensorboard_scalars_and_histograms(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    hook = smd.Hook(
        out_dir=str(tmp_path / "run"),
        export_tensorboard=True,
        save_config=smd.SaveConfig(save_interval=1),
        include_collections=["weights", "losses"],
    )
    losses = _train(hook)
    tb = tmp_path / "run" / "tensorboard"
    assert sorted(p.name for p in tb.iterdir()) == ["EVAL", "TRAIN"]
    scalars, hist_tags = {}, set()
    for mode_dir in tb.iterdir():
        for f in mode_dir.iterdir():
            assert f.name.endswith(".tfevents")
            acc = EventAccumulator(str(f), size_guidance={"scalars": 0, "histograms": 0})
            acc.Reload()
            for tag in acc.Tags()["scalars"]:
                for ev in acc.Scalars(tag):
                    scalars[(tag, ev.step)] = ev.value
            hist_tags.update(acc.Tags()["histograms"])
    assert {s for (tag, s) in scalars if tag == "MSELoss_output_0"} == set(range(6))
    for step, value in losses.items():
        assert scalars[("MSELoss_output_0", step)] == pytest.approx(value, rel=1e-6)
    assert "weights/Sequential_0.weight" in hist_tags
    # one event file per mode for the whole (short) run, not one per saved step
    assert [len(list(d.iterdir())) for d in sorted(tb.iterdir())] == [1, 1]
    # the trial itself is unaffected by the TensorBoard export
    assert create_trial(str(tmp_path / "run")).steps() == list(range(6))


def test_inputs_and_outputs_collections_on_demand(tmp_path):
    hook = smd.Hook(
        out_dir=str(tmp_path / "io"),
        save_config=smd.SaveConfig(save_interval=1),
        include_collections=["inputs", "outputs"],
    )
    _train(hook, steps=2)
    trial = create_trial(str(tmp_path / "io"))
    assert {"inputs", "outputs"} <= set(trial.collections())
    ins, outs = trial.tensor_names(collection="inputs"), trial.tensor_names(collection="outputs")
    assert "0_input_0" in ins and "Sequential_input_0" in ins
    assert "2_output_0" in outs and "MSELoss_output_0" in outs
    x = trial.tensor("Sequential_input_0").value(0)
    assert x.shape == (6, 4)
    # a hook that does not ask for them writes 1.0.34's collections
    hook = smd.Hook(out_dir=str(tmp_path / "plain"), save_config=smd.SaveConfig(save_interval=1))
    _train(hook, steps=1)
    assert set(create_trial(str(tmp_path / "plain")).collections()) == {
        "all",
        "default",
        "weights",
        "biases",
        "gradients",
        "losses",
    }


def test_save_scalar_at_every_step_keeps_its_steps_in_tensorboard(tmp_path):
    """Saved every 10th step, a scalar saved at every step: TensorBoard shows each value at its own
    step (not ten points at each saved step); the trial keeps one value, the last, per saved step."""
    import json

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    model = torch.nn.Linear(2, 2)
    hook = smd.Hook(
        out_dir=str(tmp_path / "run"),
        export_tensorboard=True,
        include_collections=["losses"],
        save_config=smd.SaveConfig(save_interval=10),
    )
    hook.register_module(model)
    for step in range(25):
        model(torch.ones(1, 2))
        hook.save_scalar("acc", float(step))
    hook.close()
    (events,) = (tmp_path / "run" / "tensorboard" / "GLOBAL").iterdir()
    acc = EventAccumulator(str(events), size_guidance={"scalars": 0})
    acc.Reload()
    assert [(e.step, e.value) for e in acc.Scalars("scalar/acc")] == [(s, float(s)) for s in range(25)]
    trial = create_trial(str(tmp_path / "run"))
    assert {s: float(v[0]) for s, v in trial.tensor("scalar/acc").values().items()} == {0: 0, 10: 10, 20: 20, 24: 24}
    for index in (tmp_path / "run" / "index").rglob("*.json"):
        names = [r["tensorname"] for r in json.loads(index.read_text())["tensor_payload"]]
        assert names == ["scalar/acc"], (index.name, names)
