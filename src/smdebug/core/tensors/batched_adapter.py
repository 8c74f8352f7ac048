""":class:`BatchedAdapter`: the :class:`~smdebug.core.tensors.adapter.TensorAdapter` for a framework with
tensors on devices, written once over the framework's :class:`~smdebug.core.tensors.tensor_ops.TensorOps`.

- snapshots are copies on the tensor's own device (large host tensors into reused buffers);
  between ``begin_deferred`` and ``end_deferred`` they are taken on a background thread;
- reductions of real host tensors come from the live tensor, with no copy, from its moments
  (min, max, sum, l2, sum of |t|: one pass over each contiguous float tensor by the numba kernel
  where numba is installed, core.tensors.moments_kernel; else ``TensorOps.moments``, a few
  framework ops for many tensors),
  on the copy thread between ``begin_deferred`` and ``end_deferred`` (right away otherwise), the
  tensors the copy thread finds waiting in one batch; a tensor's reductions are one object, a
  row of values (core.tensors.moments); on an accelerator they run right away, one framework op
  each, on the device;
- ``materialize`` copies a step's 0-d results in one stack + transfer per device and dtype,
  and its accelerator tensors in one concatenation + transfer per device and dtype.
Values other than the framework's tensors (numbers, numpy arrays) go to :class:`NumpyAdapter`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from functools import partial

import numpy as np

from smdebug.core.tensors import moments_kernel
from smdebug.core.tensors.adapter import NumpyAdapter
from smdebug.core.tensors.host_buffers import BufferPool, Deferred, DeferredCopier
from smdebug.core.tensors.moments import needs_abs_sum, reduce_moments
from smdebug.core.tensors.tensor_ops import TensorOps

__all__ = ["BatchedAdapter", "Capture", "LazyReduction", "ReductionCache"]


class Capture:
    """A deferred capture (copy or reductions) of a live tensor, with the tensor's version (the
    glue's ``capture_version``) when it was handed over."""

    __slots__ = ("deferred", "tensor", "version")

    def __init__(self, deferred: Deferred, tensor, version):
        self.deferred, self.tensor, self.version = deferred, tensor, version


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
        self._reducers: dict = {}  # (op, abs) pairs -> the copy thread's function for them
        self._held = 0  # elements deferred and not handed to the copy thread yet
        # set by the glue (pytorch: the tensor's in-place version counter): each deferred capture
        # is listed in ``captures``, so that the glue can tell one of a tensor changed meanwhile
        self.capture_version: Callable | None = None
        self.captures: list[Capture] = []
        self.on_sync: Callable[[], None] | None = None  # called after each sync (the glue's check)

    # elements deferred before end_deferred hands them to the copy thread: a smaller batch waits
    # for the next (the bias before its weight, a small layer's gradients) or for sync; each
    # hand-over wakes the copy thread, which costs the training thread about 10 us (measured)
    START_AT = 1 << 16

    # ---------------------------------------------------------------- training thread
    def begin_deferred(self, copies: bool = True) -> None:
        """From now until ``end_deferred``, reductions of host tensors (and, unless ``copies`` is
        False, snapshots) are taken on the copy thread; ``sync`` waits for them."""
        self._deferring, self._defer_copies = True, copies

    def end_deferred(self) -> None:
        self._deferring = False
        if self._held >= self.START_AT:
            self._held = 0
            self.copier.start()

    def sync(self) -> None:
        self._held = 0
        self.copier.sync()  # (starts what is deferred and not started yet)
        if self.on_sync is not None:
            self.on_sync()

    def shutdown(self) -> None:
        self.copier.shutdown()

    def snapshot(self, value):
        ops = self.ops
        if not ops.is_tensor(value):
            return super().snapshot(value)
        t = ops.detach(value)
        if self._deferring and self._defer_copies:
            self._held += ops.numel(t)
            d = self.copier.defer(t)
            if self.capture_version is not None:
                self.captures.append(Capture(d, t, self.capture_version(t)))
            return d
        # a copy: the optimizer may change the tensor before the step ends
        return self.pool.copy(t)

    def reductions_need_snapshot(self, value) -> bool:
        # real host tensors: reduced from moments of the live tensor, which costs less than a copy
        # and the six reductions of it on the writer thread (BENCHMARKS.md, issue 22)
        fw = self.ops
        return not fw.is_host_real(value) and fw.is_tensor(value) and fw.is_host(value)

    def reductions(self, value, snap, ops):
        fw = self.ops
        if fw.is_host_real(value):  # one object, materialized as the row of the tensor's reductions
            if self._deferring:  # parameters, gradients: on the copy thread, while the model runs
                key = ops if type(ops) is tuple else tuple(ops)
                fn = self._reducers.get(key)
                if fn is None:
                    fn = self._reducers[key] = partial(self._host_rows, ops=key)
                self._held += fw.numel(value)
                d = self.copier.defer(value, fn)  # detached there
                if self.capture_version is not None:
                    self.captures.append(Capture(d, value, self.capture_version(value)))
                return d
            return self._host_rows([value], ops)[0]
        if not fw.is_tensor(value):
            return super().reductions(value, snap, ops)
        if fw.is_host(value) or isinstance(snap, Deferred):
            src = snap if snap is not None else self.pool.copy(fw.detach(value))
            return [LazyReduction(src, op, is_abs) for op, is_abs in ops]
        cache = ReductionCache(fw.detach(value), fw, self.pool)
        return [cache.get(op, is_abs) for op, is_abs in ops]

    def _host_rows(self, ts: list, ops) -> list:
        """Each live host tensor's reductions ``ops`` as a 1-d numpy array (a row of one 2-d array
        per dtype), from the tensors' moments; the few values the moments cannot tell exactly
        enough by the framework's own op, computed now from the live tensor. The tensors are
        detached here, on the copy thread, rather than on the training thread."""
        fw, pool = self.ops, self.pool
        xs = [fw.reduction_input(fw.detach(t)) for t in ts]
        groups: dict = {}
        for i, x in enumerate(xs):
            groups.setdefault(fw.dtype(x), []).append(i)
        out: list = [None] * len(xs)
        with_abs = needs_abs_sum(ops)
        for idx in groups.values():
            gx = [xs[i] for i in idx]
            stats = self._moments(gx, with_abs)
            vals, unknown = reduce_moments(stats, [fw.numel(x) for x in gx], ops)
            if unknown is not None:
                for row in np.flatnonzero(unknown.any(axis=1)):
                    cache = ReductionCache(gx[row], fw, pool)
                    for col in np.flatnonzero(unknown[row]):
                        vals[row, col] = fw.to_numpy(cache.get(*ops[col]))
                    if cache.abs_values is not None:
                        pool.give_back([cache.abs_values.t])
            for r, i in enumerate(idx):
                out[i] = vals[r]
        return out

    def _moments(self, xs: list, with_abs: bool) -> np.ndarray:
        """The moments of host tensors of one dtype (``TensorOps.moments``'s array): by the
        one-pass kernel where it is ready and takes the tensor, else by the framework's ops."""
        k = moments_kernel.kernel()
        done = None
        if k is not None:
            try:  # (a view torch will not give, a tensor with its negative bit set: the framework's ops)
                views = [self.ops.to_numpy(x) for x in xs]
            except (RuntimeError, TypeError, ValueError):
                views = []
            done = moments_kernel.host_moments(views, with_abs, k)
        if done is None:
            return self._framework_moments(xs, with_abs)
        stats, rest = done
        if rest:
            stats[rest] = self._framework_moments([xs[i] for i in rest], with_abs)
        return stats

    def _framework_moments(self, xs: list, with_abs: bool) -> np.ndarray:
        abs_x = [self.pool.abs(x) for x in xs] if with_abs else None
        try:
            return self.ops.moments(xs, abs_x)
        finally:
            if abs_x is not None:
                self.pool.give_back(abs_x)

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
