"""When the PyTorch hook saves (SaveConfig per hook, per mode, per collection) and which layer
tensors it saves (include_regex, include_collections, save_all, modules called twice)."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn as nn
from ptutil import GRADS, LOSS, PARAMS, WEIGHTS, Net, Twice, make_hook, mlp, run, snap, train

import smdebug.pytorch as smd
from smdebug.core.modes import ModeKeys
from smdebug.trials import create_trial

ALL = ["weights", "biases", "gradients", "losses"]


def _steps(tmp_path, schedule, save_config, **kw):
    trial, recs, _, _ = train(
        tmp_path / "t", schedule, hook_kwargs={"save_config": save_config, "include_collections": ALL, **kw}
    )
    return trial, recs


def test_save_interval(tmp_path):
    trial, recs = _steps(tmp_path, "T" * 8, smd.SaveConfig(save_interval=3))
    assert trial.steps() == [0, 3, 6]
    for s in (0, 3, 6):
        np.testing.assert_array_equal(
            trial.tensor("Sequential_0.weight").value(s), recs[s].params["Sequential_0.weight"]
        )
        np.testing.assert_array_equal(trial.tensor(LOSS).value(s), recs[s].loss)


def test_default_save_interval_is_500(tmp_path):
    trial, _ = _steps(tmp_path, "T" * 5, None)
    assert trial.steps() == [0]


def test_save_steps(tmp_path):
    trial, _ = _steps(tmp_path, "T" * 6, smd.SaveConfig(save_steps=[1, 4]))
    assert trial.steps() == [0, 1, 4]  # step 0 too: 0 % 500 == 0
    trial2, _ = train(
        tmp_path / "u",
        "T" * 6,
        hook_kwargs={"save_config": smd.SaveConfig(save_interval=100, start_step=1, save_steps=[1, 4])},
    )[:2]
    assert trial2.steps() == [1, 4]


def test_start_and_end_step(tmp_path):
    trial, _ = _steps(tmp_path, "T" * 8, smd.SaveConfig(save_interval=1, start_step=2, end_step=5))
    assert trial.steps() == [2, 3, 4]
    trial2, _ = train(
        tmp_path / "u", "T" * 9, hook_kwargs={"save_config": smd.SaveConfig(save_interval=2, start_step=3)}
    )[:2]
    assert trial2.steps() == [4, 6, 8]


def test_save_config_decisions_use_mode_steps(tmp_path):
    # TRAIN mode steps 0..3 at global 0,1,2,3,6,7 ...: interval 2 saves TRAIN 0,2,4 -> global 0,2,6
    trial, _ = _steps(tmp_path, "TTTEETT", smd.SaveConfig(save_interval=2))
    assert trial.steps(mode=ModeKeys.TRAIN) == [0, 2, 4]
    assert trial.steps(mode=ModeKeys.EVAL) == [0]
    assert trial.steps() == [0, 2, 3, 6]


def test_per_mode_save_configs(tmp_path):
    sc = smd.SaveConfig(
        mode_save_configs={
            smd.modes.TRAIN: smd.SaveConfigMode(save_interval=2),
            smd.modes.EVAL: smd.SaveConfigMode(save_interval=1),
        }
    )
    trial, recs = _steps(tmp_path, "TTTTEEETTTT", sc)
    assert trial.steps(mode=ModeKeys.TRAIN) == [0, 2, 4, 6]
    assert trial.steps(mode=ModeKeys.EVAL) == [0, 1, 2]
    assert trial.steps() == [0, 2, 4, 5, 6, 7, 9]
    assert trial.tensor("gradient/Sequential_0.weight").steps() == [0, 2, 7, 9]
    np.testing.assert_array_equal(
        trial.tensor("gradient/Sequential_0.weight").value(6, mode=ModeKeys.TRAIN),
        recs[9].grads["gradient/Sequential_0.weight"],
    )


def test_eval_and_predict_never_save_gradients(tmp_path):
    # even when the user runs backward in EVAL mode
    trial, recs, _, _ = train(
        tmp_path / "t",
        "TEEP",
        hook_kwargs={"save_config": smd.SaveConfig(save_interval=1), "include_collections": ALL},
        eval_backward=True,
    )
    assert recs[1].grads  # backward did run in EVAL
    assert trial.steps() == [0, 1, 2, 3]
    assert trial.tensor_names(mode=ModeKeys.EVAL) == sorted([*PARAMS, LOSS])
    assert trial.tensor_names(step=3) == PARAMS
    for g in GRADS:
        assert trial.tensor(g).steps() == [0]


def test_per_collection_save_config(tmp_path):
    model, loss_fn = mlp(), nn.CrossEntropyLoss()
    hook = make_hook(
        tmp_path / "t", model, loss_fn, save_config=smd.SaveConfig(save_interval=1), include_collections=ALL
    )
    hook.get_collection("gradients").save_config = smd.SaveConfig(save_interval=2)
    hook.get_collection("weights").save_config = {smd.modes.TRAIN: smd.SaveConfigMode(save_interval=3)}
    run(hook, model, "TTTTTTEE", loss_fn=loss_fn)
    hook.close()
    trial = create_trial(str(tmp_path / "t"))
    assert trial.steps() == list(range(8))
    assert trial.tensor("gradient/Sequential_0.weight").steps() == [0, 2, 4]
    assert trial.tensor("Sequential_0.weight").steps() == [0, 3, 6, 7]  # EVAL falls back to the hook's config
    assert trial.tensor("Sequential_0.bias").steps() == list(range(8))
    assert trial.tensor(LOSS).steps() == list(range(8))
    colls = trial.collections()
    assert colls["gradients"].save_config.mode_save_configs[ModeKeys.TRAIN].save_interval == 2
    assert colls["weights"].save_config.mode_save_configs[ModeKeys.TRAIN].save_interval == 3
    assert colls["weights"].save_config.mode_save_configs[ModeKeys.EVAL].save_interval == 1


def test_include_regex_saves_matching_layer_inputs_and_outputs(tmp_path):
    model, loss_fn = Net(), nn.CrossEntropyLoss()
    hook = make_hook(
        tmp_path / "t", model, loss_fn, save_config=smd.SaveConfig(save_interval=1), include_regex=["relu"]
    )
    x = torch.randn(4, 8)
    hidden, out = [], []
    model.fc1.register_forward_hook(lambda m, i, o: hidden.append(snap(o)))
    model.relu.register_forward_hook(lambda m, i, o: out.append(snap(o)))
    for _ in range(2):
        model.zero_grad()
        loss_fn(model(x), torch.tensor([0, 1, 2, 0])).backward()
    hook.close()
    trial = create_trial(str(tmp_path / "t"))
    assert trial.tensor_names() == [LOSS, "relu_input_0", "relu_output_0"]
    assert trial.tensor_names(collection="default") == ["relu_input_0", "relu_output_0"]
    for s in (0, 1):
        np.testing.assert_array_equal(trial.tensor("relu_input_0").value(s), hidden[s])
        np.testing.assert_array_equal(trial.tensor("relu_output_0").value(s), out[s])
        assert (trial.tensor("relu_output_0").value(s) >= 0).all()


def test_include_regex_on_a_sequential_uses_module_paths(tmp_path):
    model = mlp()
    outs = []
    model[1].register_forward_hook(lambda m, i, o: outs.append(snap(o)))
    trial, _, _, _ = train(
        tmp_path / "t",
        "TT",
        model=model,
        hook_kwargs={"save_config": smd.SaveConfig(save_interval=1), "include_regex": [r"^1_output"]},
    )
    assert trial.tensor_names() == ["1_output_0", LOSS]
    for s in (0, 1):
        np.testing.assert_array_equal(trial.tensor("1_output_0").value(s), outs[s])


def test_include_collections_limits_what_is_saved(tmp_path):
    trial, _, _, _ = train(
        tmp_path / "t",
        "TT",
        hook_kwargs={"save_config": smd.SaveConfig(save_interval=1), "include_collections": ["weights"]},
    )
    # losses are always included by the PyTorch hook
    assert trial.tensor_names() == [LOSS, *WEIGHTS]
    trial2, _, _, _ = train(
        tmp_path / "u",
        "TT",
        hook_kwargs={"save_config": smd.SaveConfig(save_interval=1), "include_collections": ["gradients"]},
    )
    assert trial2.tensor_names() == [LOSS, *GRADS]


def test_custom_collection_by_regex(tmp_path):
    model, loss_fn = mlp(), nn.CrossEntropyLoss()
    hook = make_hook(
        tmp_path / "t", model, loss_fn, save_config=smd.SaveConfig(save_interval=1), include_collections=["last_layer"]
    )
    hook.get_collection("last_layer").include(r"Sequential_2\.")
    run(hook, model, "TT", loss_fn=loss_fn)
    hook.close()
    trial = create_trial(str(tmp_path / "t"))
    assert trial.tensor_names(collection="last_layer") == [
        "Sequential_2.bias",
        "Sequential_2.weight",
        "gradient/Sequential_2.bias",
        "gradient/Sequential_2.weight",
    ]
    assert trial.tensor_names() == sorted(
        [LOSS, "Sequential_2.bias", "Sequential_2.weight", "gradient/Sequential_2.bias", "gradient/Sequential_2.weight"]
    )


def test_save_all(tmp_path):
    trial, recs, _, _ = train(
        tmp_path / "t", "TTE", hook_kwargs={"save_config": smd.SaveConfig(save_interval=1), "save_all": True}
    )
    layers = [
        "0_input_0",
        "0_output_0",
        "1_input_0",
        "1_output_0",
        "2_input_0",
        "2_output_0",
        "Sequential_input_0",
        "Sequential_output_0",
    ]
    loss_io = ["CrossEntropyLoss_input_0", "CrossEntropyLoss_input_1", LOSS]
    assert trial.tensor_names() == sorted([*layers, *loss_io, *PARAMS, *GRADS])
    assert trial.tensor_names(collection="all") == sorted([*layers, *loss_io, *PARAMS, *GRADS])
    assert trial.tensor_names(mode=ModeKeys.EVAL) == sorted([*layers, *loss_io, *PARAMS])
    for s, rec in enumerate(recs):
        np.testing.assert_array_equal(trial.tensor("Sequential_output_0").value(s), rec.output)
        np.testing.assert_array_equal(trial.tensor("2_output_0").value(s), rec.output)
        np.testing.assert_array_equal(trial.tensor("CrossEntropyLoss_input_0").value(s), rec.output)
    labels = trial.tensor("CrossEntropyLoss_input_1").value(0)
    assert labels.dtype == np.int64 and labels.shape == (8,)


def test_module_called_twice_gives_indexed_outputs_and_accumulated_gradient(tmp_path):
    torch.manual_seed(3)
    model, loss_fn = Twice(), nn.CrossEntropyLoss()
    hook = make_hook(
        tmp_path / "t",
        model,
        loss_fn,
        save_config=smd.SaveConfig(save_interval=1),
        include_regex=[r"^fc_"],
        include_collections=["gradients"],
    )
    calls = []
    model.fc.register_forward_hook(lambda m, i, o: calls.append((snap(i[0]), snap(o))))
    x, y = torch.randn(4, 8), torch.tensor([0, 1, 2, 0])
    grads = []
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(2):
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        grads.append(snap(model.fc.weight.grad))
        opt.step()
    hook.close()
    trial = create_trial(str(tmp_path / "t"))
    assert trial.tensor_names(regex="^fc_") == ["fc_input_0", "fc_input_1", "fc_output_0", "fc_output_1"]
    assert len(calls) == 4
    for s in (0, 1):
        first, second = calls[2 * s], calls[2 * s + 1]
        np.testing.assert_array_equal(trial.tensor("fc_input_0").value(s), first[0])
        np.testing.assert_array_equal(trial.tensor("fc_output_0").value(s), first[1])
        np.testing.assert_array_equal(trial.tensor("fc_input_1").value(s), second[0])
        np.testing.assert_array_equal(trial.tensor("fc_output_1").value(s), second[1])
        # one gradient per step: the sum of both uses
        np.testing.assert_array_equal(trial.tensor("gradient/Twice_fc.weight").value(s), grads[s])
    assert trial.tensor("gradient/Twice_fc.weight").steps() == [0, 1]


def test_a_module_whose_first_call_saves_nothing_still_saves_its_second(tmp_path):
    """A layer's tensors that no collection saves are remembered as such (module_tensors), by
    number: the second call of a module, whose output a regex does save, is saved at every step,
    also after a step whose schedule saves nothing (the plans change, and back)."""
    torch.manual_seed(3)
    model, loss_fn = Twice(), nn.CrossEntropyLoss()
    hook = make_hook(
        tmp_path / "t",
        model,
        loss_fn,
        save_config=smd.SaveConfig(save_steps=[0, 1, 3, 4]),
        include_regex=[r"^fc_output_1$"],
    )
    outs = []
    model.fc.register_forward_hook(lambda m, i, o: outs.append(snap(o)))
    x = torch.randn(4, 8)
    for _ in range(5):
        model(x)
    hook.close()
    trial = create_trial(str(tmp_path / "t"))
    assert trial.tensor_names(regex="^fc_") == ["fc_output_1"]
    assert trial.tensor("fc_output_1").steps() == [0, 1, 3, 4]
    for s in (0, 1, 3, 4):
        np.testing.assert_array_equal(trial.tensor("fc_output_1").value(s), outs[2 * s + 1])


def test_modes_missing_from_the_hooks_save_config_use_the_default_schedule(tmp_path):
    """SaveConfig(mode_save_configs=...) leaves other modes unset: they get SaveConfigMode()'s
    defaults (save_interval 500), as for a collection's save_config, instead of failing."""
    sc = smd.SaveConfig(mode_save_configs={smd.modes.TRAIN: smd.SaveConfigMode(save_interval=2)})
    trial, _, hook, _ = train(
        tmp_path / "t", "TTEEEP", hook_kwargs={"save_config": sc, "include_collections": ["weights"]}
    )
    assert not hook.disabled
    assert [(trial.mode(s).name, trial.mode_step(s)) for s in trial.steps()] == [
        ("TRAIN", 0),
        ("EVAL", 0),
        ("PREDICT", 0),
    ]
    assert trial.steps() == [0, 2, 5]
