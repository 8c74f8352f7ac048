"""What the PyTorch hook saves: exact weights, gradients and losses, reductions, shapes, dtypes."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import torch
import torch.nn as nn
from ptutil import GRADS, LOSS, PARAMS, make_hook, mlp, run, scalar, snap, train

import smdebug.pytorch as smd
from smdebug.core.modes import ModeKeys
from smdebug.exceptions import TensorUnavailableForStep
from smdebug.trials import create_trial

ALL = ["weights", "biases", "gradients", "losses"]
EVERY = smd.SaveConfig(save_interval=1)
OPS = ["min", "max", "mean", "std", "variance", "sum", "prod"]
NORMS = ["l1", "l2"]


def test_weights_are_the_parameters_at_the_start_of_each_step(tmp_path):
    trial, recs, _, _ = train(tmp_path / "t", "TTTT", hook_kwargs={"save_config": EVERY, "include_collections": ALL})
    assert trial.steps() == [0, 1, 2, 3]
    for s, rec in enumerate(recs):
        for name in PARAMS:
            np.testing.assert_array_equal(trial.tensor(name).value(s), rec.params[name], err_msg=f"{name}@{s}")
        for name in GRADS:
            np.testing.assert_array_equal(trial.tensor(name).value(s), rec.grads[name], err_msg=f"{name}@{s}")
        np.testing.assert_array_equal(trial.tensor(LOSS).value(s), rec.loss)
    # the optimizer did change them: step 1's weights are not step 0's
    assert not np.array_equal(recs[0].params["Sequential_0.weight"], recs[1].params["Sequential_0.weight"])
    # the loss is a 0-d float32 tensor
    assert trial.tensor(LOSS).value(0).dtype == np.float32
    assert trial.tensor(LOSS).value(0).shape == ()
    assert trial.tensor("Sequential_0.weight").value(0).shape == (16, 8)


def test_values_in_eval_mode_are_the_current_parameters(tmp_path):
    trial, recs, _, _ = train(tmp_path / "t", "TTEE", hook_kwargs={"save_config": EVERY, "include_collections": ALL})
    w = trial.tensor("Sequential_2.weight")
    np.testing.assert_array_equal(w.value(0, mode=ModeKeys.EVAL), recs[2].params["Sequential_2.weight"])
    np.testing.assert_array_equal(w.value(1, mode=ModeKeys.EVAL), recs[3].params["Sequential_2.weight"])
    # no optimizer step in EVAL: both EVAL steps see the parameters after TRAIN step 1
    np.testing.assert_array_equal(w.value(0, mode=ModeKeys.EVAL), w.value(1, mode=ModeKeys.EVAL))
    np.testing.assert_array_equal(trial.tensor(LOSS).value(1, mode=ModeKeys.EVAL), recs[3].loss)


def _torch_reduction(t: torch.Tensor, op: str, ab: bool) -> float:
    t = t.float().abs() if ab else t.float()
    if op in NORMS:
        return float(torch.linalg.vector_norm(t.reshape(-1), ord=int(op[1])))
    fn = {
        "min": torch.min,
        "max": torch.max,
        "mean": torch.mean,
        "std": torch.std,
        "variance": torch.var,
        "sum": torch.sum,
        "prod": torch.prod,
    }[op]
    return float(fn(t))


def _close(got: float, want: float, t: torch.Tensor) -> bool:
    """Reductions are the framework's within float32 rounding (std and mean come from sums)."""
    scale = float(t.float().abs().max()) if t.numel() else 0.0
    return got == want or abs(got - want) <= 1e-5 * abs(want) + 1e-6 * scale


def test_reductions_without_raw_tensors(tmp_path):
    rc = smd.ReductionConfig(reductions=OPS, abs_reductions=OPS, norms=NORMS, abs_norms=NORMS, save_raw_tensor=False)
    trial, recs, _, _ = train(
        tmp_path / "t", "TTT", hook_kwargs={"save_config": EVERY, "include_collections": ALL, "reduction_config": rc}
    )
    assert trial.tensor_names() == sorted([*PARAMS, *GRADS, LOSS])
    expected_keys = {(op, ab) for op in OPS + NORMS for ab in (False, True)}
    for s, rec in enumerate(recs):
        for name in PARAMS + GRADS:
            t = trial.tensor(name)
            value = torch.from_numpy(rec.params[name] if name in rec.params else rec.grads[name])
            assert set(t.reduction_values(s)) == expected_keys, name
            for op, ab in expected_keys:
                got, want = scalar(t.reduction_value(s, op, abs=ab)), _torch_reduction(value, op, ab)
                assert _close(got, want, value), (name, s, op, ab, got, want)
            with pytest.raises(TensorUnavailableForStep):
                t.value(s)
        # losses are never reduced: the raw value is there
        np.testing.assert_array_equal(trial.tensor(LOSS).value(s), rec.loss)
    # std and variance are torch's unbiased ones; l2 is the norm of the flattened matrix
    w0 = torch.from_numpy(recs[0].params["Sequential_0.weight"])
    t = trial.tensor("Sequential_0.weight")
    assert scalar(t.reduction_value(0, "std")) == pytest.approx(float(w0.double().std(unbiased=True)), rel=1e-5)
    assert scalar(t.reduction_value(0, "l2")) == pytest.approx(float(torch.sqrt((w0.double() ** 2).sum())), rel=1e-6)


