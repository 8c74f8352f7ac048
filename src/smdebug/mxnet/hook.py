"""smdebug.mxnet.Hook: glue between MXNet Gluon blocks and the framework-agnostic BaseHook."""

from __future__ import annotations

import importlib.util
import logging
import weakref
from typing import Any

import mxnet as mx
from mxnet.gluon.parameter import DeferredInitializationError

from smdebug.core.config.collection import CollectionKeys
from smdebug.core.engine.arguments import instance_check
from smdebug.core.engine.guard import guarded
from smdebug.core.engine.hook import BaseHook
from smdebug.core.output.locations import CHIEF_WORKER, worker_name
from smdebug.exceptions import TrainingStopRequested
from smdebug.mxnet.adapter import MXNetAdapter
from smdebug.mxnet.collection import MXNET_COLLECTIONS

__all__ = ["Hook", "CollectionKeys"]

logger = logging.getLogger("smdebug")


def _horovod() -> tuple[int, int] | None:
    """(rank, size) of an initialised horovod.mxnet, else None."""
    if importlib.util.find_spec("horovod") is None:
        return None
    try:
        import horovod.mxnet as hvd

        return (hvd.rank(), hvd.size()) if hvd.size() else None
    except (ImportError, ValueError):  # not built for MXNet, or not initialised
        return None


def _kvstore(params: Any) -> tuple[int, int] | None:
    """(rank, num_workers) of the distributed kvstore of the Trainer of ``params``, else None.
    A Trainer creates its kvstore at its first step."""
    for p in params:
        trainer = getattr(p, "_trainer", None)
        if isinstance(trainer, weakref.ref):
            trainer = trainer()
        kv = getattr(trainer, "_kvstore", None)
        if kv is not None and "dist" in kv.type:
            return kv.rank, kv.num_workers
    return None


def _initialized(param: Any) -> bool:
    """Whether ``param`` has values (a Dense layer without ``in_units`` gets them at its first forward)."""
    try:
        param.data(param.list_ctx()[0])
    except DeferredInitializationError:
        return False
    return True


def _data(param: Any) -> Any:
    return param.data(param.list_ctx()[0])


def _grad(param: Any) -> Any:
    return param.grad(param.list_ctx()[0])


