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
from smdebug.core.tensors.reductions import ALLOWED_NORMS, ALLOWED_REDUCTIONS, get_numpy_reduction
from smdebug.exceptions import SMDebugRuntimeError, SMDebugValueError

__all__ = ["MXNetAdapter", "Pending", "HostReduction", "host_view"]


_VALID = ALLOWED_REDUCTIONS + ALLOWED_NORMS


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


class _HostData:
    """A snapshot's host copy as reductions read it (widened to float32 as MXNet's reductions
    would; its absolute value computed once for every abs reduction). Writer thread only."""

    __slots__ = ("snap", "_data", "_abs")

    def __init__(self, snap: Pending):
        self.snap = snap
        self._data: np.ndarray | None = None
        self._abs: np.ndarray | None = None

    def data(self, is_abs: bool) -> np.ndarray:
        if self._data is None:
            d = self.snap.resolve()
            self._data = d if d.dtype in (np.float32, np.float64) else d.astype(np.float32)
        if not is_abs:
            return self._data
        if self._abs is None:
            self._abs = np.absolute(self._data)
        return self._abs


class HostReduction:
    """A reduction of a snapshot, computed with numpy by ``materialize`` (writer thread) once
    ``sync`` copied the snapshot to the host: an array of shape (1,), as MXNet's ops give."""

    __slots__ = ("host", "op", "is_abs")

    def __init__(self, host: _HostData, op: str, is_abs: bool):
        self.host, self.op, self.is_abs = host, op, is_abs

    def compute(self) -> np.ndarray:
        data = self.host.data(self.is_abs)
        return np.asarray(get_numpy_reduction(self.op, data), dtype=data.dtype).reshape(1)


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
        for op, _ in ops:  # a bad name fails here, on the training thread, as the hook's other checks
            if op not in _VALID:
                raise SMDebugValueError(f"Invalid reduction {op!r}: expected one of {', '.join(_VALID)}")
        host = _HostData(snap)
        return [HostReduction(host, op, is_abs) for op, is_abs in ops]

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
        return [o.resolve() if isinstance(o, Pending) else o.compute() if isinstance(o, HostReduction)
                else np.asarray(o) for o in objs]
