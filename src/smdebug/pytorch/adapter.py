"""Torch tensors for the hook: copies and reductions with torch ops on the tensor's own device,
one batched device-to-host copy per step."""

from __future__ import annotations

import threading
from collections import defaultdict

import numpy as np
import torch

from smdebug.core.adapter import NumpyAdapter

__all__ = ["TorchAdapter"]

_LOW_PRECISION = (torch.float16, torch.bfloat16)


class _Buffers:
    """Reused host buffers for copies of large CPU tensors: allocating fresh megabytes every
    step costs page faults that cost more than the copy itself. A buffer comes back once the
    writer thread is done with the step that used it."""

    MIN_NUMEL = 1 << 14
    KEEP = 8  # buffers kept per (shape, dtype)

    def __init__(self):
        self._free: dict = {}
        self._lent: set = set()
        self._lock = threading.Lock()

    def copy(self, t: torch.Tensor) -> torch.Tensor:
        if t.device.type != "cpu" or t.numel() < self.MIN_NUMEL:
            return t.clone()
        return self.copy_like(t).copy_(t)

    def abs(self, t: torch.Tensor) -> torch.Tensor:
        if t.device.type != "cpu" or t.numel() < self.MIN_NUMEL or t.is_complex():
            return t.abs()
        buf = self.copy_like(t)
        return torch.abs(t, out=buf)

    def copy_like(self, t: torch.Tensor) -> torch.Tensor:
        key = (tuple(t.shape), t.dtype)
        with self._lock:
            free = self._free.get(key)
            buf = free.pop() if free else None
            if buf is None:
                buf = torch.empty(key[0], dtype=t.dtype)
            self._lent.add(id(buf))
        return buf

    def give_back(self, tensors) -> None:
        with self._lock:
            for t in tensors:
                if isinstance(t, torch.Tensor) and id(t) in self._lent:
                    self._lent.discard(id(t))
                    free = self._free.setdefault((tuple(t.shape), t.dtype), [])
                    if len(free) < self.KEEP:
                        free.append(t)


_buffers = _Buffers()


def _copy_all(batch) -> None:
    copies, pooled_dst, pooled_src = [], [], []
    for d in batch:
        t = d.live
        if t.device.type == "cpu" and t.numel() >= _Buffers.MIN_NUMEL:
            copies.append(_buffers.copy_like(t))
            pooled_dst.append(copies[-1])
            pooled_src.append(t)
        else:
            copies.append(_buffers.copy(t))
    if pooled_dst:  # one call (one release of the GIL) for all the large copies
        torch._foreach_copy_(pooled_dst, pooled_src)
    for d, c in zip(batch, copies):  # a copy is visible only once it is complete
        d.copy, d.live = c, None


def _to_numpy(t: torch.Tensor) -> np.ndarray:
    if t.dtype == torch.bfloat16:
        import ml_dtypes

        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


class _Deferred:
    """A copy of a live tensor that the snapshot thread takes while the model runs forward and
    backward; the hook waits for it before anything can change the tensor (the optimizer's step,
    the end of backward, the next step)."""

    __slots__ = ("live", "copy", "future")

    def __init__(self, live):
        self.live, self.copy, self.future = live, None, None

    def result(self):
        if self.copy is None:
            self.future.result()
        return self.copy


class _Reduction:
    """A reduction to compute later from a snapshot."""

    __slots__ = ("src", "op", "abs")

    def __init__(self, src, op, is_abs):
        self.src, self.op, self.abs = src, op, is_abs


class _Stats:
    """Reductions of one tensor, each computed by the torch op of that name (so the values are
    exactly torch's), sharing what can be shared: min and max in one pass, |t| computed once."""

    def __init__(self, t: torch.Tensor):
        if t.dtype in _LOW_PRECISION or not (t.is_floating_point() or t.is_complex()):
            t = t.float()
        self.t = t
        self._cache: dict = {}
        self._abs = None

    def get(self, op: str, is_abs: bool):
        key = (op, is_abs)
        c = self._cache
        if key in c:
            return c[key]
        if is_abs:
            if self._abs is None:
                self._abs = _Stats(_buffers.abs(self.t))
            c[key] = self._abs.get(op, False)
            return c[key]
        t = self.t
        if op in ("min", "max"):
            c[("min", False)], c[("max", False)] = torch.aminmax(t)
        elif op in _OPS:
            c[key] = _OPS[op](t)
        else:
            from smdebug.exceptions import SMDebugValueError

            raise SMDebugValueError(f"Invalid reduction {op!r}")
        return c[key]


