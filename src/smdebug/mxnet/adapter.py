"""MXNet NDArrays for the hook.

MXNet's frontend must be used from one thread only (its maintainers: "MXNet does not support
multithreaded interaction with its frontend APIs", apache/mxnet#12923), so nothing here runs on
the hook's writer thread: everything MXNet does happens on the training thread.

MXNet's engine is asynchronous and orders every operation by the arrays it reads and writes, so
the engine itself is the deferred copier: ``snapshot`` pushes a copy (``NDArray.copy``, which the
engine runs before any later in-place update of the array, e.g. the optimizer's) and reductions
push MXNet's own reduction ops; neither waits. ``sync`` (training thread, before a step is handed
to the writer: at the next step, a mode change, close) waits for them and turns them into numpy
arrays; the writer thread's ``materialize`` then only hands those arrays on.
"""

from __future__ import annotations

import threading

import numpy as np
from mxnet import nd

from smdebug.core.tensors.adapter import NumpyAdapter
from smdebug.exceptions import SMDebugRuntimeError, SMDebugValueError

__all__ = ["MXNetAdapter", "Pending", "mxnet_reduction"]


def _variance(t):
    return nd.moments(t.reshape(-1), axes=(0,))[1]


_OPS = {
    "min": nd.min,
    "max": nd.max,
    "mean": nd.mean,
    "sum": nd.sum,
    "prod": nd.prod,
    "variance": _variance,
    "std": lambda t: nd.sqrt(_variance(t)),
    "l1": lambda t: nd.norm(t, ord=1),
    "l2": lambda t: nd.norm(t, ord=2),
}


def mxnet_reduction(t, op: str, is_abs: bool = False):
    """A reduction of NDArray ``t`` over all its elements by MXNet's own ops (pushed, not waited
    for): an NDArray of shape (1,), as MXNet returns it."""
    fn = _OPS.get(op)
    if fn is None:
        raise SMDebugValueError(f"Invalid reduction {op!r}: expected one of {', '.join(_OPS)}")
    if np.dtype(t.dtype) not in (np.float32, np.float64):  # integers, bool and float16 widened
        t = t.astype("float32")
    return fn(nd.abs(t) if is_abs else t)


class Pending:
    """An NDArray pushed to MXNet's engine, to become a numpy array at the next ``sync``."""

    __slots__ = ("array", "value", "thread")

    def __init__(self, array):
        self.array = array
        self.value: np.ndarray | None = None
        self.thread = threading.get_ident()

    def resolve(self) -> np.ndarray:
        if self.value is None:
            if threading.get_ident() != self.thread:
                raise SMDebugRuntimeError("an MXNet value reached the writer thread before sync() copied it")
            self.value, self.array = self.array.asnumpy(), None
        return self.value


class MXNetAdapter(NumpyAdapter):
    """:class:`smdebug.core.tensors.adapter.TensorAdapter` for mx.nd.NDArray (numbers and numpy arrays go
    to :class:`NumpyAdapter`)."""

    def __init__(self):
        self._pending: list[Pending] = []

    def _push(self, array) -> Pending:
        p = Pending(array)
        self._pending.append(p)
        return p

    # ---------------------------------------------------------------- training thread
    def snapshot(self, value):
        if not isinstance(value, nd.NDArray):
            return super().snapshot(value)
        return self._push(value.copy())

    def reductions(self, value, snap, ops) -> list:
        if not isinstance(value, nd.NDArray):
            return super().reductions(value, snap, ops)
        return [self._push(mxnet_reduction(value, op, is_abs)) for op, is_abs in ops]

    def shape(self, value) -> tuple:
        return tuple(value.shape) if isinstance(value, nd.NDArray) else super().shape(value)

    def size(self, value) -> int:
        return int(value.size) if isinstance(value, nd.NDArray) else super().size(value)

    def is_bool(self, value) -> bool:
        if isinstance(value, nd.NDArray):
            return np.dtype(value.dtype) == np.bool_
        return super().is_bool(value)

    def sync(self) -> None:
        """Wait for every value pushed since the last sync and copy it to the host."""
        pending, self._pending = self._pending, []
        for p in pending:
            p.resolve()

    def shutdown(self) -> None:
        self._pending.clear()

    # ---------------------------------------------------------------- writer thread
    def materialize(self, objs: list, held: list | None = None) -> list:
        return [o.resolve() if isinstance(o, Pending) else np.asarray(o) for o in objs]
