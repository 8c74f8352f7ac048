"""JAX arrays for the hook: the :class:`~smdebug.core.tensors.adapter.TensorAdapter` of smdebug.jax.

A ``jax.Array`` never changes: a snapshot is the array itself, not a copy. What costs is the
device-to-host transfer, so the adapter

- starts it (``copy_to_host_async``) when a saved step records the array, and finishes it for all
  of the step's arrays in one ``jax.device_get`` at the next ``sync`` (the hook calls it when the
  next step begins, before that step can donate the buffers, and at close): the host waits
  for the device once per saved step, while the step's values may still be being computed;
- reduces whole arrays on the writer thread with numpy (core.tensors.deferred: one pass per array
  by the moments kernel where it is ready);
- takes reductions computed on the device (:class:`ReducedLeaf`, from
  :func:`smdebug.jax.reductions`) as one row per array of a table per dtype, each table
  transferred once, with the rest.

An array sharded over several devices of this process is fetched whole (its global value); one
that spans processes is fetched when it is replicated (this process's copy), and refused by the
hook otherwise. Values other than JAX arrays (numpy arrays, Python numbers) go to numpy.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import numpy as np

from smdebug.core.tensors.adapter import NumpyAdapter
from smdebug.core.tensors.deferred import DeferredReduction, compute_together, deferred_reductions

__all__ = ["JaxAdapter", "HostCopy", "ReducedLeaf", "TableRow", "is_array", "host_value", "can_fetch"]


def is_array(value: Any) -> bool:
    return isinstance(value, jax.Array)


def can_fetch(x: Any) -> bool:
    """Whether this process can read ``x``'s whole value (every shard is here, or it is replicated)."""
    return x.is_fully_addressable or x.is_fully_replicated


def host_value(x: Any) -> np.ndarray:
    """The global value of a JAX array, on the host (a replicated array that spans processes: this
    process's copy)."""
    if x.is_fully_addressable:
        return np.asarray(x)
    if not x.is_fully_replicated:
        raise ValueError(
            f"an array of shape {x.shape} sharded over several processes and not replicated: "
            "this process holds only part of it"
        )
    return np.asarray(x.addressable_data(0))


class HostCopy:
    """A JAX array whose transfer to the host was started; ``value`` is the numpy array once
    :meth:`JaxAdapter.sync` (or :meth:`get`) fetched it."""

    __slots__ = ("array", "value")

    def __init__(self, array: Any):
        self.array: Any = array
        self.value: np.ndarray | None = None

    def get(self) -> np.ndarray:
        if self.value is None:
            self.value, self.array = host_value(self.array), None
        return self.value


class ReducedLeaf:
    """One leaf of a :class:`smdebug.jax.reductions.Reduced`: its reductions ``ops``, row ``index``
    of ``table`` (on the device), and the shape of the leaf they were computed from."""

    __slots__ = ("table", "index", "ops", "shape")

    def __init__(self, table: Any, index: int, ops: tuple[tuple[str, bool], ...], shape: tuple[int, ...]):
        self.table, self.index, self.ops, self.shape = table, index, ops, shape


class TableRow:
    """Row ``index`` of a table of reductions being transferred (``copy``): one leaf's reductions."""

    __slots__ = ("copy", "index")

    def __init__(self, copy: HostCopy, index: int):
        self.copy, self.index = copy, index


class JaxAdapter(NumpyAdapter):
    def __init__(self) -> None:
        self._pending: list[HostCopy] = []  # transfers started since the last sync
        self._tables: dict[int, HostCopy] = {}  # id of a table of reductions -> its transfer, until the sync

    # ---------------------------------------------------------------- training thread
    def _copy(self, x: Any) -> HostCopy:
        c = HostCopy(x)
        if x.is_fully_addressable:
            x.copy_to_host_async()
        self._pending.append(c)
        return c

    def size(self, value: Any) -> int:
        if is_array(value):
            return int(value.size)
        if isinstance(value, ReducedLeaf):
            return math.prod(value.shape)
        return super().size(value)

    def shape(self, value: Any) -> tuple:
        if is_array(value):
            return tuple(value.shape)
        if isinstance(value, ReducedLeaf):
            return value.shape
        return super().shape(value)

    def is_bool(self, value: Any) -> bool:
        if is_array(value):
            return value.dtype == np.bool_
        if isinstance(value, ReducedLeaf):
            return False
        return super().is_bool(value)

    def snapshot(self, value: Any) -> Any:
        return self._copy(value) if is_array(value) else super().snapshot(value)

    def reductions_need_snapshot(self, value: Any) -> bool:
        return is_array(value)  # reduced on the host, from the transferred array

    def reductions(self, value: Any, snap: Any, ops: Any) -> Any:
        if isinstance(value, ReducedLeaf):
            if tuple(ops) != value.ops:
                raise ValueError(f"reductions {ops} asked of a leaf reduced on the device as {value.ops}")
            copy = self._tables.get(id(value.table))
            if copy is None:  # the table's first leaf: one transfer for all its rows
                copy = self._tables[id(value.table)] = self._copy(value.table)
            return TableRow(copy, value.index)  # one object: the row of all of them
        if isinstance(snap, HostCopy):
            return deferred_reductions(snap.get, ops)
        return super().reductions(value, snap, ops)

    def sync(self) -> None:
        """Finish every transfer started since the last sync, in one ``jax.device_get``."""
        pending, self._pending = self._pending, []
        self._tables.clear()
        if not pending:
            return
        whole = [c for c in pending if c.value is None and c.array.is_fully_addressable]
        for c, v in zip(whole, jax.device_get([c.array for c in whole])):
            c.value, c.array = np.asarray(v), None
        for c in pending:
            if c.value is None:
                c.get()

    # ---------------------------------------------------------------- writer thread
    def materialize(self, objs: list, held: list | None = None) -> list:
        compute_together(objs)
        out = []
        for o in objs:
            if isinstance(o, TableRow):
                out.append(o.copy.get()[o.index])
            elif isinstance(o, HostCopy):
                out.append(o.get())
            elif isinstance(o, DeferredReduction):
                out.append(o.compute())
            else:
                out.append(np.asarray(o))
        return out