class Hook(BaseHook):
    """Saves an MXNet Gluon model's tensors while it trains.

    ``hook.register_block(net)`` makes every forward call of ``net`` a step: its parameters are
    saved when the step starts (the values this step's forward uses), block inputs and outputs
    as blocks run, gradients when the step ends (the next forward, ``set_mode`` or ``close``:
    what backward computed, read with ``param.grad()``; only for a forward run under
    ``autograd.record()``). ``hook.register_loss(loss_fn)`` (or ``register_block``) saves the
    loss. When a rule asks training to stop, the next forward call raises TrainingStopRequested.

    Hybridized blocks run as one graph: their sub-blocks' hooks do not fire, so only the
    registered block's own inputs and outputs, the parameters, gradients and losses are saved.
    """

    collection_defaults = MXNET_COLLECTIONS
    make_adapter = MXNetAdapter
    adapter: MXNetAdapter

    def _configure(self, options: Any) -> None:
        super()._configure(options)
        self._step_block = None
        self._models: list = []  # registered blocks whose parameters are saved
        self._handles: list = []
        self._late_params: list = []  # deferred-initialised parameters, saved after the first forward
        self._recording = False  # the current step's forward ran under autograd.record()
        self.has_registered_block = False
        self.has_registered_loss_module = False

    # ---------------------------------------------------------------- workers
    def _rank_and_size(self) -> tuple[int, int] | None:
        return _horovod() or _kvstore(self._params().values() if hasattr(self, "_models") else ())

    def _get_worker_name(self) -> str:
        rs = self._rank_and_size()
        return worker_name(rs[0]) if rs is not None else CHIEF_WORKER

    def _get_num_workers(self) -> int:
        rs = self._rank_and_size()
        return rs[1] if rs is not None else 1

    def _is_tensor(self, value: Any) -> bool:
        return isinstance(value, mx.nd.NDArray)  # not the Symbols of a hybridized graph being built

    def _params(self) -> dict:
        """name -> Parameter of the registered models (a parameter shared by two of them once)."""
        return {p.name: p for m in self._models for p in m.collect_params().values()}

    # ---------------------------------------------------------------- registration
    @guarded(check=instance_check("register_block", "block", mx.gluon.Block, "an mxnet.gluon.Block"))
    def register_block(self, block: Any) -> None:
        """Register a Gluon block: a model (each forward call a step) or a loss."""
        if block in self._module_names:
            logger.warning("smdebug: the hook is already registered to block %s", block.name)
            return
        if isinstance(block, mx.gluon.loss.Loss):
            self._register_forward(block)
            self.has_registered_loss_module = True
            return
        if self._step_block is None:
            self._step_block = block
            self._handles.append(block.register_forward_pre_hook(self._forward_pre_hook))
        self._models.append(block)
        block.apply(self._register_forward)
        self.has_registered_block = True

    register_hook = register_block

    @guarded(check=instance_check("register_loss", "loss_block", mx.gluon.Block, "an mxnet.gluon.Block"))
    def register_loss(self, loss_block: Any) -> None:
        """Register a loss block (e.g. ``gluon.loss.SoftmaxCrossEntropyLoss()``): its output is a loss."""
        if loss_block in self._module_names:
            logger.warning("smdebug: the hook is already registered to block %s", loss_block.name)
            return
        self._register_forward(loss_block)
        self.has_registered_loss_module = True

    def _register_forward(self, block: Any) -> None:
        if block not in self._module_names:
            self._module_names[block] = block.name
            self._handles.append(block.register_forward_hook(self._forward_hook))

    # ---------------------------------------------------------------- callbacks
    def _forward_pre_hook(self, block: Any, inputs: Any) -> Any:
        self._end_of_step()
        req = self.stop_requested()  # outside the guard: it must reach the training loop
        if req is not None:
            raise TrainingStopRequested(req.rule, req.step, req.reason)
        self._start_step()

    @guarded()
    def _end_of_step(self) -> None:
        """The step's gradients (what its backward computed), then its values to the host."""
        if self._recording and self.step >= 0 and self.saving_this_step():
            for name, p in self._params().items():
                if p.grad_req != "null" and _initialized(p):
                    self._save_for_tensor(self.GRADIENT_PREFIX + name, _grad(p))
        self._recording = False
        self.adapter.sync()

    @guarded()
    def _start_step(self) -> None:
        if self._writer is None:  # a Trainer's distributed kvstore exists from its first step on
            self.worker = self._get_worker_name()
        self._begin_step()
        self._recording = mx.autograd.is_recording()
        self._late_params = []
        if self.saving_this_step():
            ready: list[Any] = []
            for p in self._params().values():
                (ready if _initialized(p) else self._late_params).append(p)
            self._save_deferred((p.name, _data(p)) for p in ready)

    @guarded()
    def _forward_hook(self, block: Any, inputs: Any, outputs: Any) -> Any:
        if self.step < 0 or not self.saving_this_step():
            return
        if block is self._step_block and self._late_params:  # initialised by this forward
            late, self._late_params = self._late_params, []
            self._save_deferred((p.name, _data(p)) for p in late if _initialized(p))
        name = self._module_names.get(block)
        if name is not None:
            self._write_indexed(name, inputs, self.INPUT_TENSOR_SUFFIX)
            self._write_indexed(name, outputs, self.OUTPUT_TENSOR_SUFFIX)

    # ---------------------------------------------------------------- modes and the end
    def set_mode(self, mode: Any) -> None:
        self._end_of_step()  # the gradients belong to the step that ends with the mode
        super().set_mode(mode)

    def close(self) -> None:
        if not self._closed:
            self._end_of_step()
        super().close()
        for h in self._handles:
            h.detach()
        self._handles.clear()
