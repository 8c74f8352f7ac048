"""The PyTorch hook never kills training; close() and the files it writes; dry runs."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest
import torch
import torch.nn as nn
from ptutil import GRADS, LOSS, PARAMS, WEIGHTS, data, make_hook, mlp, run, train

import smdebug.pytorch as smd
from smdebug.exceptions import SMDebugRuntimeError
from smdebug.trials import create_trial

ALL = ["weights", "biases", "gradients", "losses"]
EVERY = smd.SaveConfig(save_interval=1)


class Boom(RuntimeError):
    pass


def _fail_on_call(hook, n, only=None):
    """Make hook._save_for_tensor raise on its n-th call (counting names matching ``only``)."""
    real = hook._save_for_tensor
    calls = []

    def failing(name, value, *a, **k):
        if only is None or only(name):
            calls.append(name)
            if len(calls) == n:
                raise Boom(f"injected failure saving {name}")
        return real(name, value, *a, **k)

    hook._save_for_tensor = failing
    return calls


def _reference_params(schedule="TTTTT"):
    """The parameters after training without any hook."""
    model = mlp()
    run(_NoHook(), model, schedule)
    return {n: p.detach().clone() for n, p in model.named_parameters()}


class _NoHook:
    def set_mode(self, mode):
        pass


def _smdebug_errors(caplog):
    return [r for r in caplog.records if r.name.startswith("smdebug") and r.levelno >= logging.ERROR]


@pytest.mark.parametrize("only", [None, lambda n: n.startswith("gradient/")], ids=["forward", "backward"])
def test_a_failing_callback_disables_the_hook_and_training_goes_on(tmp_path, caplog, only):
    caplog.set_level(logging.INFO, logger="smdebug")
    model = mlp()
    loss_fn = nn.CrossEntropyLoss()
    hook = make_hook(tmp_path / "t", model, loss_fn, save_config=EVERY, include_collections=ALL)
    calls = _fail_on_call(hook, 3, only)
    recs = run(hook, model, "TTTTT", loss_fn=loss_fn)
    assert len(recs) == 5
    assert hook.disabled
    assert len(calls) == 3  # nothing was attempted after the failure
    errors = _smdebug_errors(caplog)
    assert len(errors) == 1, [r.getMessage() for r in errors]
    assert errors[0].exc_info is not None and isinstance(errors[0].exc_info[1], Boom)
    # training was not affected at all
    ref = _reference_params()
    for n, p in model.named_parameters():
        torch.testing.assert_close(p.detach(), ref[n], rtol=0, atol=0)
    hook.close()  # harmless
    hook.close()
    assert len(_smdebug_errors(caplog)) == 1


def test_close_after_a_failure_keeps_the_steps_already_saved(tmp_path):
    """A disabled hook still finishes its files on close(): the steps saved before the failure
    are written and the end-of-training marker tells readers that no more steps will come."""
    model, loss_fn = mlp(), nn.CrossEntropyLoss()
    out = tmp_path / "t"
    hook = make_hook(out, model, loss_fn, save_config=EVERY, include_collections=ALL)
    real = hook._save_for_tensor

    def fail_in_step_2(name, value, *a, **k):
        if hook.step == 2:
            raise Boom("injected failure in step 2")
        return real(name, value, *a, **k)

    hook._save_for_tensor = fail_in_step_2
    recs = run(hook, model, "TTTT", loss_fn=loss_fn)
    assert hook.disabled
    hook.close()
    assert (out / "training_job_end.ts").is_file()
    trial = create_trial(str(out))
    assert trial.steps()[:2] == [0, 1] and trial.steps()[-1] <= 2
    for s in (0, 1):
        np.testing.assert_array_equal(
            trial.tensor("Sequential_0.weight").value(s), recs[s].params["Sequential_0.weight"]
        )
        np.testing.assert_array_equal(trial.tensor(LOSS).value(s), recs[s].loss)


def test_a_failing_reduction_disables_the_hook_and_training_goes_on(tmp_path, caplog, monkeypatch):
    model = mlp()
    loss_fn = nn.CrossEntropyLoss()
    rc = smd.ReductionConfig(reductions=["mean"], save_raw_tensor=True)
    hook = make_hook(tmp_path / "t", model, loss_fn, save_config=EVERY, include_collections=ALL, reduction_config=rc)

    def bad_reductions(value, snap, ops):
        raise Boom(f"cannot reduce {ops}")

    monkeypatch.setattr(hook.adapter, "reductions", bad_reductions)
    recs = run(hook, model, "TTTT", loss_fn=loss_fn)
    assert len(recs) == 4
    assert hook.disabled
    assert len(_smdebug_errors(caplog)) == 1
    ref = _reference_params("TTTT")
    for n, p in model.named_parameters():
        torch.testing.assert_close(p.detach(), ref[n], rtol=0, atol=0)


def _break_mean(monkeypatch):
    """Make the torch 'mean' reduction fail where it runs (CPU tensors: the moments it comes from,
    by the numba kernel or torch's ops, on the copy thread; the writer thread, which waits for
    them, sees the error)."""
    from smdebug.core.tensors import moments_kernel
    from smdebug.pytorch import adapter

    def bad_mean(*_):
        raise Boom("mean failed")

    monkeypatch.setitem(adapter._OPS, "mean", bad_mean)
    monkeypatch.setattr(adapter.TorchOps, "moments", staticmethod(bad_mean))
    monkeypatch.setattr(moments_kernel, "kernel", lambda: bad_mean)


def test_a_reduction_failing_on_the_writer_thread_disables_the_hook(tmp_path, caplog, monkeypatch):
    _break_mean(monkeypatch)
    model = mlp()
    loss_fn = nn.CrossEntropyLoss()
    rc = smd.ReductionConfig(reductions=["mean"], save_raw_tensor=True)
    hook = make_hook(tmp_path / "t", model, loss_fn, save_config=EVERY, include_collections=ALL, reduction_config=rc)
    recs = run(hook, model, "TTTT", loss_fn=loss_fn)
    hook.close()
    assert len(recs) == 4
    ref = _reference_params("TTTT")
    for n, p in model.named_parameters():
        torch.testing.assert_close(p.detach(), ref[n], rtol=0, atol=0)
    errors = _smdebug_errors(caplog)
    assert len(errors) == 1, [r.getMessage() for r in errors]
    # the hook knows that it failed, as for an error on the training thread
    assert hook.disabled


def test_a_reduction_failing_on_the_writer_thread_propagates_when_asked(tmp_path, monkeypatch):
    _break_mean(monkeypatch)
    monkeypatch.setenv("SMDEBUG_PROPAGATE_ERRORS", "1")
    model = mlp()
    loss_fn = nn.CrossEntropyLoss()
    rc = smd.ReductionConfig(reductions=["mean"], save_raw_tensor=True)
    hook = make_hook(tmp_path / "t", model, loss_fn, save_config=EVERY, include_collections=ALL, reduction_config=rc)
    with pytest.raises(Boom):  # at a later step, or at the latest when the hook closes
        try:
            run(hook, model, "TTTT", loss_fn=loss_fn)
        finally:
            hook.close()  # closed whichever way: no hook is left for the interpreter's exit
    hook.close()  # a second close is a no-op, even after an error


def test_errors_propagate_with_the_environment_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("SMDEBUG_PROPAGATE_ERRORS", "1")
    model = mlp()
    hook = make_hook(tmp_path / "t", model, None, save_config=EVERY, include_collections=ALL)
    assert hook.propagate_errors
    _fail_on_call(hook, 3)
    x, _ = data()
    with pytest.raises(Boom):
        model(x)  # step 0's parameters are saved in the forward pre-hook: the 3rd one fails
    assert not hook.disabled


def test_close_after_an_error_propagated_from_forward(tmp_path, monkeypatch):
    monkeypatch.setenv("SMDEBUG_PROPAGATE_ERRORS", "1")
    model = mlp()
    hook = make_hook(tmp_path / "t", model, None, save_config=EVERY, include_collections=ALL)
    _fail_on_call(hook, 3)
    x, _ = data()
    with pytest.raises(Boom):
        model(x)
    hook.close()  # the trial ends; step 0 was cut short by the error (kept or not, never half-written)
    assert create_trial(str(tmp_path / "t")).steps() in ([], [0])


def test_errors_propagate_from_backward_with_propagate_errors(tmp_path):
    model = mlp()
    loss_fn = nn.CrossEntropyLoss()
    hook = make_hook(tmp_path / "t", model, loss_fn, save_config=EVERY, include_collections=ALL)
    assert not hook.propagate_errors
    hook.propagate_errors = True
    _fail_on_call(hook, 1, lambda n: n.startswith("gradient/"))
    x, y = data()
    loss = loss_fn(model(x), y)
    with pytest.raises(Boom):
        loss.backward()
    hook.close()


def test_close_writes_the_end_marker_and_the_collections_file(tmp_path):
    out = tmp_path / "t"
    trial, _, hook, model = train(out, "TT", hook_kwargs={"save_config": EVERY, "include_collections": ALL})
    assert (out / "training_job_end.ts").is_file()
    assert (out / "training_job_end.ts").stat().st_size == 0
    cfile = out / "collections" / "000000000" / "worker_0_collections.json"
    doc = json.loads(cfile.read_text())
    assert doc["_meta"]["num_workers"] == 1
    colls = doc["collections"]
    assert sorted(colls) == ["all", "biases", "default", "gradients", "losses", "weights"]
    assert colls["weights"]["tensor_names"] == WEIGHTS
    assert colls["gradients"]["tensor_names"] == GRADS
    assert colls["losses"]["tensor_names"] == [LOSS]
    assert colls["gradients"]["include_regex"] == ["^gradient"]
    assert colls["weights"]["save_config"]["TRAIN"] == {
        "save_interval": 1,
        "save_steps": [],
        "start_step": 0,
        "end_step": None,
    }
    assert colls["weights"]["reduction_config"] == {"save_raw_tensor": True, "reductions": "", "save_shape": False}
    # a second close is harmless; forward calls after close are not steps any more
    hook.close()
    model(torch.randn(2, 8))
    hook.close()
    assert create_trial(str(out)).steps() == [0, 1]
    assert sorted(p.name for p in out.iterdir()) == [
        "_smdebug",
        "collections",
        "events",
        "index",
        "training_job_end.ts",
    ]


def test_close_without_any_saved_step(tmp_path):
    out = tmp_path / "t"
    trial, _, _, _ = train(out, "TTT", hook_kwargs={"save_config": smd.SaveConfig(save_steps=[99], start_step=50)})
    assert (out / "training_job_end.ts").is_file()
    assert (out / "collections" / "000000000" / "worker_0_collections.json").is_file()
    assert trial.steps() == []


def test_a_hook_refuses_an_out_dir_with_a_finished_trial(tmp_path):
    out = tmp_path / "t"
    train(out, "T")
    with pytest.raises(SMDebugRuntimeError):
        smd.Hook(out_dir=str(out))


def test_dry_run_writes_nothing(tmp_path):
    out = tmp_path / "t"
    model = mlp()
    loss_fn = nn.CrossEntropyLoss()
    hook = make_hook(out, model, loss_fn, dry_run=True, save_config=EVERY, save_all=True)
    run(hook, model, "TTE", loss_fn=loss_fn)
    hook.save_scalar("lr", 0.1)
    hook.close()
    assert not hook.disabled
    assert not out.exists() or list(out.rglob("*")) == []
    # and the folder is still free for a real run
    trial, _, _, _ = train(out, "T", hook_kwargs={"save_config": EVERY})
    assert trial.steps() == [0]


def test_close_flushes_everything_before_returning(tmp_path):
    out = tmp_path / "t"
    trial, recs, _, _ = train(out, "T" * 20, hook_kwargs={"save_config": EVERY, "include_collections": ALL})
    assert trial.steps() == list(range(20))
    assert trial.tensor_names() == sorted([*PARAMS, *GRADS, LOSS])
    np.testing.assert_array_equal(trial.tensor("Sequential_0.weight").value(19), recs[19].params["Sequential_0.weight"])


def test_an_unfilled_collection_is_left_out_and_the_others_are_saved(tmp_path, caplog):
    """include_collections names a collection nothing fills: logged once at the first step, the
    other collections saved (it used to disable the hook: nothing saved)."""
    kw = {"save_config": smd.SaveConfig(save_interval=1), "include_collections": ["weightz", "gradients"]}
    with caplog.at_level(logging.ERROR, logger="smdebug"):
        trial, _, hook, _ = train(tmp_path / "t", "TTT", hook_kwargs=kw)
    assert not hook.disabled
    assert len(_smdebug_errors(caplog)) == 1 and "weightz" in caplog.text
    assert trial.steps() == [0, 1, 2]
    assert set(trial.tensor_names()) == {*GRADS, LOSS}  # losses: the framework always includes them


def test_an_unfilled_collection_raises_when_errors_propagate(tmp_path, monkeypatch):
    from smdebug.exceptions import InvalidCollectionConfiguration

    monkeypatch.setenv("SMDEBUG_PROPAGATE_ERRORS", "1")
    model = mlp()
    make_hook(tmp_path / "t", model, include_collections=["weightz", "gradients"])
    with pytest.raises(InvalidCollectionConfiguration, match="weightz"):
        model(torch.randn(2, 8))
