"""smdebug.pytorch.Hook: glue between torch.nn modules and the framework-agnostic BaseHook."""

from __future__ import annotations

import inspect
import logging
import weakref

import torch

from smdebug.core.arguments import check_type
from smdebug.core.collection import CollectionKeys
from smdebug.core.guard import guarded
from smdebug.core.hook import BaseHook
from smdebug.core.hook_options import options_signature
from smdebug.core.locations import CHIEF_WORKER, worker_name
from smdebug.exceptions import TrainingStopRequested
from smdebug.pytorch.adapter import TorchAdapter
from smdebug.pytorch.collection import PYTORCH_COLLECTIONS
from smdebug.pytorch.profiling import profiling_for

__all__ = ["Hook", "CollectionKeys"]

logger = logging.getLogger("smdebug")


def _dist():
    d = getattr(torch, "distributed", None)
    return d if d is not None and d.is_available() and d.is_initialized() else None


def _sync_ref(ref) -> None:
    """Before any optimizer step: the parameter copies of the current step must be complete."""
    hook = ref()
    if hook is not None:
        hook.adapter.sync()


def _end_of_backward(ref) -> None:
    hook = ref()
    if hook is not None:
        hook._backward_callback = False
        hook.adapter.sync()


def _queue_end_of_backward(ref) -> None:
    from torch.autograd import Variable

    Variable._execution_engine.queue_callback(lambda: _end_of_backward(ref))


