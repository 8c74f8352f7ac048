"""Copies of a framework's tensors: reused host buffers and the deferred copy thread.

Both are generic; the framework supplies its :class:`~smdebug.core.tensors.tensor_ops.TensorOps`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from smdebug.core.tensors.tensor_ops import TensorOps

__all__ = ["BufferPool", "Deferred", "DeferredCopier"]


class BufferPool:
    """Reused host buffers for copies of large host tensors: allocating fresh megabytes every
    step costs page faults that cost more than the copy itself. A buffer comes back
    (:meth:`give_back`) once the writer thread is done with the step that used it."""

    MIN_NUMEL = 1 << 14
    KEEP = 8  # buffers kept per (shape, dtype)

    def __init__(self, ops: TensorOps):
        self.ops = ops
        self._free: dict = {}
        self._lent: set = set()
        self._lock = threading.Lock()

    def pooled(self, t) -> bool:
        """Whether copies of ``t`` go into a reused buffer."""
        return self.ops.is_host(t) and self.ops.numel(t) >= self.MIN_NUMEL

    def take(self, t):
        """A free buffer of ``t``'s shape and dtype (lent until given back)."""
        ops = self.ops
        key = (tuple(ops.shape(t)), ops.dtype(t))
        with self._lock:
            free = self._free.get(key)
            buf = free.pop() if free else None
            if buf is None:
                buf = ops.empty_host(key[0], key[1])
            self._lent.add(id(buf))
        return buf

    def copy(self, t):
        if not self.pooled(t):
            return self.ops.clone(t)
        buf = self.take(t)
        self.ops.copy_into([buf], [t])
        return buf

    def copy_all(self, ts: list) -> list:
        """Copies of ``ts``: the large ones in one ``copy_into`` call (one release of the GIL)."""
        copies, dst, src = [], [], []
        for t in ts:
            if self.pooled(t):
                copies.append(self.take(t))
                dst.append(copies[-1])
                src.append(t)
            else:
                copies.append(self.ops.clone(t))
        if dst:
            self.ops.copy_into(dst, src)
        return copies

    def abs(self, t):
        if not self.pooled(t) or self.ops.is_complex(t):
            return self.ops.abs(t)
        return self.ops.abs(t, out=self.take(t))

    def give_back(self, tensors) -> None:
        ops = self.ops
        with self._lock:
            for t in tensors:
                if id(t) in self._lent and ops.is_tensor(t):
                    self._lent.discard(id(t))
                    free = self._free.setdefault((tuple(ops.shape(t)), ops.dtype(t)), [])
                    if len(free) < self.KEEP:
                        free.append(t)


class Deferred:
    """A copy of a live tensor that the copy thread takes while the model runs forward and
    backward; :meth:`result` (writer thread) waits for it."""

    __slots__ = ("live", "copy", "future", "fn")

    def __init__(self, live, fn: Callable | None = None):
        # with ``fn``, the copy thread takes ``fn([live, ...])[i]`` instead of a copy: ``fn`` maps a
        # list of tensors to a list of results (reductions), and gets every tensor of a batch
        # deferred with the same ``fn`` in one call
        self.live, self.copy, self.future, self.fn = live, None, None, fn

    def result(self):
        if self.copy is None:
            self.future.result()
        return self.copy


class _Batch:
    """What the copy thread's :meth:`_CopyThread.submit` returns: ``result()`` waits until the
    batch is done and raises what it raised."""

    __slots__ = ("_lock", "exc", "done")

    def __init__(self):
        self._lock = threading.Lock()
        self._lock.acquire()  # released by the copy thread when the batch is done
        self.exc: BaseException | None = None
        self.done = False

    def finish(self, exc: BaseException | None) -> None:
        self.exc, self.done = exc, True
        self._lock.release()

    def exception(self) -> BaseException | None:
        if not self.done:
            self._lock.acquire()
            self._lock.release()
        return self.exc

    def result(self) -> None:
        exc = self.exception()
        if exc is not None:
            raise exc


class _CopyThread:
    """One daemon thread that runs ``fn(batch)`` for each submitted batch, in order. Batches
    submitted while it was busy run as one (their lists joined, when they share ``fn``): the
    gradients that backward produced meanwhile are reduced in one go, with one wake-up and a
    few GIL hand-offs rather than a few per tensor. (A ThreadPoolExecutor costs a future, a
    work item, locks and a wake-up for each submit.)"""

    def __init__(self, name: str):
        import queue

        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._empty = queue.Empty
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)
        self._thread.start()

    def submit(self, fn: Callable, batch: list) -> _Batch:
        done = _Batch()
        self._queue.put((fn, batch, done))
        return done

    def _work(self) -> None:
        q = self._queue
        while True:
            items = [q.get()]
            while True:  # what was handed over meanwhile runs with it
                try:
                    items.append(q.get_nowait())
                except self._empty:
                    break
            stop = items[-1] is None
            if stop:
                items.pop()
            runs: list = []  # (fn, joined batch, [_Batch])
            for fn, batch, done in items:
                if runs and runs[-1][0] is fn:
                    runs[-1][1].extend(batch)
                    runs[-1][2].append(done)
                else:
                    runs.append((fn, list(batch), [done]))
            for fn, batch, dones in runs:
                exc = None
                try:
                    fn(batch)
                except BaseException as e:  # noqa: BLE001 - raised where the batch is waited for
                    exc = e
                for d in dones:
                    d.finish(exc)
            if stop:
                return

    def shutdown(self) -> None:
        self._queue.put(None)
        self._thread.join()


class DeferredCopier:
    """Copies batches of :class:`Deferred` on one background thread, in the order started, so
    that waiting for the newest batch waits for all. ``copy_all`` (list of live tensors ->
    list of copies) runs on that thread."""

    THREAD_NAME = "smdebug-snapshot"

    def __init__(self, copy_all: Callable[[list], list]):
        self._copy_all = copy_all
        self._batch: list = []
        self._future = None
        self._pool: Any = None  # the copy thread (a _CopyThread), started with the first batch

    def defer(self, live, fn: Callable | None = None) -> Deferred:
        """A copy of ``live`` (or ``fn``'s result for it) to take on the copy thread with the next batch."""
        d = Deferred(live, fn)
        self._batch.append(d)
        return d

    def _run(self, batch) -> None:
        to_copy = [d for d in batch if d.fn is None]
        if len(to_copy) < len(batch):
            groups: dict = {}
            for d in batch:
                if d.fn is not None:
                    groups.setdefault(d.fn, []).append(d)
            for fn, ds in groups.items():  # reductions first: gradients' are waited for at the end of backward
                for d, r in zip(ds, fn([d.live for d in ds])):
                    d.copy, d.live = r, None
        copies = self._copy_all([d.live for d in to_copy]) if to_copy else []
        for d, c in zip(to_copy, copies):  # a copy is visible only once it is complete
            d.copy, d.live = c, None

    def start(self) -> None:
        """Hand the tensors deferred since the last start to the copy thread."""
        batch, self._batch = self._batch, []
        if not batch:
            return
        if self._pool is None:
            self._pool = _CopyThread(self.THREAD_NAME)
        future = self._future = self._pool.submit(self._run, batch)
        for d in batch:
            d.future = future

    def sync(self) -> None:
        """Wait until every started copy is taken. A failed copy is raised on the writer thread,
        which needs it; here it only must not be waited for twice. Tensors deferred but not yet
        started (a save cut short by an error) are started first, so that none is left uncopied."""
        if self._batch:
            self.start()
        f, self._future = self._future, None
        if f is not None:
            f.exception()

    def shutdown(self) -> None:
        self.sync()
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