_OPS = {
    "mean": torch.Tensor.mean,
    "std": torch.Tensor.std,
    "variance": torch.Tensor.var,
    "sum": torch.Tensor.sum,
    "prod": torch.Tensor.prod,
    "l1": lambda t: torch.linalg.vector_norm(t, ord=1),
    "l2": lambda t: torch.linalg.vector_norm(t, ord=2),
}


class TorchAdapter(NumpyAdapter):
    def __init__(self):
        self.deferring = False  # set by the hook while it saves parameters at a step's start
        self._batch: list = []
        self._future = None
        self._pool = None

    def start_deferred(self) -> None:
        """Copy the tensors snapshotted while ``deferring`` on the snapshot thread. Batches are
        copied in the order they are started (one snapshot thread), so waiting for the newest
        waits for all."""
        batch, self._batch = self._batch, []
        if not batch:
            return
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="smdebug-snapshot")
        future = self._future = self._pool.submit(_copy_all, batch)
        for d in batch:
            d.future = future

    def sync(self) -> None:
        """Wait until every deferred copy is taken (training thread only). A failed copy is
        raised by the writer thread, which needs it; here it only must not be waited for twice."""
        f, self._future = self._future, None
        if f is not None:
            f.exception()

    def shutdown(self) -> None:
        self.sync()
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def snapshot(self, value):
        if isinstance(value, torch.Tensor):
            if self.deferring:
                d = _Deferred(value.detach())
                self._batch.append(d)
                return d
            # a copy on the same device: the optimizer may change the tensor before the step ends
            return _buffers.copy(value.detach())
        return super().snapshot(value)

    def reductions_need_snapshot(self, value) -> bool:
        # on the CPU a copy is cheaper than the reductions: they run later on the writer thread
        # (computed on the snapshot thread from the live tensors instead, they hold training up
        # for longer: measured 1.5x against 1.24x); on an accelerator they run right away, on
        # the device
        return isinstance(value, torch.Tensor) and value.device.type == "cpu"

    def reductions(self, value, snap, ops) -> list:
        if not isinstance(value, torch.Tensor):
            return super().reductions(value, snap, ops)
        if value.device.type == "cpu" or isinstance(snap, _Deferred):
            src = snap if snap is not None else _buffers.copy(value.detach())
            return [_Reduction(src, op, is_abs) for op, is_abs in ops]
        stats = _Stats(value.detach())
        return [stats.get(op, is_abs) for op, is_abs in ops]

    def shape(self, value) -> tuple:
        return tuple(value.shape) if isinstance(value, torch.Tensor) else super().shape(value)

    def size(self, value) -> int:
        return value.numel() if isinstance(value, torch.Tensor) else super().size(value)

    def is_bool(self, value) -> bool:
        return value.dtype == torch.bool if isinstance(value, torch.Tensor) else super().is_bool(value)

    def release(self, objs) -> None:
        """The writer is done with a step: its copies go back to the buffer pool."""
        _buffers.give_back(objs)

    def materialize(self, objs: list, held: list | None = None) -> list:
        out: list = [None] * len(objs)
        scalars = defaultdict(list)  # (device, dtype) -> indices of 0-d tensors (reductions)
        device_tensors = defaultdict(list)  # accelerator tensors, copied in one go per dtype
        stats: dict = {}
        for i, o in enumerate(objs):  # runs on the writer thread: wait for each copy it needs
            if isinstance(o, _Deferred):
                o = objs[i] = o.result()
            elif isinstance(o, _Reduction) and isinstance(o.src, _Deferred):
                o.src = o.src.result()
            if isinstance(o, _Reduction):
                st = stats.get(id(o.src))
                if st is None:
                    st = stats[id(o.src)] = _Stats(o.src)
                    if held is not None:
                        held.append(o.src)
                o = objs[i] = st.get(o.op, o.abs)
            elif held is not None and isinstance(o, torch.Tensor):
                held.append(o)
            if not isinstance(o, torch.Tensor):
                out[i] = np.asarray(o)
            elif o.dim() == 0:
                scalars[(o.device, o.dtype)].append(i)
            elif o.device.type != "cpu":
                device_tensors[(o.device, o.dtype)].append(i)
            else:
                out[i] = _to_numpy(o)
        if held is not None:
            held.extend(st._abs.t for st in stats.values() if st._abs is not None)
        for idx in scalars.values():  # one stack and one host copy; 0-d views of it
            host = _to_numpy(torch.stack([objs[i] for i in idx]).cpu())
            for j, i in enumerate(idx):
                out[i] = host[j, ...]
        for idx in device_tensors.values():
            flat = torch.cat([objs[i].reshape(-1) for i in idx]).cpu()
            offset = 0
            for i in idx:
                n = objs[i].numel()
                out[i] = _to_numpy(flat[offset : offset + n]).reshape(tuple(objs[i].shape))
                offset += n
        return out
