"""Steps, modes and tensor names of the PyTorch hook; the active-hook slot."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn as nn
from ptutil import BIASES, GRADS, LOSS, PARAMS, WEIGHTS, make_hook, mlp, run, train

import smdebug.pytorch as smd
from smdebug.core.modes import ModeKeys
from smdebug.trials import create_trial

EVERY = {"save_config": smd.SaveConfig(save_interval=1)}
# the fixture recipe's schedule: 3 epochs of 4 TRAIN + 2 EVAL steps, then one PREDICT step
SCHEDULE = "TTTTEE" * 3 + "P"


def test_every_forward_call_is_a_step_and_modes_count_their_own_steps(tmp_path):
    kw = {**EVERY, "include_collections": ["weights"]}  # PREDICT steps have no loss: save weights too
    trial, recs, hook, _ = train(tmp_path / "t", SCHEDULE, hook_kwargs=kw)
    assert trial.steps() == list(range(19))
    assert trial.steps(mode=ModeKeys.TRAIN) == list(range(12))
    assert trial.steps(mode=ModeKeys.EVAL) == list(range(6))
    assert trial.steps(mode=ModeKeys.PREDICT) == [0]
    assert sorted(m.name for m in trial.modes()) == ["EVAL", "PREDICT", "TRAIN"]
    for g, rec in enumerate(recs):
        assert trial.mode(g) == rec.mode, g
        assert trial.mode_step(g) == rec.mode_step, g
        assert trial.global_step(rec.mode, rec.mode_step) == g
    # TRAIN steps 0..3 are global 0..3, EVAL 0..1 global 4..5, TRAIN 4 global 6 ...
    assert [trial.global_step(ModeKeys.TRAIN, s) for s in range(12)] == [0, 1, 2, 3, 6, 7, 8, 9, 12, 13, 14, 15]
    assert [trial.global_step(ModeKeys.EVAL, s) for s in range(6)] == [4, 5, 10, 11, 16, 17]
    assert trial.global_step(ModeKeys.PREDICT, 0) == 18
    # the hook's own counters after the run
    assert hook.step == 18
    assert hook.mode == ModeKeys.PREDICT
    assert hook.mode_steps[ModeKeys.TRAIN] == 11
    assert hook.mode_steps[ModeKeys.EVAL] == 5
    assert hook.mode_steps[ModeKeys.PREDICT] == 0
    # a tensor's steps per mode are mode steps
    w = trial.tensor("Sequential_0.weight")
    assert w.steps() == list(range(19))
    assert w.steps(mode=ModeKeys.EVAL) == list(range(6))
    np.testing.assert_array_equal(w.value(2, mode=ModeKeys.EVAL), recs[10].params["Sequential_0.weight"])


def test_mode_switches_without_forward_calls_do_not_make_steps(tmp_path):
    model, loss_fn = mlp(), nn.CrossEntropyLoss()
    hook = make_hook(tmp_path / "t", model, loss_fn, **EVERY)
    hook.set_mode(smd.modes.EVAL)
    hook.set_mode(smd.modes.TRAIN)
    run(hook, model, "TT", loss_fn=loss_fn)
    hook.set_mode(smd.modes.EVAL)
    hook.set_mode(smd.modes.TRAIN)
    run(hook, model, "T", loss_fn=loss_fn)
    hook.close()
    trial = create_trial(str(tmp_path / "t"))
    assert trial.steps() == [0, 1, 2]
    assert trial.steps(mode=ModeKeys.TRAIN) == [0, 1, 2]
    assert trial.steps(mode=ModeKeys.EVAL) == []


def test_without_set_mode_steps_are_global(tmp_path):
    trial, _, hook, _ = train(tmp_path / "t", "GGG", hook_kwargs={**EVERY, "include_collections": ["gradients"]})
    assert trial.steps() == [0, 1, 2]
    assert [trial.mode(s) for s in range(3)] == [ModeKeys.GLOBAL] * 3
    assert [trial.mode_step(s) for s in range(3)] == [0, 1, 2]
    assert hook.step == 2
    # GLOBAL mode is a training mode: gradients are saved
    assert trial.tensor_names(collection="gradients") == GRADS


def test_invalid_mode_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("SMDEBUG_PROPAGATE_ERRORS", "1")
    hook = make_hook(tmp_path / "t", mlp())
    with pytest.raises(ValueError):
        hook.set_mode("train")
    assert hook.mode == ModeKeys.GLOBAL


def test_tensor_names_and_collections(tmp_path):
    trial, _, _, _ = train(
        tmp_path / "t", "TTEE", hook_kwargs={**EVERY, "include_collections": ["weights", "biases", "gradients"]}
    )
    assert trial.tensor_names() == sorted([*PARAMS, *GRADS, LOSS])
    assert trial.tensor_names(collection="weights") == WEIGHTS
    assert trial.tensor_names(collection="biases") == BIASES
    assert trial.tensor_names(collection="gradients") == GRADS
    assert trial.tensor_names(collection="losses") == [LOSS]
    assert trial.tensor_names(mode=ModeKeys.EVAL) == sorted([*PARAMS, LOSS])
    assert trial.tensor_names(mode=ModeKeys.TRAIN) == sorted([*PARAMS, *GRADS, LOSS])
    assert sorted(trial.collections()) == ["all", "biases", "default", "gradients", "losses", "weights"]


def test_default_hook_saves_only_losses(tmp_path):
    trial, recs, _, _ = train(tmp_path / "t", "TTT", hook_kwargs=EVERY)
    assert trial.tensor_names() == [LOSS]
    for s, rec in enumerate(recs):
        np.testing.assert_array_equal(trial.tensor(LOSS).value(s), rec.loss)


def test_scalars_and_record_tensor_value(tmp_path):
    model = mlp()
    hook = make_hook(tmp_path / "t", model, None, **EVERY, include_collections=["losses"])
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(4, 8)
    target = torch.randn(4, 3)
    hook.set_mode(smd.modes.TRAIN)
    losses = []
    for i in range(3):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), target)
        hook.record_tensor_value("my_loss", loss)
        loss.backward()
        opt.step()
        hook.save_scalar("lr", 0.1 * (i + 1))
        losses.append(loss.detach().clone().numpy())
    hook.close()
    trial = create_trial(str(tmp_path / "t"))
    assert trial.tensor_names() == ["my_loss_output_0", "scalar/lr"]
    assert trial.tensor_names(collection="losses") == ["my_loss_output_0"]
    assert trial.tensor("my_loss_output_0").steps() == [0, 1, 2]
    for s in range(3):
        np.testing.assert_array_equal(trial.tensor("my_loss_output_0").value(s), losses[s])
        assert trial.tensor("scalar/lr").value(s).tolist() == [0.1 * (s + 1)]
    assert trial.tensor("scalar/lr").steps(mode=ModeKeys.TRAIN) == [0, 1, 2]


def test_record_tensor_value_twice_in_a_step_numbers_the_outputs(tmp_path):
    model = mlp()
    hook = make_hook(tmp_path / "t", model, None, **EVERY)
    a, b = torch.tensor(1.5), torch.tensor([2.0, 3.0])
    model(torch.randn(2, 8))
    hook.record_tensor_value("aux_loss", a)
    hook.record_tensor_value("aux_loss", b)
    hook.close()
    trial = create_trial(str(tmp_path / "t"))
    assert trial.tensor_names() == ["aux_loss_output_0", "aux_loss_output_1"]
    np.testing.assert_array_equal(trial.tensor("aux_loss_output_0").value(0), a.numpy())
    np.testing.assert_array_equal(trial.tensor("aux_loss_output_1").value(0), b.numpy())


def test_new_hook_becomes_the_active_one(tmp_path):
    smd.del_hook()
    assert smd.get_hook() is None
    h1 = smd.Hook(out_dir=str(tmp_path / "a"))
    assert smd.get_hook() is h1
    h2 = smd.Hook(out_dir=str(tmp_path / "b"))
    assert smd.get_hook() is h2
    smd.set_hook(h1)
    assert smd.get_hook() is h1
    smd.del_hook()
    assert smd.get_hook() is None
    assert smd.get_hook(create_if_not_exists=False) is None
    with pytest.raises(TypeError):
        smd.set_hook(object())


def test_step_before_a_mode_switch_keeps_its_own_mode(tmp_path):
    """The step that runs before set_mode() is written with the mode it ran in."""
    kw = {**EVERY, "include_collections": ["weights", "gradients"]}
    trial, recs, _, _ = train(tmp_path / "t", "TTEETT", hook_kwargs=kw)
    assert [(trial.mode(g).name, trial.mode_step(g)) for g in trial.steps()] == [
        ("TRAIN", 0),
        ("TRAIN", 1),
        ("EVAL", 0),
        ("EVAL", 1),
        ("TRAIN", 2),
        ("TRAIN", 3),
    ]
    # the gradients of TRAIN step 1 belong to TRAIN step 1, not to EVAL
    g = trial.tensor("gradient/Sequential_0.weight")
    assert g.steps() == [0, 1, 4, 5]
    assert g.steps(mode=ModeKeys.TRAIN) == [0, 1, 2, 3]
    assert g.steps(mode=ModeKeys.EVAL) == []
    np.testing.assert_array_equal(g.value(1, mode=ModeKeys.TRAIN), recs[1].grads["gradient/Sequential_0.weight"])


def test_calling_a_submodule_directly_is_not_a_step(tmp_path):
    model, loss_fn = mlp(), nn.CrossEntropyLoss()
    hook = make_hook(tmp_path / "t", model, loss_fn, **EVERY)
    run(hook, model, "TT", loss_fn=loss_fn)
    model[0](torch.randn(2, 8))
    model[2](torch.randn(2, 16))
    assert hook.step == 1
    assert hook.mode_steps[ModeKeys.TRAIN] == 1
    run(hook, model, "T", loss_fn=loss_fn)
    assert hook.step == 2
    hook.close()
    assert create_trial(str(tmp_path / "t")).steps() == [0, 1, 2]


def test_a_script_that_never_closes_the_hook_is_closed_at_exit(tmp_path):
    import subprocess
    import sys
    import textwrap

    out = tmp_path / "t"
    script = textwrap.dedent(f"""
        import torch, torch.nn as nn
        import smdebug.pytorch as smd
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
        hook = smd.Hook(out_dir={str(out)!r}, save_config=smd.SaveConfig(save_interval=1),
                        include_collections=["weights"])
        hook.register_module(model)
        for _ in range(5):
            model(torch.randn(4, 8))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert (out / "training_job_end.ts").is_file()
    trial = create_trial(str(out))
    assert trial.steps() == [0, 1, 2, 3, 4]
    assert trial.tensor_names() == WEIGHTS
