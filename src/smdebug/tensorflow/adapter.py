"""TensorFlow tensors for the KerasHook: read in place, never copied on the training thread.

The hook hands TF tensors over as they are (a variable read with ``tf.convert_to_tensor``: no
copy; TF's variables are copy-on-write, so the tensor keeps the values of the step even when
the optimizer updates the variable afterwards). A TF tensor is immutable, so it is its own
snapshot: the writer thread's ``materialize`` reads its memory through the buffer protocol
(``memoryview``, no copy) and encodes from there. Reductions are computed there too, from the
same read-only view: from its moments in one pass by the numba kernel where it is ready (numpy's
values within float rounding), else, and for what the moments cannot tell, numpy's own
(core.tensors.reductions.host_reductions).
(Before, each saved tensor was copied twice on the training thread, ``.numpy()`` and then the
snapshot's copy, and its reductions computed there.)
Everything else (numbers, numpy arrays, logs) goes to
:class:`~smdebug.core.tensors.adapter.NumpyAdapter`.
"""

from __future__ import annotations

from typing import Any

import keras
import numpy as np
import tensorflow as tf

from smdebug.core.tensors.adapter import NumpyAdapter
from smdebug.core.tensors.deferred import DeferredReduction, compute_together, deferred_reductions

__all__ = ["KerasAdapter", "host_view", "as_tensor", "numpy_of", "read_variable"]


def numpy_of(value: Any) -> np.ndarray:
    """``value`` as a numpy array (``.numpy()``, a copy, for TF tensors and variables)."""
    if hasattr(value, "numpy"):
        value = value.numpy()
    return np.asarray(value)


def as_tensor(value: Any) -> Any:
    """What the hook hands the adapter: a TF tensor as it is, a variable read as a tensor (no
    copy, see above), anything else as a numpy array."""
    if isinstance(value, tf.Tensor):
        return value
    if isinstance(value, keras.Variable):
        value = value.value  # the backend's tf.Variable (a tensor inside an autocast scope)
        if isinstance(value, tf.Tensor):
            return value
    if isinstance(value, tf.Variable):
        return read_variable(value)
    return numpy_of(value)


def read_variable(var: Any) -> tf.Tensor:
    """``var``'s value now, as a tensor that keeps it (no copy). A plain resource variable, in
    eager mode, is read with TF's ``ReadVariableOp`` itself: 9 us against 27 us through
    ``tf.convert_to_tensor`` (the hook reads every saved weight at every saved step). Distributed
    variables, and anything read while tracing, go through ``tf.convert_to_tensor``."""
    handle = getattr(var, "handle", None)
    if (
        getattr(handle, "dtype", None) == tf.resource
        and not isinstance(var, tf.distribute.DistributedValues)
        and tf.executing_eagerly()
    ):
        return tf.raw_ops.ReadVariableOp(resource=handle, dtype=var.dtype)
    return tf.convert_to_tensor(var)


def host_view(t: tf.Tensor) -> np.ndarray:
    """A read-only numpy view of a host tensor's memory, or ``t.numpy()`` (a copy) where the
    buffer protocol cannot describe its dtype (bfloat16, strings) or it is not on the host."""
    try:
        view = np.asarray(memoryview(t))
    except (TypeError, ValueError, BufferError):
        return np.asarray(t.numpy())
    if view.dtype != t.dtype.as_numpy_dtype or view.shape != tuple(t.shape):  # strings come out as bytes
        return np.asarray(t.numpy())
    return view


class KerasAdapter(NumpyAdapter):
    """:class:`smdebug.core.tensors.adapter.TensorAdapter` for TF tensors (see the module docstring)."""

    def snapshot(self, value):
        if isinstance(value, tf.Tensor):
            return value  # immutable: read by materialize, on the writer thread
        return super().snapshot(value)

    def reductions(self, value, snap, ops) -> list:
        if not isinstance(value, tf.Tensor):
            return super().reductions(value, snap, ops)
        return deferred_reductions(lambda: host_view(value), ops)

    def shape(self, value) -> tuple:
        return tuple(value.shape) if isinstance(value, tf.Tensor) else super().shape(value)

    def size(self, value) -> int:
        return int(value.shape.num_elements()) if isinstance(value, tf.Tensor) else super().size(value)

    def is_bool(self, value) -> bool:
        if isinstance(value, tf.Tensor):
            return value.dtype in (tf.bool, tf.string)
        return super().is_bool(value)

    def materialize(self, objs: list, held: list | None = None) -> list:
        compute_together(objs)  # the step's reductions: one reduce_moments per dtype
        return [
            host_view(o)
            if isinstance(o, tf.Tensor)
            else o.compute()
            if isinstance(o, DeferredReduction)
            else np.asarray(o)
            for o in objs
        ]
