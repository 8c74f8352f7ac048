"""MXNet NDArrays for the hook.

MXNet's frontend must be used from one thread only (its maintainers: "MXNet does not support
multithreaded interaction with its frontend APIs", apache/mxnet#12923), so nothing here runs on
the hook's writer thread: everything MXNet does happens on the training thread.

MXNet's engine is asynchronous and orders every operation by the arrays it reads and writes, so
the engine itself is the deferred copier: ``snapshot`` pushes a copy (``NDArray.copy``, which the
engine runs before any later in-place update of the array, e.g. the optimizer's) and does not
wait. ``sync`` (training thread, before a step is handed to the writer: at the next step, a mode
change, close) waits for the copies and makes each a numpy array without copying it again: a
read-only view of the copy's memory through DLPack (``nd.to_dlpack_for_read``; the view keeps
the copy alive, and nothing writes to a copy). The writer thread's ``materialize`` then hands
those arrays on, and computes the reductions from them with numpy. (Before, ``asnumpy`` copied
every copy once more, into fresh numpy memory, on the training thread.)

Reductions are numpy's, of the host copy, not MXNet's reduction ops (1.0.34 used those): with
one CPU thread MXNet reduces a 512x512 float32 array in about 1 ms (``nd.moments``: 9 ms), numpy
in 0.02-0.07 ms. They agree with MXNet's ops to float32 rounding (min and max exactly), keep
MXNet's result shape (1,) and its widening of other dtypes to float32
(``tests/mxnet/test_mx_hook.py::test_reductions_equal_mxnet_ops``).
"""

from __future__ import annotations

import threading

import numpy as np
from mxnet import nd

from smdebug.core.tensors.adapter import NumpyAdapter
from smdebug.core.tensors.deferred import DeferredReduction, deferred_reductions
from smdebug.exceptions import SMDebugRuntimeError

__all__ = ["MXNetAdapter", "Pending", "host_view"]


def _widened(data: np.ndarray) -> np.ndarray:
    """``data`` as MXNet's reduction ops see it: other dtypes than float32/64 widened to float32."""
    return data if data.dtype in (np.float32, np.float64) else data.astype(np.float32)


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
            self.value, self.array = host_view(self.array), None
        return self.value


class _DLPack:
    """What ``np.from_dlpack`` takes: an object with ``__dlpack__``, for MXNet's capsule."""

    __slots__ = ("capsule",)

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, stream=None):
        return self.capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)  # kDLCPU


def host_view(array) -> np.ndarray:
    """A numpy view of NDArray ``array`` in main memory once the engine has written it (only for
    arrays nothing writes to any more: the hook's own copies); ``asnumpy()`` (a copy) for arrays
    on a GPU and for dtypes MXNet or numpy do not exchange through DLPack (bool)."""
    if array.context.device_type == "cpu" and np.dtype(array.dtype).kind in "fiu":  # MXNet exports no bool
        try:
            return np.from_dlpack(_DLPack(nd.to_dlpack_for_read(array)))
        except (TypeError, ValueError, BufferError, RuntimeError):
            pass  # a dtype numpy's DLPack import rejects: copied below
    return array.asnumpy()


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

    def reductions_need_snapshot(self, value) -> bool:
        return isinstance(value, nd.NDArray)

    def reductions(self, value, snap, ops) -> list:
        if not isinstance(value, nd.NDArray):
            return super().reductions(value, snap, ops)
        return deferred_reductions(lambda: _widened(snap.resolve()), ops, shape1=True)

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
        return [
            o.resolve()
            if isinstance(o, Pending)
            else o.compute()
            if isinstance(o, DeferredReduction)
            else np.asarray(o)
            for o in objs
        ]
