"""The MXNet hook on real Gluon models trained on digits: names as 1.0.34 writes them, steps per
mode, and values equal to what MXNet itself gives (param.data(), param.grad(), calling a block,
MXNet's reduction ops to float32 rounding)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from mxskip import import_mxnet

mx = import_mxnet()

import runs  # noqa: E402
import write_fixture  # noqa: E402
from mxnet import nd  # noqa: E402

import smdebug.mxnet as smd  # noqa: E402
from smdebug.trials import create_trial  # noqa: E402

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "names-1.0.34.json"
MODELS = {"mlp": (runs.mlp, False), "cnn": (runs.cnn, True)}


@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_names_steps_and_collections_equal_those_1_0_34_writes(tmp_path, model):
    """The fixture is what 1.0.34's own MXNet hook wrote for the same model and schedule
    (`make mxnet-fixture`): names, steps, collections, shapes, the collections file byte for byte
    as JSON. One difference, on purpose: 1.0.34 writes the last training step's
    gradients again at an EVAL step; ours saves no gradients in EVAL (none are computed there)."""
    theirs = json.loads(FIXTURE.read_text())[model]
    write_fixture.write_trial(tmp_path / model, model)
    ours = write_fixture.dump(tmp_path / model)
    eval_global = [4]
    for name, t in theirs["tensors"].items():
        if name.startswith("gradient/"):
            t["steps"] = [s for s in t["steps"] if s not in eval_global]
    assert ours == theirs
    assert ours["collections"]["losses"] == ["softmaxcrossentropyloss0_output_0"]
    assert "hybridsequential0_input_0" in ours["tensors"]


def _train_all(tmp_path, model="mlp", schedule="TTTE", hybridize=False, **hook_kw):
    build, images = MODELS[model]
    net, loss_fn = build()
    if hybridize:
        net.hybridize()
    x, y = runs.digits(images=images)
    hook = smd.Hook(
        out_dir=str(tmp_path / "trial"), save_all=True, save_config=smd.SaveConfig(save_interval=1), **hook_kw
    )
    rec = runs.train(hook, net, loss_fn, x, y, schedule, batch=16)
    hook.close()
    return net, loss_fn, rec, create_trial(str(tmp_path / "trial"))


def _set_params(net, values: dict):
    for p in net.collect_params().values():
        p.set_data(nd.array(values[p.name]))


@pytest.mark.parametrize("model", ["mlp", "cnn"])
def test_values_equal_what_mxnet_gives(tmp_path, model):
    net, loss_fn, rec, t = _train_all(tmp_path, model, "TTTE")
    assert t.steps() == [0, 1, 2, 3]
    assert t.steps(mode=smd.modes.TRAIN) == [0, 1, 2] and t.steps(mode=smd.modes.EVAL) == [0]
    params = sorted(rec.params[0])
    assert sorted(t.tensor_names(collection="weights") + t.tensor_names(collection="biases")) == params
    for step in t.steps():
        for name in params:  # the values this step's forward used
            np.testing.assert_array_equal(t.tensor(name).value(step), rec.params[step][name], err_msg=f"{name}@{step}")
        if rec.modes[step] == "T":  # what backward computed, as param.grad() gives it
            for name, g in rec.grads[step].items():
                np.testing.assert_array_equal(t.tensor("gradient/" + name).value(step), g, err_msg=f"{name}@{step}")
        else:
            assert not t.tensor_names(step=step, collection="gradients")
        np.testing.assert_array_equal(t.tensor("hybridsequential0_input_0").value(step), rec.batches[step])

    # block outputs equal calling the block on the saved input with that step's parameters
    # (the hook is closed: its handles are gone, calling blocks saves nothing)
    for step in t.steps():
        _set_params(net, rec.params[step])
        blocks = [net, loss_fn, *net._children.values()]
        for block in blocks:
            inputs = [
                nd.array(t.tensor(f"{block.name}_input_{i}").value(step)) for i in range(2 if block is loss_fn else 1)
            ]
            expected = block(*inputs).asnumpy()
            np.testing.assert_array_equal(
                t.tensor(f"{block.name}_output_0").value(step), expected, err_msg=f"{block.name}@{step}"
            )
        np.testing.assert_allclose(
            t.tensor("softmaxcrossentropyloss0_output_0").value(step).mean(), rec.loss[step], rtol=1e-6
        )


def test_reductions_equal_mxnet_ops(tmp_path):
    """The reductions are numpy's, of the host copy (MXNet's own ops cost 15-130x more CPU):
    min and max exactly MXNet's, the others within float32 rounding of them, in MXNet's shape
    (1,) and dtype."""
    rc = smd.ReductionConfig(
        reductions=["min", "max", "mean", "sum", "std", "variance"],
        abs_reductions=["mean", "max"],
        norms=["l1", "l2"],
        abs_norms=["l2"],
    )
    net, loss_fn = runs.mlp()
    x, y = runs.digits(images=False)
    hook = smd.Hook(
        out_dir=str(tmp_path / "r"),
        include_collections=["weights", "gradients"],
        reduction_config=rc,
        save_config=smd.SaveConfig(save_interval=1),
    )
    rec = runs.train(hook, net, loss_fn, x, y, "TT", batch=16)
    hook.close()
    t = create_trial(str(tmp_path / "r"))
    name = "hybridsequential0_dense0_weight"
    assert t.tensor(name).steps() == [0, 1]
    for step in (0, 1):
        for tname, value in ((name, rec.params[step][name]), ("gradient/" + name, rec.grads[step][name])):
            a = nd.array(value)
            tensor = t.tensor(tname)
            with pytest.raises(Exception):  # noqa: B017  only reductions were saved
                tensor.value(step)
            mx_ops = {
                ("min", False): nd.min(a),
                ("max", False): nd.max(a),
                ("mean", False): nd.mean(a),
                ("sum", False): nd.sum(a),
                ("l1", False): nd.norm(a, ord=1),
                ("l2", False): nd.norm(a, ord=2),
                ("mean", True): nd.mean(nd.abs(a)),
                ("max", True): nd.max(nd.abs(a)),
                ("l2", True): nd.norm(nd.abs(a), ord=2),
            }
            scale = float(np.abs(value).astype(np.float64).sum())  # float32 rounding of a sum is relative to this
            for (op, is_abs), expected in mx_ops.items():
                got = tensor.reduction_value(step, op, abs=is_abs)
                want = expected.asnumpy()
                assert got.shape == want.shape == (1,) and got.dtype == want.dtype == np.float32, (op, is_abs)
                msg = f"{op} abs={is_abs} {tname}@{step}"
                if op in ("min", "max"):
                    np.testing.assert_array_equal(got, want, err_msg=msg)
                else:
                    atol = 1e-6 * scale / (value.size if op == "mean" else 1)
                    np.testing.assert_allclose(got, want, rtol=1e-5, atol=atol, err_msg=msg)
            # MXNet 1.9 has no std / variance op: numpy's, of float64, within float32 rounding
            np.testing.assert_allclose(
                tensor.reduction_value(step, "variance"), np.var(value, dtype=np.float64), rtol=1e-5
            )
            np.testing.assert_allclose(tensor.reduction_value(step, "std"), np.std(value, dtype=np.float64), rtol=1e-5)


def test_reductions_of_integer_tensors_are_float32_as_mxnet_gives_them(tmp_path):
    hook = smd.Hook(
        out_dir=str(tmp_path / "r"), include_collections=["mine"], save_config=smd.SaveConfig(save_interval=1)
    )
    hook.get_collection("mine").reduction_config = smd.ReductionConfig(reductions=["max", "mean"], norms=["l2"])
    net, _ = runs.mlp()
    hook.register_block(net)
    x = nd.array(np.ones((2, 64), dtype=np.float32))
    net(x)
    hook.save_tensor("ints", nd.array(np.arange(6).reshape(2, 3), dtype="int32"), "mine")
    hook.close()
    t = create_trial(str(tmp_path / "r"))
    assert t.tensor("ints").steps() == [0]
    for op, want in (("max", 5.0), ("mean", 2.5), ("l2", np.sqrt(55.0))):
        got = t.tensor("ints").reduction_value(0, op)
        assert got.dtype == np.float32 and got.shape == (1,), op
        np.testing.assert_allclose(got, [want], rtol=1e-6, err_msg=op)


def test_hybridized_model_saves_its_own_io_parameters_gradients_and_loss(tmp_path):
    """A hybridized block runs as one graph: its sub-blocks' hooks do not fire (the first call
    passes Symbols while the graph is built; they are not tensors and are skipped)."""
    net, loss_fn, rec, t = _train_all(tmp_path, "mlp", "TTE", hybridize=True)
    names = set(t.tensor_names())
    params = set(rec.params[0])
    assert names == params | {"gradient/" + p for p in params} | {
        "hybridsequential0_input_0",
        "hybridsequential0_output_0",
        "softmaxcrossentropyloss0_input_0",
        "softmaxcrossentropyloss0_input_1",
        "softmaxcrossentropyloss0_output_0",
    }
    assert t.steps() == [0, 1, 2]
    for step in t.steps():
        for name in params:
            np.testing.assert_array_equal(t.tensor(name).value(step), rec.params[step][name])
        _set_params(net, rec.params[step])
        x = nd.array(t.tensor("hybridsequential0_input_0").value(step))
        np.testing.assert_allclose(t.tensor("hybridsequential0_output_0").value(step), net(x).asnumpy(), rtol=1e-6)
    for name, g in rec.grads[1].items():
        np.testing.assert_array_equal(t.tensor("gradient/" + name).value(1), g)


def test_default_hook_saves_losses_only_and_steps_count_forward_calls(tmp_path):
    net, loss_fn = runs.mlp()
    x, y = runs.digits(images=False)
    hook = smd.Hook(out_dir=str(tmp_path / "d"), save_config=smd.SaveConfig(save_interval=3))
    rec = runs.train(hook, net, loss_fn, x, y, "TTTTTTTE", batch=16)
    hook.close()
    t = create_trial(str(tmp_path / "d"))
    assert t.tensor_names() == ["softmaxcrossentropyloss0_output_0"]
    assert t.steps(mode=smd.modes.TRAIN) == [0, 3, 6] and t.steps(mode=smd.modes.EVAL) == [0]
    assert t.steps() == [0, 3, 6, 7]
    for step in t.steps():
        np.testing.assert_allclose(
            t.tensor("softmaxcrossentropyloss0_output_0").value(step).mean(), rec.loss[step], rtol=1e-6
        )


def test_inputs_and_outputs_collections(tmp_path):
    net, loss_fn = runs.mlp()
    x, y = runs.digits(images=False)
    hook = smd.Hook(
        out_dir=str(tmp_path / "io"),
        include_collections=["inputs", "outputs"],
        save_config=smd.SaveConfig(save_interval=1),
    )
    runs.train(hook, net, loss_fn, x, y, "TT", batch=16)
    hook.close()
    t = create_trial(str(tmp_path / "io"))
    blocks = [
        "hybridsequential0",
        "hybridsequential0_dense0",
        "hybridsequential0_dense0_relu",
        "hybridsequential0_dense1",
        "hybridsequential0_dense1_relu",
        "hybridsequential0_dense2",
    ]
    assert t.tensor_names(collection="inputs") == sorted(
        [f"{b}_input_0" for b in blocks] + ["softmaxcrossentropyloss0_input_0", "softmaxcrossentropyloss0_input_1"]
    )
    assert t.tensor_names(collection="outputs") == sorted(
        [f"{b}_output_0" for b in blocks] + ["softmaxcrossentropyloss0_output_0"]
    )


def test_wrong_arguments_raise_at_once(tmp_path, monkeypatch):
    """A wrong argument is the caller's error, whatever SMDEBUG_PROPAGATE_ERRORS says."""
    monkeypatch.setenv("SMDEBUG_PROPAGATE_ERRORS", "0")
    hook = smd.Hook(out_dir=str(tmp_path / "t"))
    with pytest.raises(TypeError, match="register_block: block must be an mxnet.gluon.Block"):
        hook.register_block("net")
    with pytest.raises(TypeError, match="register_loss"):
        hook.register_loss(None)
    with pytest.raises(ValueError, match="Invalid mode"):
        hook.set_mode("train")
    assert not hook.disabled
    hook.close()


