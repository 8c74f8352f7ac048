"""The Keras adapter's reads: a variable read for saving keeps the step's values when the
optimizer updates the variable afterwards (TF copies on write), whichever way it is read; the
writer thread's view of a tensor is its memory, and its reductions are numpy's."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

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


def test_deferred_reductions_of_a_tensor_equal_numpys():
    var = _variables()[0]
    adapter = KerasAdapter()
    t = as_tensor(var)
    ops = [("min", False), ("max", False), ("mean", False), ("std", False), ("mean", True), ("l2", False)]
    objs = adapter.reductions(t, None, ops)
    got = adapter.materialize([adapter.snapshot(t), *objs])
    data = var.numpy()
    np.testing.assert_array_equal(got[0], data)
    for (op, is_abs), g in zip(ops, got[1:]):
        want = np.asarray(get_numpy_reduction(op, data, is_abs))
        assert g.dtype == want.dtype and g.tobytes() == want.tobytes(), op