def test_save_shape(tmp_path):
    rc = smd.ReductionConfig(reductions=["mean"], save_raw_tensor=False, save_shape=True)
    trial, recs, _, _ = train(
        tmp_path / "t", "TT", hook_kwargs={"save_config": EVERY, "include_collections": ALL, "reduction_config": rc}
    )
    for s in (0, 1):
        assert tuple(trial.tensor("Sequential_0.weight").shape(s)) == (16, 8)
        assert tuple(trial.tensor("gradient/Sequential_2.bias").shape(s)) == (3,)
        assert scalar(trial.tensor("Sequential_2.bias").reduction_value(s, "mean")) == float(
            torch.from_numpy(recs[s].params["Sequential_2.bias"]).mean()
        )
        with pytest.raises(TensorUnavailableForStep):
            trial.tensor("Sequential_0.weight").value(s)


def test_raw_tensor_shape_and_reductions_together(tmp_path):
    rc = smd.ReductionConfig(reductions=["max"], norms=["l1"], save_raw_tensor=True, save_shape=True)
    trial, recs, _, _ = train(
        tmp_path / "t",
        "T",
        hook_kwargs={"save_config": EVERY, "include_collections": ["weights"], "reduction_config": rc},
    )
    t = trial.tensor("Sequential_2.weight")
    np.testing.assert_array_equal(t.value(0), recs[0].params["Sequential_2.weight"])
    assert tuple(t.shape(0)) == (3, 16)
    w = torch.from_numpy(recs[0].params["Sequential_2.weight"])
    assert scalar(t.reduction_value(0, "max")) == float(w.max())
    assert scalar(t.reduction_value(0, "l1")) == pytest.approx(
        float(torch.linalg.vector_norm(w.reshape(-1), ord=1)), rel=1e-6
    )


def test_per_collection_reduction_config(tmp_path):
    model = mlp()
    loss_fn = nn.CrossEntropyLoss()
    hook = make_hook(tmp_path / "t", model, loss_fn, save_config=EVERY, include_collections=ALL)
    hook.get_collection("gradients").reduction_config = smd.ReductionConfig(norms=["l2"])
    recs = run(hook, model, "TT", loss_fn=loss_fn)
    hook.close()
    trial = create_trial(str(tmp_path / "t"))
    g = trial.tensor("gradient/Sequential_0.weight")
    with pytest.raises(TensorUnavailableForStep):
        g.value(1)
    assert set(g.reduction_values(1)) == {("l2", False)}
    expected = torch.linalg.vector_norm(torch.from_numpy(recs[1].grads["gradient/Sequential_0.weight"]).reshape(-1))
    # the moments kernel (numba, when another test has readied it) and torch sum in other orders
    assert scalar(g.reduction_value(1, "l2")) == pytest.approx(float(expected), rel=1e-6)
    np.testing.assert_array_equal(trial.tensor("Sequential_0.weight").value(1), recs[1].params["Sequential_0.weight"])


def test_frozen_parameters_are_saved_without_gradients(tmp_path):
    model = mlp()
    model[0].weight.requires_grad_(False)
    model[0].bias.requires_grad_(False)
    trial, recs, hook, _ = train(
        tmp_path / "t", "TTT", model=model, hook_kwargs={"save_config": EVERY, "include_collections": ALL}
    )
    assert not hook.disabled
    assert trial.tensor_names(collection="gradients") == ["gradient/Sequential_2.bias", "gradient/Sequential_2.weight"]
    assert trial.tensor_names(collection="weights") == ["Sequential_0.weight", "Sequential_2.weight"]
    for s, rec in enumerate(recs):
        np.testing.assert_array_equal(trial.tensor("Sequential_0.weight").value(s), rec.params["Sequential_0.weight"])
        np.testing.assert_array_equal(
            trial.tensor("gradient/Sequential_2.weight").value(s), rec.grads["gradient/Sequential_2.weight"]
        )
    # frozen: the same values at every step
    np.testing.assert_array_equal(
        trial.tensor("Sequential_0.weight").value(0), trial.tensor("Sequential_0.weight").value(2)
    )


