"""The Keras adapter's reads: a variable read for saving keeps the step's values when the
optimizer updates the variable afterwards (TF copies on write), whichever way it is read; the
writer thread's view of a tensor is its memory, and its reductions are numpy's (within float
rounding where the numba moments kernel takes the read-only view; to the bit without it)."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from smdebug.core.tensors import moments_kernel
from smdebug.core.tensors.reductions import get_numpy_reduction
from smdebug.tensorflow.adapter import KerasAdapter, as_tensor, host_view, read_variable


def _variables():
    rng = np.random.default_rng(0)
    return [
        keras.Variable(rng.standard_normal((64, 32)).astype("float32")),
        keras.Variable(rng.standard_normal(7).astype("float64")),
        tf.Variable(rng.standard_normal((5, 3)).astype("float32")),
        tf.Variable(np.arange(6, dtype=np.int32)),
    ]


@pytest.mark.parametrize("i", range(4))
def test_a_variable_read_keeps_its_values_after_an_update(i):
    var = _variables()[i]
    before = np.array(var.numpy(), copy=True)
    t = as_tensor(var)
    assert isinstance(t, tf.Tensor) and t.dtype == var.dtype and tuple(t.shape) == before.shape
    view = host_view(t)
    assert np.shares_memory(view, host_view(t))  # the tensor's memory, not a copy per look
    var.assign_add(tf.ones_like(var))  # what the optimizer does next
    np.testing.assert_array_equal(view, before)
    np.testing.assert_array_equal(host_view(t), before)
    assert not np.array_equal(var.numpy(), before)


def test_reads_inside_a_traced_function_go_through_convert_to_tensor():
    var = tf.Variable([1.0, 2.0])

    @tf.function
    def read():
        return read_variable(var) * 2

    np.testing.assert_array_equal(read().numpy(), [2.0, 4.0])


def test_a_mirrored_variable_is_read_as_tf_reads_it():
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    with strategy.scope():
        var = tf.Variable([3.0, 4.0])
    assert isinstance(var, tf.distribute.DistributedValues)
    np.testing.assert_array_equal(read_variable(var).numpy(), tf.convert_to_tensor(var).numpy())


@pytest.mark.parametrize("i", [0, 1])
def test_deferred_reductions_of_a_tensor_equal_numpys(monkeypatch, moments_by, i):
    kernel = moments_by == "numba kernel"
    calls = []
    host_moments = moments_kernel.host_moments
    monkeypatch.setattr(
        moments_kernel, "host_moments", lambda a, w, k: calls.append(a[0].flags.writeable) or host_moments(a, w, k)
    )
    var = _variables()[i]
    adapter = KerasAdapter()
    t = as_tensor(var)
    ops = [("min", False), ("max", False), ("mean", False), ("std", False), ("mean", True), ("l2", False)]
    objs = adapter.reductions(t, None, ops)
    got = adapter.materialize([adapter.snapshot(t), *objs])
    data = var.numpy()
    np.testing.assert_array_equal(got[0], data)
    assert calls == ([False] if kernel else [])  # the kernel reads the tensor's read-only view
    scale = float(np.abs(data).max())
    for (op, is_abs), g in zip(ops, got[1:]):
        want = np.asarray(get_numpy_reduction(op, data, is_abs))
        assert g.dtype == want.dtype and g.shape == want.shape, op
        if kernel:
            assert abs(float(g) - float(want)) <= 1e-5 * abs(float(want)) + 1e-6 * scale, op
        else:
            assert g.tobytes() == want.tobytes(), op
