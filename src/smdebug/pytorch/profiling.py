"""PyTorch's event sites for the profiler (smdebug.profiler.Profiler): the hook makes a TorchProfiling
when profiling is configured and calls it at the step start; everything else is hooked here.

Events (phase / name):

* ``Step:ModeKeys.<MODE>`` — the whole iteration: from the data-loader fetch that precedes the
  model's forward call (or the forward call itself when no DataLoader feeds it) to the start of
  the next one; the last step of an epoch ends when the DataLoader is exhausted, or at
  ``hook.close()``. (1.0.34's step covered the forward pass only.)
* ``Forward`` / the model's class name — the registered model's forward call.
* ``Backward`` / ``<model>.backward`` — from the gradient of the model's output to the end of the
  autograd pass.
* ``Optimizer`` / ``<Optimizer class>.step`` — every ``optimizer.step()`` (torch's global hooks).
* Detailed profiling of the DetailedProfilingConfig steps: torch.profiler's trace beside ours
  (see profiling_detailed).
* ``DataLoaderWorker`` / ``worker`` — each batch a worker process builds, on the worker's own
  timeline (see profiling_workers).
* ``DataLoaderIterInitialize`` / ``<iterator class>.__init__`` (``num_workers``, ``pin_memory``) and
  ``DataLoaderIter`` / ``<iterator class>::GetNext`` (``worker_id``: the worker that produced the
  batch) — the names 1.0.34's readers and rules know from AWS's patched PyTorch; here they come
  from wrapping ``DataLoader._get_iterator`` and the iterators' ``__next__`` while a profiler is on.
"""

from __future__ import annotations

import functools
import logging
import threading

import torch
from torch.autograd import Variable
from torch.utils.data import dataloader as _dl

from smdebug.profiler.recording.timeline import now_us
from smdebug.pytorch import profiling_workers

__all__ = ["TorchProfiling"]

logger = logging.getLogger("smdebug")

_active: TorchProfiling | None = None  # the profiling that DataLoader events go to
_patch_lock = threading.Lock()
_originals: dict = {}