class Hook(BaseHook):
    """Saves a PyTorch model's tensors while it trains.

    ``hook.register_module(model)`` makes every forward call of the model a step: weights and
    biases are saved when the step starts, gradients when backward computes them, layer inputs
    and outputs as modules run; ``hook.register_loss(loss_fn)`` saves the loss. When a rule asks
    training to stop, the next forward call of the model raises TrainingStopRequested.
    """

    collection_defaults = PYTORCH_COLLECTIONS
    make_adapter = TorchAdapter

    def __init__(self, *args, profiler_config=None, **kwargs):
        self._profiler_config = profiler_config  # a smdebug.profiler.ProfilerConfig, or None: the config file
        super().__init__(*args, **kwargs)

    __init__.__signature__ = options_signature(
        (inspect.Parameter("profiler_config", inspect.Parameter.KEYWORD_ONLY, default=None),))

    def _configure(self, options) -> None:
        super()._configure(options)
        self.profiling = profiling_for(self, getattr(self, "_profiler_config", None))
        self._tops: list = []  # (name prefix, module) of registered models
        self._step_module = None
        self._handles: list = []
        self.has_registered_module = False
        self._backward_callback = False  # an end-of-backward callback is queued
        self._opt_handle = None
        self.has_registered_loss_module = False

    # ---------------------------------------------------------------- distributed
    def _get_worker_name(self) -> str:
        d = _dist()
        return worker_name(d.get_rank()) if d is not None else CHIEF_WORKER

    def _get_num_workers(self) -> int:
        d = _dist()
        return d.get_world_size() if d is not None else 1

    def _is_tensor(self, value) -> bool:
        return isinstance(value, torch.Tensor)

    # ---------------------------------------------------------------- registration
    @guarded(check=lambda self, module: check_type("register_module", "module", module, torch.nn.Module,
                                                   "a torch.nn.Module"))
    def register_module(self, module) -> None:
        """Register a model (or a model wrapped by torch.compile / DistributedDataParallel)."""
        inner = getattr(module, "_orig_mod", None)  # torch.compile's OptimizedModule
        compiled = isinstance(inner, torch.nn.Module)
        model = inner if compiled else module
        top = model._get_name()
        self._name_modules(top, model, model.named_modules())
        self._tops.append((top, model))
        if self._step_module is None:
            self._step_module = module
            self._handles.append(module.register_forward_pre_hook(self._forward_pre_hook))
            if self.profiling is not None:
                self.profiling.register_module(module)
        if compiled:
            logger.info("smdebug: %s is compiled; its layers' inputs and outputs are not captured", top)
        else:
            for sub in model.modules():
                self._handles.append(sub.register_forward_hook(self._forward_hook))
        for pname, p in model.named_parameters():
            if p.requires_grad:  # frozen parameters have no gradient to save
                self._handles.append(p.register_post_accumulate_grad_hook(self._grad_hook(f"{top}_{pname}")))
        if self._opt_handle is None:
            from torch.optim.optimizer import register_optimizer_step_pre_hook

            ref = weakref.ref(self)
            self._opt_handle = register_optimizer_step_pre_hook(lambda *_: _sync_ref(ref))
        self.has_registered_module = True

    register_hook = register_module

    @guarded(check=lambda self, loss_module: check_type("register_loss", "loss_module", loss_module,
                                                        torch.nn.Module, "a torch.nn.Module"))
    def register_loss(self, loss_module) -> None:
        """Register a loss module (e.g. ``nn.CrossEntropyLoss()``): its output is saved as a loss."""
        self._module_names[loss_module] = loss_module._get_name()
        self._handles.append(loss_module.register_forward_hook(self._forward_hook))
        self.has_registered_loss_module = True

    # ---------------------------------------------------------------- callbacks
    def _forward_pre_hook(self, module, inputs):
        req = self.stop_requested()  # outside the guard: it must reach the training loop
        if req is not None:
            raise TrainingStopRequested(req.rule, req.step, req.reason)
        self._start_step()
        if self.profiling is not None:
            self.profiling.step_start(self.mode, self.mode_steps[self.mode])

    @guarded()
    def _start_step(self) -> None:
        self.adapter.sync()
        if self.step == self.init_step:
            self.worker = self._get_worker_name()  # torch.distributed may start after the hook
        self._begin_step()
        self._backward_callback = False
        if self.saving_this_step():
            # parameters are copied on the copy thread while forward and backward run; the
            # copies are complete before the optimizer (or anything after backward) changes them
            self._save_deferred((f"{top}_{pname}", p) for top, model in self._tops
                                for pname, p in model.named_parameters())

    @guarded()
    def _forward_hook(self, module, inputs, outputs):
        if self.step < 0 or not self.saving_this_step():
            return
        name = self._module_names.get(module)
        if name is None:
            return
        self._write_indexed(name, inputs, self.INPUT_TENSOR_SUFFIX)
        self._write_indexed(name, outputs, self.OUTPUT_TENSOR_SUFFIX)

    def _grad_hook(self, pname: str):
        tname = self.GRADIENT_PREFIX + pname

        @guarded()
        def on_grad(hook, param):
            if not hook._backward_callback:  # the first gradient of a backward pass
                # the parameters may still be being copied on the copy thread: the copies
                # must be complete when backward ends, before a manual update or the next backward
                hook._backward_callback = True
                _queue_end_of_backward(ref)
                hook.open_writer_gate()  # backward runs in C++: the writer's turn (measured 1.13x -> 1.08x)
            if hook.step >= 0 and param.grad is not None and hook.saving_this_step():
                # copied right here: copying on the copy thread while backward goes on
                # measured slower (the threads hand the GIL back and forth at every gradient);
                # reductions go to the copy thread, complete when backward ends (_end_of_backward)
                hook.adapter.begin_deferred(copies=False)
                try:
                    hook._save_for_tensor(tname, param.grad)
                finally:
                    hook.adapter.end_deferred()

        ref = weakref.ref(self)

        def call(param):
            hook = ref()
            if hook is not None:
                on_grad(hook, param)

        return call

    @guarded(check=lambda self, tensor_name, tensor_value: check_type(
        f"record_tensor_value({tensor_name!r})", "tensor_value", tensor_value, torch.Tensor, "a torch.Tensor"))
    def record_tensor_value(self, tensor_name: str, tensor_value) -> None:
        """Save a tensor computed outside a module (e.g. ``F.mse_loss(...)``) as '<name>_output_<i>'."""
        if self.step >= 0 and self.saving_this_step():
            self._write_indexed(tensor_name, tensor_value, self.OUTPUT_TENSOR_SUFFIX)

    def close(self) -> None:
        super().close()
        if self.profiling is not None:
            self.profiling.close()
            self.profiling = None
        if self._opt_handle is not None:
            self._opt_handle.remove()
            self._opt_handle = None
        for h in self._handles:
            h.remove()
        self._handles.clear()