@pytest.mark.parametrize(
    "dtype, np_dtype", [(torch.float16, np.dtype(np.float16)), (torch.bfloat16, np.dtype(ml_dtypes.bfloat16))]
)
def test_low_precision_models(tmp_path, dtype, np_dtype):
    rc = smd.ReductionConfig(reductions=["mean", "max"], norms=["l2"], save_raw_tensor=True)
    trial, recs, hook, model = train(
        tmp_path / "t",
        "TTE",
        model=mlp(dtype=dtype),
        hook_kwargs={"save_config": EVERY, "include_collections": ALL, "reduction_config": rc},
    )
    assert not hook.disabled
    assert trial.tensor_names() == sorted([*PARAMS, *GRADS, LOSS])
    for s, rec in enumerate(recs):
        for name, expected in [*rec.params.items(), *rec.grads.items(), (LOSS, rec.loss)]:
            got = trial.tensor(name).value(s)
            assert got.dtype == np_dtype, name
            assert expected.dtype == np_dtype
            assert got.shape == expected.shape
            np.testing.assert_array_equal(got.view(np.uint16), expected.view(np.uint16), err_msg=f"{name}@{s}")
        w = trial.tensor("Sequential_0.weight")
        expected = torch.from_numpy(rec.params["Sequential_0.weight"].astype(np.float32))
        assert scalar(w.reduction_value(s, "mean")) == float(expected.mean())
        assert scalar(w.reduction_value(s, "max")) == float(expected.max())
    assert model[0].weight.dtype == dtype  # the hook did not touch the model


def test_save_tensor_with_bool_and_int_values(tmp_path):
    model = mlp()
    loss_fn = nn.CrossEntropyLoss()
    hook = make_hook(tmp_path / "t", model, loss_fn, save_config=EVERY)
    x = torch.randn(4, 8)
    values = {
        "mask": torch.tensor([True, False, True]),
        "ids": torch.arange(6, dtype=torch.int64).reshape(2, 3),
        "small": torch.tensor([-3, 7], dtype=torch.int32),
        "bytes": torch.tensor([0, 255], dtype=torch.uint8),
        "f64": torch.tensor([1.0 / 3], dtype=torch.float64),
    }
    for step in range(2):
        out = model(x)
        for name, v in values.items():
            hook.save_tensor(name, v + step if v.dtype != torch.bool else v ^ bool(step), "custom")
        loss_fn(out, torch.tensor([0, 1, 2, 0]))
    hook.close()
    trial = create_trial(str(tmp_path / "t"))
    assert trial.tensor_names(collection="custom") == sorted(values)
    for step in range(2):
        for name, v in values.items():
            expected = (v + step if v.dtype != torch.bool else v ^ bool(step)).numpy()
            got = trial.tensor(name).value(step)
            assert got.dtype == expected.dtype, name
            np.testing.assert_array_equal(got, expected)


def test_save_tensor_before_the_first_step_lands_in_step_0(tmp_path):
    model = mlp()
    hook = make_hook(tmp_path / "t", model, None, save_config=EVERY)
    hook.save_tensor("early", torch.tensor([1, 2, 3]), "custom")
    model(torch.randn(2, 8))
    model(torch.randn(2, 8))
    hook.close()
    trial = create_trial(str(tmp_path / "t"))
    assert trial.tensor("early").steps() == [0]
    np.testing.assert_array_equal(trial.tensor("early").value(0), np.array([1, 2, 3]))


def test_snap_is_exact():
    t = torch.tensor([1.5, -2.25], dtype=torch.bfloat16)
    assert snap(t).dtype == np.dtype(ml_dtypes.bfloat16)
    assert snap(t).astype(np.float32).tolist() == [1.5, -2.25]


def test_gradients_are_the_accumulated_param_grad(tmp_path):
    """Without zero_grad (gradient accumulation over steps) and with two backward passes in one
    step, the saved gradient is param.grad after the step's backward."""
    model, loss_fn = mlp(), nn.CrossEntropyLoss()
    hook = make_hook(tmp_path / "t", model, loss_fn, save_config=EVERY, include_collections=["gradients"])
    x, y = torch.randn(8, 8), torch.randint(0, 3, (8,))
    grads = []
    loss_fn(model(x[:4]), y[:4]).backward()  # step 0
    grads.append(snap(model[0].weight.grad))
    loss_fn(model(x[4:]), y[4:]).backward()  # step 1: accumulates onto step 0's gradient
    grads.append(snap(model[0].weight.grad))
    loss = loss_fn(model(x), y)  # step 2: two backward passes
    loss.backward(retain_graph=True)
    loss.backward()
    grads.append(snap(model[0].weight.grad))
    hook.close()
    trial = create_trial(str(tmp_path / "t"))
    g = trial.tensor("gradient/Sequential_0.weight")
    assert g.steps() == [0, 1, 2]
    for s in range(3):
        np.testing.assert_array_equal(g.value(s), grads[s])
    assert not np.array_equal(grads[0], grads[1])
