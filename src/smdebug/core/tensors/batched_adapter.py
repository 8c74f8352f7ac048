""":class:`BatchedAdapter`: the :class:`~smdebug.core.tensors.adapter.TensorAdapter` for a framework with
tensors on devices, written once over the framework's :class:`~smdebug.core.tensors.tensor_ops.TensorOps`.

- snapshots are copies on the tensor's own device (large host tensors into reused buffers);
  between ``begin_deferred`` and ``end_deferred`` they are taken on a background thread;
- reductions of real host tensors come from the live tensor, with no copy, from one stack of
  moments (min, max, sum, l2, sum of |t|: ``TensorOps.moments``), on the copy thread between
  ``begin_deferred`` and ``end_deferred`` (right away otherwise); on an accelerator they run
  right away, one framework op each, on the device;
- ``materialize`` copies a step's 0-d results in one stack + transfer per device and dtype,
  and its accelerator tensors in one concatenation + transfer per device and dtype.
Values other than the framework's tensors (numbers, numpy arrays) go to :class:`NumpyAdapter`.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from smdebug.core.tensors.adapter import NumpyAdapter
from smdebug.core.tensors.host_buffers import BufferPool, Deferred, DeferredCopier
from smdebug.core.tensors.reductions import needs_abs_sum, reductions_from_moments
from smdebug.core.tensors.tensor_ops import TensorOps

__all__ = ["BatchedAdapter", "DeferredItem", "LazyReduction", "ReductionCache"]


class DeferredItem:
    """Item ``index`` of the list a :class:`Deferred` computes (reductions on the copy thread)."""

    __slots__ = ("deferred", "index")

    def __init__(self, deferred: Deferred, index: int):
        self.deferred, self.index = deferred, index


class LazyReduction:
    """A reduction to compute later (writer thread) from a snapshot."""

    __slots__ = ("src", "op", "abs")

    def __init__(self, src, op: str, is_abs: bool):
        self.src, self.op, self.abs = src, op, is_abs


class ReductionCache:
    """Reductions of one tensor, each by the framework's op of that name (so the values are
    exactly the framework's), sharing what can be shared: min and max in one pass, |t| once."""

    def __init__(self, t, ops: TensorOps, pool: BufferPool):
        self.ops, self.pool = ops, pool
        self.t = ops.reduction_input(t)
        self._cache: dict = {}
        self.abs_values: ReductionCache | None = None

    def get(self, op: str, is_abs: bool):
        key = (op, is_abs)
        c = self._cache
        if key in c:
            return c[key]
        if is_abs:
            if self.abs_values is None:
                self.abs_values = ReductionCache(self.pool.abs(self.t), self.ops, self.pool)
            c[key] = self.abs_values.get(op, False)
        elif op in ("min", "max"):
            c[("min", False)], c[("max", False)] = self.ops.min_max(self.t)
        else:
            c[key] = self.ops.reduce(self.t, op)
        return c[key]


