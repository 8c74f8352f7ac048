"""Reductions computed later, with numpy, on the writer thread, for adapters whose framework
tensors reach the host there (Keras: a TF tensor read in place; MXNet: the engine's copy).

The training thread only checks the reduction names (a bad one fails there, as the hook's other
checks do) and makes one :class:`DeferredReduction` per reduction; ``materialize`` (writer
thread) calls :meth:`DeferredReduction.compute`. The reductions of one tensor share one
:class:`HostSource`: the first ``compute`` fetches the host data and computes all of them at once
(:func:`~smdebug.core.tensors.reductions.host_reductions`: from the array's moments in one pass
by the numba kernel where it is ready, numpy's within float rounding; else, and for what the
moments cannot tell, :func:`~smdebug.core.tensors.reductions.numpy_reductions`, numpy's to the
bit: the absolute value made once, one mean for mean, std and variance), then drops the data;
:func:`compute_together` computes a step's sources at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from smdebug.core.tensors.reductions import ALLOWED_NORMS, ALLOWED_REDUCTIONS, host_reductions, host_reductions_many
from smdebug.exceptions import SMDebugValueError

__all__ = ["HostSource", "DeferredReduction", "compute_together", "deferred_reductions"]

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
            data = self._take()
            self._keep(data, host_reductions(data, self._ops))
        return self._values[i]  # type: ignore[index]

    def _take(self) -> np.ndarray:
        assert self._fetch is not None
        data, self._fetch = self._fetch(), None
        return data

    def _keep(self, data: np.ndarray, values: list) -> None:
        if self._shape1:
            values = [np.asarray(v, dtype=data.dtype).reshape(1) for v in values]
        self._values = values


def compute_together(objs: Iterable) -> None:
    """Computes the reductions of every :class:`HostSource` behind the :class:`DeferredReduction`
    among ``objs`` not computed yet, those with the same ops together
    (:func:`~smdebug.core.tensors.reductions.host_reductions_many`): a step's tensors cost one
    ``reduce_moments`` per dtype rather than one each. (A ``materialize`` calls it first; each
    ``compute`` then only looks its value up.)"""
    groups: dict = {}  # ops -> {id: source}
    for o in objs:
        if isinstance(o, DeferredReduction) and o.source._values is None:
            groups.setdefault(tuple(o.source._ops), {})[id(o.source)] = o.source
    for ops, sources in groups.items():
        todo = list(sources.values())
        data = [s._take() for s in todo]
        for s, d, values in zip(todo, data, host_reductions_many(data, list(ops))):
            s._keep(d, values)


class DeferredReduction:
    """The ``index``-th reduction of a :class:`HostSource`."""

    __slots__ = ("source", "index")

    def __init__(self, source: HostSource, index: int):
        self.source, self.index = source, index

    def compute(self) -> np.ndarray:
        return self.source.value(self.index)


def deferred_reductions(
    fetch: Callable[[], np.ndarray], ops: Iterable[tuple[str, bool]], shape1: bool = False
) -> list[DeferredReduction]:
    """The reductions ``ops`` (``(name, is_abs)`` pairs) of the data ``fetch`` will give; an
    unknown name raises :class:`~smdebug.exceptions.SMDebugValueError` now."""
    ops = list(ops)
    for op, _ in ops:
        if op not in _VALID:
            raise SMDebugValueError(f"Invalid reduction {op!r}: expected one of {', '.join(_VALID)}")
    source = HostSource(fetch, ops, shape1)
    return [DeferredReduction(source, i) for i in range(len(ops))]
