"""The MXNet hook's surface: 1.0.34's signature, SageMaker's JSON, errors that never stop
training, stop requests, the active-hook slot."""

from __future__ import annotations

import inspect
import json
import logging

import numpy as np
import pytest
from mxskip import import_mxnet

mx = import_mxnet()

import runs  # noqa: E402

import smdebug.mxnet as smd  # noqa: E402
from smdebug.core.stop_request import write_stop_request  # noqa: E402
from smdebug.exceptions import SMDebugTypeError, TrainingStopRequested  # noqa: E402
from smdebug.trials import create_trial  # noqa: E402

EVERY = smd.SaveConfig(save_interval=1)


class Boom(RuntimeError):
    pass


def _final_params(net) -> dict:
    return {p.name: p.data().asnumpy() for p in net.collect_params().values()}


def test_signature_and_methods_are_1_0_34s():
    params = list(inspect.signature(smd.Hook).parameters)
    assert params == [
        "out_dir",
        "export_tensorboard",
        "tensorboard_dir",
        "dry_run",
        "reduction_config",
        "save_config",
        "include_regex",
        "include_collections",
        "save_all",
        "include_workers",
    ]
    for name in (
        "register_block",
        "register_hook",
        "register_loss",
        "save_scalar",
        "save_tensor",
        "set_mode",
        "create_from_json_file",
        "get_collection",
        "close",
    ):
        assert callable(getattr(smd.Hook, name)), name
    assert smd.Hook.register_hook is smd.Hook.register_block


def test_active_hook_slot(tmp_path, monkeypatch):
    monkeypatch.setenv("SMDEBUG_CONFIG_FILE_PATH", str(tmp_path / "none.json"))
    smd.del_hook()
    hook = smd.Hook(out_dir=str(tmp_path / "h"))
    assert smd.get_hook() is hook
    smd.del_hook()
    assert smd.get_hook() is None  # no config file
    smd.set_hook(hook)
    assert smd.get_hook() is hook
    smd.del_hook()
    hook.close()
    # as 1.0.34's MXNet get_hook: made from SageMaker's JSON when there is no active hook
    (tmp_path / "cfg.json").write_text(json.dumps({"LocalPath": str(tmp_path / "from_json")}))
    monkeypatch.setenv("SMDEBUG_CONFIG_FILE_PATH", str(tmp_path / "cfg.json"))
    made = smd.get_hook()
    assert isinstance(made, smd.Hook) and made.out_dir == str(tmp_path / "from_json")
    assert smd.get_hook(create_if_not_exists=False) is made
    smd.del_hook()
    made.close()


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
            {"CollectionName": "relu_output", "CollectionParameters": {"include_regex": ".*relu_output"}},
        ],
    }
    path = tmp_path / "debughookconfig.json"
    path.write_text(json.dumps(cfg))
    from_json = smd.Hook.create_from_json_file(str(path))
    assert isinstance(from_json, smd.Hook) and from_json.out_dir == str(tmp_path / "from_json")

    every = {m: smd.SaveConfigMode(save_interval=2) for m in smd.modes.ModeKeys}
    every[smd.modes.EVAL] = smd.SaveConfigMode(save_interval=1)
    kw = smd.Hook(
        out_dir=str(tmp_path / "from_kwargs"),
        save_config=smd.SaveConfig(mode_save_configs=every),
        include_collections=["weights", "gradients", "relu_output"],
    )
    kw.get_collection("gradients").reduction_config = smd.ReductionConfig(
        reductions=["mean"], norms=["l2"], save_raw_tensor=True
    )
    kw.get_collection("relu_output").include(".*relu_output")

    x, y = runs.digits(images=False)
    for hook in (from_json, kw):
        net, loss_fn = runs.mlp()
        runs.train(hook, net, loss_fn, x, y, "TTTEETT", batch=16)
        hook.close()
    a, b = create_trial(str(tmp_path / "from_json")), create_trial(str(tmp_path / "from_kwargs"))
    assert a.steps() == b.steps() == [0, 2, 3, 4, 6]
    assert a.tensor_names() == b.tensor_names()
    assert "hybridsequential0_dense0_relu_output_0" in a.tensor_names()
    assert "gradient/hybridsequential0_dense0_weight" in a.tensor_names(collection="gradients")
    for name in a.tensor_names():
        ta, tb = a.tensor(name), b.tensor(name)
        assert ta.steps() == tb.steps(), name
        for s in ta.steps():
            np.testing.assert_array_equal(ta.value(s), tb.value(s))
            if name.startswith("gradient/"):
                for op in ("mean", "l2"):
                    np.testing.assert_array_equal(ta.reduction_value(s, op), tb.reduction_value(s, op))