def _safe(method):
    """The hooks' error policy for torch callbacks: an error disables the profiler (logged once by
    the Profiler's guard, or here) and training goes on, unless errors propagate."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        p = self.profiler
        if p.disabled:
            return None
        try:
            return method(self, *args, **kwargs)
        except Exception:
            if p.propagate_errors:
                raise
            p.disabled = True
            logger.exception(
                "smdebug: profiler: an error in %s disabled profiling; training continues", method.__name__
            )
            return None

    return wrapper


def _install_dataloader_patch() -> None:
    with _patch_lock:
        if _originals:
            return
        get_iter = _dl.DataLoader._get_iterator
        next_ = _dl._BaseDataLoaderIter.__next__
        _originals["get_iter"], _originals["next"] = get_iter, next_

        def _get_iterator(loader):
            p = _active
            if p is None:
                return get_iter(loader)
            start = now_us()
            it = get_iter(loader)
            p.on_dataloader_init(it, loader, start, now_us())
            return it

        def __next__(it):
            p = _active
            if p is None:
                return next_(it)
            info = getattr(it, "_task_info", None)
            worker = info.get(getattr(it, "_rcvd_idx", None)) if isinstance(info, dict) else None
            start = now_us()
            try:
                batch = next_(it)
            except StopIteration:
                p.on_dataloader_exhausted(now_us())
                raise
            p.on_dataloader_next(it, start, now_us(), worker[0] if worker else None)
            return batch

        _dl.DataLoader._get_iterator = _get_iterator
        _dl._BaseDataLoaderIter.__next__ = __next__


def _remove_dataloader_patch() -> None:
    with _patch_lock:
        if _originals:
            _dl.DataLoader._get_iterator = _originals.pop("get_iter")
            _dl._BaseDataLoaderIter.__next__ = _originals.pop("next")


class TorchProfiling:
    """Turns a PyTorch hook's callbacks and torch's own hooks into profiler events."""

    def __init__(self, profiler):
        global _active
        self.profiler = profiler
        self._fetch_start = None  # start of the first batch fetch since the last step start
        self._fwd_start = None
        self._models: list = []
        self._handles: list = []
        self._opt_started: dict = {}
        self._fetches: list = []  # data-loader fetches waiting for the step they feed
        from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

        self._handles.append(register_optimizer_step_pre_hook(self._opt_pre))
        self._handles.append(register_optimizer_step_post_hook(self._opt_post))
        _active = self
        _install_dataloader_patch()
        self.detailed = None
        if profiler.config.detailed is not None and not profiler.config.disabled:
            from smdebug.pytorch.profiling_detailed import DetailedProfiling

            self.detailed = DetailedProfiling(
                profiler.root, profiler.node_id, profiler.config.detailed, on_file=profiler.file_done
            )
        t = profiler.timeline
        if t is not None:
            profiling_workers.enable(t.root, t.max_bytes, t.close_interval_s, t.open_fail_threshold)

    # ------------------------------------------------------------------ hook sites
    def register_module(self, module) -> None:
        """Forward and backward events of the hook's step model."""
        self._models.append(module)
        self._handles.append(module.register_forward_hook(self._forward_end))

    @_safe
    def step_start(self, mode, step: int) -> None:
        """The model's forward call starts step ``step`` of ``mode``."""
        t = now_us()
        start, self._fetch_start = self._fetch_start, None
        self.profiler.step_start(mode, step, start if start is not None else t)
        self._flush_fetches(step)
        if self.detailed is not None:
            self.detailed.boundary(step)
        self._fwd_start = now_us()

    def close(self) -> None:
        global _active
        try:
            self._flush_fetches(None)
            if self.detailed is not None:
                self.detailed.close()
        except Exception:  # noqa: BLE001 - closing goes on: the timeline must be finished
            logger.exception("smdebug: profiler: data-loader events or the detailed profile lost at close")
        for h in self._handles:
            h.remove()
        self._handles.clear()
        if _active is self:
            _active = None
            _remove_dataloader_patch()
            profiling_workers.disable()
        self.profiler.close()

    # ------------------------------------------------------------------ torch callbacks
    @_safe
    def _forward_end(self, module, inputs, output) -> None:
        start, self._fwd_start = self._fwd_start, None
        if start is None:  # a nested call of the model, or a call outside a step
            return
        p = self.profiler
        p.record("Forward", module._get_name(), start, now_us())
        p.phase_boundary("forwardpassend")
        out = output
        while isinstance(out, (list, tuple)) and out:
            out = out[0]
        if isinstance(out, dict):
            out = next(iter(out.values()), None)
        if isinstance(out, torch.Tensor) and out.requires_grad and torch.is_grad_enabled():
            name = f"{module._get_name()}.backward"
            out.register_hook(lambda grad: self._backward_start(name))

    @_safe
    def _backward_start(self, name: str):
        start = now_us()
        Variable._execution_engine.queue_callback(lambda: self.profiler.record("Backward", name, start, now_us()))

    @_safe
    def _opt_pre(self, optimizer, args, kwargs) -> None:
        self._opt_started[id(optimizer)] = now_us()

    @_safe
    def _opt_post(self, optimizer, args, kwargs) -> None:
        start = self._opt_started.pop(id(optimizer), None)
        if start is not None:
            self.profiler.record("Optimizer", f"{type(optimizer).__name__}.step", start, now_us())

    @_safe
    def on_dataloader_init(self, it, loader, start: int, end: int) -> None:
        name = f"{type(it).__name__}.__init__"
        if self.profiler.dataloader_wanted(name):
            self.profiler.record(
                "DataLoaderIterInitialize",
                name,
                start,
                end,
                {"num_workers": loader.num_workers, "pin_memory": bool(loader.pin_memory)},
            )

    @_safe
    def on_dataloader_next(self, it, start: int, end: int, worker_id) -> None:
        if self._fetch_start is None:
            self._fetch_start = start
        name = f"{type(it).__name__}::GetNext"
        if self.profiler.dataloader_wanted(name):
            # recorded when the step the batch is for starts, with that step's number
            self._fetches.append((name, start, end, worker_id))

    @_safe
    def on_dataloader_exhausted(self, t: int) -> None:
        """The epoch's data ran out: the last step ends here (not at the next epoch's first step)."""
        self._flush_fetches(None)
        self._fetch_start = None
        self.profiler.step_end(t)
        if self.detailed is not None:
            self.detailed.boundary(None)

    def _flush_fetches(self, step) -> None:
        fetches, self._fetches = self._fetches, []
        for name, start, end, worker_id in fetches:
            args = {"worker_id": worker_id} if worker_id is not None else {}
            if step is not None:
                args["step_num"] = str(step)
            self.profiler.record("DataLoaderIter", name, start, end, args)


def profiling_for(hook, config) -> TorchProfiling | None:
    """The hook's profiling: ``config`` (a ProfilerConfig), else the profiler config file
    ($SMPROFILER_CONFIG_PATH or SageMaker's), else None (nothing recorded, nothing hooked)."""
    from smdebug.profiler.recording.session import profiler_for_hook

    d = torch.distributed
    rank = d.get_rank() if d.is_available() and d.is_initialized() else None
    profiler = profiler_for_hook(config, hook.out_dir, "pytorch", rank)
    return TorchProfiling(profiler) if profiler is not None else None
