"""Reductions computed later, with numpy, on the writer thread, for adapters whose framework
tensors reach the host there (Keras: a TF tensor read in place; MXNet: the engine's copy).

The training thread only checks the reduction names (a bad one fails there, as the hook's other
checks do) and makes one :class:`DeferredReduction` per reduction; ``materialize`` (writer
thread) calls :meth:`DeferredReduction.compute`. The reductions of one tensor share one
:class:`HostSource`: the first ``compute`` fetches the host data and computes all of them at once
(:func:`~smdebug.core.tensors.reductions.numpy_reductions`: the absolute value made once, one
mean for mean, std and variance), then drops the data.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from smdebug.core.tensors.reductions import ALLOWED_NORMS, ALLOWED_REDUCTIONS, numpy_reductions
from smdebug.exceptions import SMDebugValueError

__all__ = ["HostSource", "DeferredReduction", "deferred_reductions"]

_VALID = ALLOWED_REDUCTIONS + ALLOWED_NORMS


class HostSource:
    """A tensor's reductions ``ops``, computed from the data ``fetch()`` gives when the first is
    asked for; ``shape1``: each as an array of shape (1,) in the data's dtype (MXNet's reduction
    ops give that), else numpy's 0-d result."""

    __slots__ = ("_fetch", "_ops", "_shape1", "_values")

    def __init__(self, fetch: Callable[[], np.ndarray], ops: list[tuple[str, bool]], shape1: bool = False):
        self._fetch: Callable[[], np.ndarray] | None = fetch
        self._ops = ops
        self._shape1 = shape1
        self._values: list[np.ndarray] | None = None

    def value(self, i: int) -> np.ndarray:
        """The ``i``-th reduction of ``ops``."""
        if self._values is None:
            assert self._fetch is not None
            data, self._fetch = self._fetch(), None
            values = numpy_reductions(data, self._ops)
            if self._shape1:
                values = [np.asarray(v, dtype=data.dtype).reshape(1) for v in values]
            self._values = values
        return self._values[i]


class DeferredReduction:
    """The ``index``-th reduction of a :class:`HostSource`."""

    __slots__ = ("source", "index")

    def __init__(self, source: HostSource, index: int):
        self.source, self.index = source, index

    def compute(self) -> np.ndarray:
        return self.source.value(self.index)


def deferred_reductions(fetch: Callable[[], np.ndarray], ops: Iterable[tuple[str, bool]],
                        shape1: bool = False) -> list[DeferredReduction]:
    """The reductions ``ops`` (``(name, is_abs)`` pairs) of the data ``fetch`` will give; an
    unknown name raises :class:`~smdebug.exceptions.SMDebugValueError` now."""
    ops = list(ops)
    for op, _ in ops:
        if op not in _VALID:
            raise SMDebugValueError(f"Invalid reduction {op!r}: expected one of {', '.join(_VALID)}")
    source = HostSource(fetch, ops, shape1)
    return [DeferredReduction(source, i) for i in range(len(ops))]