def _smdebug_errors(caplog):
    return [r for r in caplog.records if r.name.startswith("smdebug") and r.levelno >= logging.ERROR]


@pytest.mark.parametrize(
    "fail_on",
    ["hybridsequential0_dense1_output_0", "gradient/hybridsequential0_dense0_bias", "hybridsequential0_dense0_weight"],
)
def test_an_error_in_the_hook_never_stops_training(tmp_path, caplog, fail_on):
    caplog.set_level(logging.INFO, logger="smdebug")
    x, y = runs.digits(images=False)
    net, loss_fn = runs.mlp()
    runs.train(None, net, loss_fn, x, y, "TTTTE", batch=16)
    reference = _final_params(net)

    net, loss_fn = runs.mlp()
    hook = smd.Hook(out_dir=str(tmp_path / "t"), save_all=True, save_config=EVERY)
    real = hook._save_for_tensor

    def failing(name, value, *a, **k):
        if name == fail_on and hook.step == 2:
            raise Boom(f"injected failure saving {name}")
        return real(name, value, *a, **k)

    hook._save_for_tensor = failing
    rec = runs.train(hook, net, loss_fn, x, y, "TTTTE", batch=16)
    assert hook.disabled and len(rec.modes) == 5
    errors = _smdebug_errors(caplog)
    assert len(errors) == 1 and isinstance(errors[0].exc_info[1], Boom)
    for name, value in _final_params(net).items():  # training went on exactly as without the hook
        np.testing.assert_array_equal(value, reference[name])
    hook.close()
    t = create_trial(str(tmp_path / "t"))
    assert t.steps()[:2] == [0, 1] and t.steps()[-1] <= 2  # what was saved before the failure is kept
    for s in (0, 1):
        np.testing.assert_array_equal(
            t.tensor("hybridsequential0_dense0_weight").value(s), rec.params[s]["hybridsequential0_dense0_weight"]
        )


def test_registering_something_else_than_a_block_is_the_callers_error(tmp_path, caplog):
    """A wrong argument raises at once (it is not an error inside training); the hook goes on."""
    hook = smd.Hook(out_dir=str(tmp_path / "t"))
    with pytest.raises(SMDebugTypeError, match="register_block"):
        hook.register_block(object())
    assert not hook.disabled and not _smdebug_errors(caplog)
    hook.close()


def test_a_stop_request_raises_at_the_next_forward(tmp_path):
    net, loss_fn = runs.mlp()
    x, y = runs.digits(images=False)
    hook = smd.Hook(
        out_dir=str(tmp_path / "t"), include_collections=["weights", "gradients", "losses"], save_config=EVERY
    )
    hook.stop_watcher.interval = 0.0  # look at every step boundary

    def ask_to_stop(i):
        if i == 2:
            write_stop_request(hook.store, "DeadRelu", 2, "dead")

    rec = runs.Record()
    with pytest.raises(TrainingStopRequested) as ei:
        runs.train(hook, net, loss_fn, x, y, "T" * 6, batch=16, record=rec, step_fn=ask_to_stop)
    assert len(rec.modes) == 4 and (ei.value.rule_name, ei.value.step) == ("DeadRelu", 2)  # step 3's forward raised
    assert not hook.disabled
    t = create_trial(str(tmp_path / "t"))  # written before the request was raised, gradients of step 2 included
    assert t.steps() == [0, 1, 2]
    for s in range(3):
        np.testing.assert_array_equal(
            t.tensor("gradient/hybridsequential0_dense0_weight").value(s),
            rec.grads[s]["hybridsequential0_dense0_weight"],
        )
    runs.train(hook, net, loss_fn, x, y, "E", batch=16)  # raised once: the loop may go on
    hook.close()
    assert create_trial(str(tmp_path / "t")).steps() == [0, 1, 2, 3]  # the forward that raised was no step


def test_save_scalar_and_save_tensor(tmp_path):
    net, loss_fn = runs.mlp()
    x, y = runs.digits(images=False)
    hook = smd.Hook(out_dir=str(tmp_path / "t"), save_config=EVERY)

    def extras(i):
        hook.save_scalar("lr", 0.1 / (i + 1))
        hook.save_tensor("first_row", mx.nd.array(x[i]) * 2, "custom")

    runs.train(hook, net, loss_fn, x, y, "TTT", batch=16, step_fn=extras)
    hook.close()
    t = create_trial(str(tmp_path / "t"))
    assert "scalar/lr" in t.tensor_names() and "first_row" in t.tensor_names(collection="custom")
    for s in t.tensor("first_row").steps():
        np.testing.assert_array_equal(t.tensor("first_row").value(s), x[s] * 2)