def test_a_resumed_job_continues_the_step_numbers(tmp_path):
    """An interrupted job's steps in the folder (no end-of-training marker): a new hook goes on
    after them, in every mode, and writes none of them again."""
    from smdebug.core.locations import END_OF_JOB

    out = tmp_path / "t"
    net, loss_fn = runs.mlp()
    x, y = runs.digits(images=False)
    kw = {"save_config": smd.SaveConfig(save_interval=1), "include_collections": ["weights", "losses"]}
    first = smd.Hook(out_dir=str(out), **kw)
    rec1 = runs.train(first, net, loss_fn, x, y, schedule="TTE")
    first.close()
    (out / END_OF_JOB).unlink()
    second = smd.Hook(out_dir=str(out), **kw)
    rec2 = runs.train(second, net, loss_fn, x, y, schedule="TTE")
    second.close()
    tr = create_trial(str(out))
    assert tr.steps() == list(range(6))
    assert tr.steps(mode=smd.modes.TRAIN) == [0, 1, 2, 3] and tr.steps(mode=smd.modes.EVAL) == [0, 1]
    assert [tr.global_step(smd.modes.TRAIN, s) for s in range(4)] == [0, 1, 3, 4]
    name = tr.tensor_names(collection="weights")[0]
    for g in range(6):  # record: the values each step's forward used, both jobs' steps kept
        np.testing.assert_array_equal(tr.tensor(name).value(g), (rec1 if g < 3 else rec2).params[g % 3][name])


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32", "int64", "uint8", "bool"])
def test_host_view_of_a_copy_equals_asnumpy_and_outlives_the_array(dtype):
    """sync() reads the hook's engine copies through DLPack (no second copy); the view holds the
    copy's memory after the NDArray is gone, and dtypes DLPack does not carry fall back to a copy."""
    import gc

    from smdebug.mxnet.adapter import host_view

    src = nd.array(np.arange(24).reshape(2, 3, 4) % 7, dtype=dtype)
    want = src.asnumpy()
    copy = src.copy()
    view = host_view(copy)
    del copy
    gc.collect()
    src[:] = 0  # the live array changes; the copy's view does not
    nd.waitall()
    for _ in range(3):
        nd.ones((256, 256)).wait_to_read()  # storage freed by MXNet would be reused here
    assert view.dtype == want.dtype and view.shape == want.shape
    np.testing.assert_array_equal(view, want)
