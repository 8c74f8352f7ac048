"""Reduction names, reduction tensor tags, and reductions computed with numpy (or, on the writer
thread, from moments by the numba kernel where it is ready: :func:`host_reductions`)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from smdebug.core.tensors import moments_kernel
from smdebug.core.tensors.moments import needs_abs_sum, reduce_moments, reductions_from_moments
from smdebug.exceptions import SMDebugValueError

__all__ = [
    "ALLOWED_REDUCTIONS",
    "ALLOWED_NORMS",
    "REDUCTIONS_PREFIX",
    "get_numpy_reduction",
    "host_reductions",
    "host_reductions_many",
    "numpy_reductions",
    "needs_abs_sum",
    "reductions_from_moments",
    "get_reduction_tensor_name",
    "reverse_reduction_tensor_name",
    "as_numeric",
]

ALLOWED_REDUCTIONS = ["min", "max", "mean", "std", "variance", "sum", "prod"]
ALLOWED_NORMS = ["l1", "l2"]
REDUCTIONS_PREFIX = "smdebug/reductions/"


def as_numeric(value) -> np.ndarray | None:
    """A saved value as a numeric array (bfloat16 and the other ml_dtypes as float32); None for
    strings and objects."""
    arr = np.asarray(value)
    kind = arr.dtype.kind
    if kind in "biufc":
        return arr
    if kind == "V":  # ml_dtypes (bfloat16, float8 ...) report kind 'V'
        try:
            return arr.astype(np.float32)
        except (TypeError, ValueError):
            return None
    return None


_NUMPY_OPS: dict[str, Callable[..., Any]] = {
    "min": np.min,
    "max": np.max,
    "mean": np.mean,
    "std": np.std,
    "variance": np.var,
    "sum": np.sum,
    "prod": np.prod,
}


def get_numpy_reduction(reduction_name: str, numpy_data, abs: bool = False):
    """A reduction of the flattened array; norms are vector norms, whatever the rank."""
    data = np.asarray(numpy_data)
    if abs:
        data = np.absolute(data)
    op = _NUMPY_OPS.get(reduction_name)
    if op is not None:
        return op(data)
    if reduction_name in ("l1", "l2"):
        return np.linalg.norm(data.ravel(), ord=int(reduction_name[1]))
    raise SMDebugValueError(
        f"Invalid reduction {reduction_name!r}: expected one of {', '.join(ALLOWED_REDUCTIONS + ALLOWED_NORMS)}"
    )


def numpy_reductions(numpy_data, ops) -> list:
    """The reductions ``ops`` (``(op, abs)`` pairs) of one array as 0-d arrays, each holding the
    value ``get_numpy_reduction(op, data, abs)`` gives, to the bit, for less work: the absolute
    value is made once, and mean, std and variance share one sum and one mean (numpy's own steps,
    in numpy's order: ``np.var`` computes the mean as ``np.mean`` does), the squared deviations
    going into a buffer the thread reuses. (:func:`host_reductions`, the writer thread's, gives
    these bits only for the values it does not take from the moments kernel.)"""
    data = np.asarray(numpy_data)
    plain = _Moments(data)
    absolute: _Moments | None = None
    out = []
    for op, is_abs in ops:
        if is_abs and absolute is None:
            absolute = _Moments(np.absolute(data))
        out.append(np.asarray((absolute if is_abs else plain).reduce(op)))  # type: ignore[union-attr]
    return out


_KERNEL_DTYPES = frozenset({np.dtype(np.float32), np.dtype(np.float64)})


def host_reductions(numpy_data, ops) -> list:
    """:func:`numpy_reductions` for the writer thread (core.tensors.deferred: Keras, MXNet), the
    same dtypes and shapes, with less work where the numba moments kernel is ready
    (core.tensors.moments_kernel; it is never waited for): the moments of a C-contiguous float32
    or float64 array of more than one element in one pass, and from them (core.tensors.moments,
    numpy's ddof 0) min, max, mean, sum, l1, l2, abs max, std and variance unless their digits
    would cancel, abs min where the array keeps one sign. Those equal numpy's within float
    rounding, not to the bit: ``|got - numpy| <= 1e-5 * |numpy| + 1e-6 * max|t|`` (for sum:
    ``1e-6 * sum|t|``; tests/core/test_host_reductions.py), or nearer the exact value than
    numpy's where numpy's own float32 rounding is larger (l2 of 1M float32 elements of mean
    1e4: numpy's float32 dot is 1.6e-5 off, the kernel's 1e-9). The rest (prod, what the
    moments cannot tell, arrays with nan or inf or of other dtypes, everything while the kernel
    is not ready or without numba) is :func:`numpy_reductions`', to the bit."""
    return host_reductions_many([numpy_data], ops)[0]


def host_reductions_many(arrays, ops) -> list[list]:
    """:func:`host_reductions` of each of ``arrays``, the same ``ops`` for all: one
    ``reduce_moments`` per dtype (numpy's calls cost more than the kernel on a small array)."""
    arrays = [np.asarray(a) for a in arrays]
    out: list = [None] * len(arrays)
    groups: dict = {}  # dtype -> indices of the arrays the kernel may take
    for i, a in enumerate(arrays):
        if a.dtype in _KERNEL_DTYPES and a.size > 1 and a.flags.c_contiguous:
            groups.setdefault(a.dtype, []).append(i)
    k = moments_kernel.kernel() if groups else None
    for idx in groups.values():
        if k is None:
            break
        done = moments_kernel.host_moments([arrays[i] for i in idx], needs_abs_sum(ops), k)
        assert done is not None  # (a dtype it takes)
        stats, rest = done
        vals, unknown = reduce_moments(stats, [arrays[i].size for i in idx], ops, ddof=0)
        skip = set(rest)  # nan, inf, a sum beyond the dtype, not aligned: numpy's, below
        for r, i in enumerate(idx):
            if r in skip:
                continue
            row = [np.asarray(v) for v in vals[r]]
            if unknown is not None and unknown[r].any():
                cols = np.flatnonzero(unknown[r])
                for j, v in zip(cols, numpy_reductions(arrays[i], [ops[j] for j in cols])):
                    row[j] = v
            out[i] = row
    return [o if o is not None else numpy_reductions(a, ops) for o, a in zip(out, arrays)]


# numpy's floating types whose mean and variance _Moments computes as np.mean / np.var do (others,
# complex and ml_dtypes' bfloat16 among them, are handed to np.mean / np.var / np.std)
_SHARED_KINDS = frozenset("biu")
_SHARED_FLOATS = frozenset({np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)})
_F8 = np.dtype("f8")
_SCRATCH_MAX = 1 << 24  # deviations of larger arrays go to a fresh array, not the thread's buffer
_scratch = threading.local()


def _scratch_like(arr: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """A C-ordered array of ``arr``'s shape and ``dtype`` in this thread's reused buffer."""
    nbytes = arr.size * dtype.itemsize
    if nbytes > _SCRATCH_MAX:
        return np.empty(arr.shape, dtype)
    buf = getattr(_scratch, "buf", None)
    if buf is None or buf.nbytes < nbytes:
        buf = _scratch.buf = np.empty(max(nbytes, 1 << 16), np.uint8)
    return buf[:nbytes].view(dtype).reshape(arr.shape)


class _Moments:
    """One array's reductions, the sums behind mean / variance / std computed once (see
    :func:`numpy_reductions`)."""

    __slots__ = ("data", "_sums", "_var")

    def __init__(self, data: np.ndarray):
        self.data = data
        self._sums: dict = {}  # accumulator dtype (None: the array's own) -> sum, keepdims
        self._var: np.ndarray | None = None

    def reduce(self, op: str):
        d = self.data
        if (
            op in ("mean", "std", "variance")
            and d.size
            and (d.dtype.kind in _SHARED_KINDS or d.dtype in _SHARED_FLOATS)
        ):
            if op == "mean":
                return self._mean()
            var = self._variance()
            return var if op == "variance" else var.dtype.type(np.sqrt(var))
        return get_numpy_reduction(op, d)

    def _sum(self, dtype):
        s = self._sums.get(dtype)
        if s is None:
            s = self._sums[dtype] = np.add.reduce(self.data, axis=None, dtype=dtype, keepdims=True)
        return s

    def _mean(self):
        """np.mean: the sum in float64 for integers and booleans, float32 for float16; divided by
        the count in float64 and rounded once to the result's dtype."""
        d = self.data
        f16 = d.dtype == np.float16
        s = self._sum(_F8 if d.dtype.kind in _SHARED_KINDS else np.dtype("f4") if f16 else None)
        q = np.true_divide(s, np.intp(d.size)).reshape(())
        return (d.dtype if f16 else s.dtype).type(q)

    def _variance(self):
        """np.var (ddof 0): the mean from the sum (float64 for integers and booleans, the array's
        dtype otherwise), the squared deviations from it, their sum over the count."""
        if self._var is None:
            d = self.data
            dtype = _F8 if d.dtype.kind in _SHARED_KINDS else None
            n = np.intp(d.size)
            s = self._sum(dtype)
            mean = np.true_divide(s, n, out=np.empty_like(s), casting="unsafe")  # in float64, rounded once
            dev_type = np.result_type(d, mean)
            # numpy sums the deviations in the order of their memory: the same layout as numpy's own
            dev = np.subtract(d, mean, out=_scratch_like(d, dev_type)) if d.flags.c_contiguous else np.subtract(d, mean)
            np.square(dev, out=dev)
            total = np.add.reduce(dev, axis=None, dtype=dtype)
            self._var = total.dtype.type(total / n)
        return self._var


def get_reduction_tensor_name(tensorname: str, reduction_name: str, abs: bool) -> str:
    return f"{REDUCTIONS_PREFIX}{'abs_' if abs else ''}{reduction_name}/{tensorname}"


def reverse_reduction_tensor_name(tag: str) -> tuple[str, str, bool]:
    """'smdebug/reductions/abs_mean/fc1.weight' -> ('fc1.weight', 'mean', True)."""
    rest = tag[tag.index(REDUCTIONS_PREFIX) + len(REDUCTIONS_PREFIX) :]
    op, _, name = rest.partition("/")
    if op.startswith("abs_"):
        return name, op[4:], True
    return name, op, False