class BatchedAdapter(NumpyAdapter):
    def __init__(self, ops: TensorOps):
        self.ops = ops
        self.pool = BufferPool(ops)
        self.copier = DeferredCopier(self.pool.copy_all)
        self._deferring = False
        self._defer_copies = True

    # ---------------------------------------------------------------- training thread
    def begin_deferred(self, copies: bool = True) -> None:
        """From now until ``end_deferred``, reductions of host tensors (and, unless ``copies`` is
        False, snapshots) are taken on the copy thread; ``sync`` waits for them."""
        self._deferring, self._defer_copies = True, copies

    def end_deferred(self) -> None:
        self._deferring = False
        self.copier.start()

    def sync(self) -> None:
        self.copier.sync()

    def shutdown(self) -> None:
        self.copier.shutdown()

    def snapshot(self, value):
        ops = self.ops
        if not ops.is_tensor(value):
            return super().snapshot(value)
        t = ops.detach(value)
        if self._deferring and self._defer_copies:
            return self.copier.defer(t)
        # a copy: the optimizer may change the tensor before the step ends
        return self.pool.copy(t)

    def reductions_need_snapshot(self, value) -> bool:
        # real host tensors: reduced from moments of the live tensor, which costs less than a copy
        # and the six reductions of it on the writer thread (BENCHMARKS.md, issue 22)
        return self.ops.is_tensor(value) and self.ops.is_host(value) and self.ops.is_complex(value)

    def reductions(self, value, snap, ops) -> list:
        fw = self.ops
        if not fw.is_tensor(value):
            return super().reductions(value, snap, ops)
        if fw.is_host(value) and not fw.is_complex(value):
            if self._deferring:  # parameters: on the copy thread, while forward and backward run
                d = self.copier.defer(fw.detach(value), lambda t, ops=list(ops): self._host_reductions(t, ops))
                return [DeferredItem(d, i) for i in range(len(ops))]
            return self._host_reductions(fw.detach(value), ops)
        if fw.is_host(value) or isinstance(snap, Deferred):
            src = snap if snap is not None else self.pool.copy(fw.detach(value))
            return [LazyReduction(src, op, is_abs) for op, is_abs in ops]
        cache = ReductionCache(fw.detach(value), fw, self.pool)
        return [cache.get(op, is_abs) for op, is_abs in ops]

    def _host_reductions(self, t, ops) -> list:
        """0-d numpy arrays, from the moments of the live tensor; the few that the moments
        cannot tell exactly enough by the framework's own op (computed now, from the live tensor)."""
        fw, pool = self.ops, self.pool
        x = fw.reduction_input(t)
        abs_x = pool.abs(x) if needs_abs_sum(ops) else None
        try:
            out = reductions_from_moments(fw.moments(x, abs_x), fw.numel(x), ops)
            if any(v is None for v in out):
                cache = ReductionCache(x, fw, pool)
                for i, (op, is_abs) in enumerate(ops):
                    if out[i] is None:
                        out[i] = np.array(fw.to_numpy(cache.get(op, is_abs)))
                if cache.abs_values is not None:
                    pool.give_back([cache.abs_values.t])
        finally:
            if abs_x is not None:
                pool.give_back([abs_x])
        return out

    def shape(self, value) -> tuple:
        return tuple(self.ops.shape(value)) if self.ops.is_tensor(value) else super().shape(value)

    def size(self, value) -> int:
        return self.ops.numel(value) if self.ops.is_tensor(value) else super().size(value)

    def is_bool(self, value) -> bool:
        return self.ops.is_bool(value) if self.ops.is_tensor(value) else super().is_bool(value)

    # ---------------------------------------------------------------- writer thread
    def release(self, held) -> None:
        """The writer is done with a step: its copies go back to the buffer pool."""
        self.pool.give_back(held)

    def materialize(self, objs: list, held: list | None = None) -> list:
        fw = self.ops
        out: list = [None] * len(objs)
        scalars = defaultdict(list)  # group -> indices of 0-d tensors (reductions)
        on_device = defaultdict(list)  # group -> indices of accelerator tensors
        caches: dict = {}
        for i, o in enumerate(objs):  # wait for each deferred copy it needs
            if isinstance(o, Deferred):
                o = objs[i] = o.result()
            elif isinstance(o, DeferredItem):
                o = objs[i] = o.deferred.result()[o.index]
            elif isinstance(o, LazyReduction) and isinstance(o.src, Deferred):
                o.src = o.src.result()
            if isinstance(o, LazyReduction):
                cache = caches.get(id(o.src))
                if cache is None:
                    cache = caches[id(o.src)] = ReductionCache(o.src, fw, self.pool)
                    if held is not None:
                        held.append(o.src)
                o = objs[i] = cache.get(o.op, o.abs)
            elif held is not None and fw.is_tensor(o):
                held.append(o)
            if not fw.is_tensor(o):
                out[i] = np.asarray(o)
            elif fw.ndim(o) == 0:
                scalars[fw.group_key(o)].append(i)
            elif not fw.is_host(o):
                on_device[fw.group_key(o)].append(i)
            else:
                out[i] = fw.to_numpy(o)
        if held is not None:
            held.extend(c.abs_values.t for c in caches.values() if c.abs_values is not None)
        for idx in scalars.values():  # one stack and one host copy; 0-d views of it
            host = fw.to_numpy(fw.to_host(fw.stack([objs[i] for i in idx])))
            for j, i in enumerate(idx):
                out[i] = host[j, ...]
        for idx in on_device.values():
            flat = fw.to_numpy(fw.to_host(fw.concat_flat([objs[i] for i in idx])))
            offset = 0
            for i in idx:
                n = fw.numel(objs[i])
                out[i] = flat[offset : offset + n].reshape(tuple(fw.shape(objs[i])))
                offset += n
        return out
