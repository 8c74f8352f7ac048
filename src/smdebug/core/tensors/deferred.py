"""Reductions computed later, with numpy, on the writer thread, for adapters whose framework
tensors reach the host there (Keras: a TF tensor read in place; MXNet: the engine's copy).

The training thread only checks the reduction names (a bad one fails there, as the hook's other
checks do) and makes one :class:`DeferredReduction` per reduction; ``materialize`` (writer
thread) calls :meth:`DeferredReduction.compute`. The reductions of one tensor share one
:class:`HostSource`, so its host data is fetched once and its absolute value made once for every
abs reduction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from smdebug.core.tensors.reductions import ALLOWED_NORMS, ALLOWED_REDUCTIONS, get_numpy_reduction
from smdebug.exceptions import SMDebugValueError

__all__ = ["HostSource", "DeferredReduction", "deferred_reductions"]

_VALID = ALLOWED_REDUCTIONS + ALLOWED_NORMS


class HostSource:
    """A tensor's host data as its reductions read it: ``fetch()`` once (then dropped, so what it
    held is freed with the data), ``|data|`` once."""

    __slots__ = ("_fetch", "_data", "_abs")

    def __init__(self, fetch: Callable[[], np.ndarray]):
        self._fetch: Callable[[], np.ndarray] | None = fetch
        self._data: np.ndarray | None = None
        self._abs: np.ndarray | None = None

    def data(self, is_abs: bool) -> np.ndarray:
        if self._data is None:
            assert self._fetch is not None
            self._data, self._fetch = self._fetch(), None
        if not is_abs:
            return self._data
        if self._abs is None:
            self._abs = np.absolute(self._data)
        return self._abs


class DeferredReduction:
    """One reduction of a :class:`HostSource`; ``shape1``: as an array of shape (1,) in the
    data's dtype (MXNet's reduction ops give that), else numpy's 0-d result."""

    __slots__ = ("source", "op", "is_abs", "shape1")

    def __init__(self, source: HostSource, op: str, is_abs: bool, shape1: bool = False):
        self.source, self.op, self.is_abs, self.shape1 = source, op, is_abs, shape1

    def compute(self) -> np.ndarray:
        data = self.source.data(self.is_abs)
        if self.shape1:
            return np.asarray(get_numpy_reduction(self.op, data), dtype=data.dtype).reshape(1)
        return np.asarray(get_numpy_reduction(self.op, data))


def deferred_reductions(fetch: Callable[[], np.ndarray], ops: Iterable[tuple[str, bool]],
                        shape1: bool = False) -> list[DeferredReduction]:
    """The reductions ``ops`` (``(name, is_abs)`` pairs) of the data ``fetch`` will give; an
    unknown name raises :class:`~smdebug.exceptions.SMDebugValueError` now."""
    ops = list(ops)
    for op, _ in ops:
        if op not in _VALID:
            raise SMDebugValueError(f"Invalid reduction {op!r}: expected one of {', '.join(_VALID)}")
    source = HostSource(fetch)
    return [DeferredReduction(source, op, is_abs, shape1) for op, is_abs in ops]
