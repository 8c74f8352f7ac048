"""TensorFlow tensors for the KerasHook: read in place, never copied on the training thread.

The hook hands TF tensors over as they are (a variable read with ``tf.convert_to_tensor``: no
copy; TF's variables are copy-on-write, so the tensor keeps the values of the step even when
the optimizer updates the variable afterwards). A TF tensor is immutable, so it is its own
snapshot: the writer thread's ``materialize`` reads its memory through the buffer protocol
(``memoryview``, no copy) and encodes from there. Reductions read it the same way, at once, on
the training thread, with numpy as for numpy arrays. (Before, each saved tensor was copied twice
on the training thread: ``.numpy()``, then the snapshot's copy.)
Everything else (numbers, numpy arrays, logs) goes to
:class:`~smdebug.core.tensors.adapter.NumpyAdapter`.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from smdebug.core.tensors.adapter import NumpyAdapter

__all__ = ["KerasAdapter", "host_view"]


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
        if snap is None and isinstance(value, tf.Tensor):
            snap = host_view(value)
        return super().reductions(value, snap, ops)

    def shape(self, value) -> tuple:
        return tuple(value.shape) if isinstance(value, tf.Tensor) else super().shape(value)

    def size(self, value) -> int:
        return int(value.shape.num_elements()) if isinstance(value, tf.Tensor) else super().size(value)

    def is_bool(self, value) -> bool:
        if isinstance(value, tf.Tensor):
            return value.dtype in (tf.bool, tf.string)
        return super().is_bool(value)

    def materialize(self, objs: list, held: list | None = None) -> list:
        return [host_view(o) if isinstance(o, tf.Tensor) else np.asarray(o) for o in objs]
