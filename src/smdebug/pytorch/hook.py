"""smdebug.pytorch.Hook: glue between torch.nn modules and the framework-agnostic BaseHook."""

from __future__ import annotations

import logging
import math
import weakref
from dataclasses import dataclass
from typing import Any

import torch

from smdebug.core.config.collection import CollectionKeys
from smdebug.core.config.hook_options import HookOptions, hook_init
from smdebug.core.engine.arguments import check_type, instance_check
from smdebug.core.engine.guard import guarded
from smdebug.core.engine.hook import BaseHook
from smdebug.core.engine.nonfinite import LateChecks
from smdebug.core.output.locations import CHIEF_WORKER, worker_name
from smdebug.core.output.ranks import env_rank
from smdebug.exceptions import TrainingStopRequested
from smdebug.pytorch.adapter import TorchAdapter
from smdebug.pytorch.collection import PYTORCH_COLLECTIONS
from smdebug.pytorch.grad_capture import CaptureCheck
from smdebug.pytorch.profiling import profiling_for
from smdebug.pytorch.sharded import ShardedTensors, is_dtensor, is_fsdp_module, plain_class_name

__all__ = ["Hook", "CollectionKeys"]

logger = logging.getLogger("smdebug")


def _dist() -> Any:
    d = getattr(torch, "distributed", None)
    return d if d is not None and d.is_available() and d.is_initialized() else None


def _sync_ref(ref: Any) -> None:
    """Before any optimizer step: the parameter copies of the current step must be complete."""
    hook = ref()
    if hook is not None:
        hook._sync_captures()


def _end_of_backward(ref: Any) -> None:
    hook = ref()
    if hook is not None:
        hook._backward_callback = False
        hook._sync_captures()


def _queue_end_of_backward(ref: Any) -> None:
    torch.autograd.Variable._execution_engine.queue_callback(lambda: _end_of_backward(ref))


@dataclass(kw_only=True)
class TorchHookOptions(HookOptions):
    """The PyTorch hook's options: every hook's, and its own (keyword-only)."""

    profiler_config: Any = None
    gather_sharded: bool = False


@dataclass
class LateCheck:
    """A CUDA loss's finiteness, computed on the device and copied to pinned memory without a sync:
    read at a later step boundary once ``event`` has passed (the non-finite watch on a GPU)."""

    name: str
    step: int
    flag: torch.Tensor  # a pinned bool scalar
    event: Any  # torch.cuda.Event recorded after the copy

    def ready(self) -> bool:
        return bool(self.event.query())

    def finite(self) -> bool:
        return bool(self.flag.item())


_PLAIN = (torch.Tensor, torch.nn.Parameter)  # the exact types that are no DTensor


class Hook(BaseHook):
    """Saves a PyTorch model's tensors while it trains.

    ``hook.register_module(model)`` makes every forward call of the model a step: weights and
    biases are saved when the step starts, gradients when backward computes them, layer inputs
    and outputs as modules run; ``hook.register_loss(loss_fn)`` saves the loss. When a rule asks
    training to stop, the next forward call of the model raises TrainingStopRequested.

    Sharded models (FSDP2 ``fully_shard``, DTensor parameters) keep the unsharded model's names;
    ``gather_sharded`` chooses between each rank's shard (False) and the whole tensor gathered on
    save steps and saved by rank 0 (True): see :mod:`smdebug.pytorch.sharded`.

    :param gather_sharded: for sharded parameters (FSDP2, DTensor): False saves each rank's shard
        with its shard metadata; True gathers the whole tensor on save steps and rank 0 saves it
    """

    collection_defaults = PYTORCH_COLLECTIONS
    make_adapter = TorchAdapter

    @hook_init(TorchHookOptions)
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        o = TorchHookOptions.from_call(type(self).__name__, args, kwargs)
        check_type("Hook", "gather_sharded", o.gather_sharded, bool, "True or False")
        self._profiler_config = o.profiler_config  # a smdebug.profiler.ProfilerConfig, or None: the config file
        self._gather_sharded = o.gather_sharded
        super().__init__(**o.kwargs())

    def _configure(self, options: Any) -> None:
        super()._configure(options)
        self.profiling = profiling_for(self, getattr(self, "_profiler_config", None))
        self._tops: list = []  # (name prefix, module) of registered models
        self._copy_now: set = set()  # id() of registered models whose parameters are not copied deferred
        self._step_module = None
        self._handles: list = []
        self.has_registered_module = False
        self._backward_callback = False  # an end-of-backward callback is queued
        self._opt_handle = None
        self.has_registered_loss_module = False
        self._sharded = ShardedTensors(getattr(self, "_gather_sharded", False))
        # smdebug.integrations: the trainer starts the steps of these modes (a step is an
        # optimizer step under gradient accumulation) and gradients are saved before the optimizer step
        self._steps_by_trainer: frozenset = frozenset()
        self._grads_by_trainer = False
        # smdebug.integrations: the trainer callbacks' shared driver (integrations._common.TrainerHook);
        # at close and on a stop request, its release() writes the TRAIN step it holds open
        self.trainer_driver: Any = None
        self._loss_modules: weakref.WeakSet = weakref.WeakSet()  # registered losses: the non-finite watch reads them
        self._late_losses = LateChecks(self.nonfinite, 4)  # CUDA losses whose check is read a step late
        self._capture = CaptureCheck(self)  # a capture of a tensor changed meanwhile is dropped (grad_capture.py)
        self._late_group_warned = False  # see _check_late_group

    # ---------------------------------------------------------------- distributed
    # The process group's rank and size; without one (yet), the launcher's (torchrun's $RANK and
    # $WORLD_SIZE, else MPI's, Slurm's: core.output.ranks), else worker_0 of 1. The name is read
    # when the hook is made and again at its first step (_start_step): a group started in between
    # wins; one started later keeps the name (a warning if its rank is another).
    def _get_worker_name(self) -> str:
        d = _dist()
        if d is not None:
            return worker_name(d.get_rank())
        launched = env_rank()
        return worker_name(launched.rank) if launched is not None else CHIEF_WORKER

    def _get_num_workers(self) -> int:
        d = _dist()
        if d is not None:
            self._check_late_group(d)
            return d.get_world_size()
        launched = env_rank()
        return launched.world_size if launched is not None else 1

    def _check_late_group(self, d: Any) -> None:
        """A process group started after the first step, whose rank is not the one the hook named
        this worker by: say so once (the saved steps keep the name)."""
        name = worker_name(d.get_rank())
        if self.step > self.init_step and self.worker != name and not self._late_group_warned:
            self._late_group_warned = True
            logger.warning(
                "smdebug: torch.distributed started after the hook's first step, as rank %s of %s, but "
                "this process saves as %s (the rank it had then); start the process group before the "
                "first step, or launch with torchrun (which sets $RANK)",
                d.get_rank(),
                d.get_world_size(),
                self.worker,
            )

    def _is_tensor(self, value: Any) -> bool:
        return isinstance(value, torch.Tensor)

    # ---------------------------------------------------------------- registration
    @guarded(check=instance_check("register_module", "module", torch.nn.Module, "a torch.nn.Module"))
    def register_module(self, module: Any) -> None:
        """Register a model (or a model wrapped by torch.compile / DistributedDataParallel)."""
        inner = getattr(module, "_orig_mod", None)  # torch.compile's OptimizedModule
        compiled = isinstance(inner, torch.nn.Module)
        model: Any = inner if compiled else module
        top = plain_class_name(model)  # FSDP2's FSDP<Class>: the unsharded model's names
        self._name_modules(top, model, model.named_modules())
        self._tops.append((top, model))
        if any(getattr(p, "_fsdp_flattened", False) for p in model.parameters()):  # FSDP1 manages them
            self._copy_now.add(id(model))
        if self._step_module is None:
            self._step_module = module
            # before FSDP2's own pre-forward hook, which swaps the root's sharded parameters for whole ones
            self._handles.append(
                module.register_forward_pre_hook(self._forward_pre_hook, prepend=is_fsdp_module(model))
            )
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

    @guarded(check=instance_check("register_loss", "loss_module", torch.nn.Module, "a torch.nn.Module"))
    def register_loss(self, loss_module: Any) -> None:
        """Register a loss module (e.g. ``nn.CrossEntropyLoss()``): its output is saved as a loss, and
        watched every step: its first NaN or infinite value saves that step and the next few in full."""
        self._module_names[loss_module] = loss_module._get_name()
        self._loss_modules.add(loss_module)
        self._handles.append(loss_module.register_forward_hook(self._forward_hook))
        self.has_registered_loss_module = True

    # ---------------------------------------------------------------- callbacks
    def _forward_pre_hook(self, module: Any, inputs: Any) -> Any:
        self.start_step()

    def start_step(self) -> None:
        """Begin a step now, as the registered model's forward pre-hook does at each forward: for code
        that registers the model from inside its first forward call (a pre-hook added while the
        module's hooks run fires from its next call only). Raises TrainingStopRequested when a rule
        asked training to stop."""
        req = self.stop_requested()  # outside the guard: it must reach the training loop
        if req is not None:
            raise TrainingStopRequested(req.rule, req.step, req.reason)
        if self.mode in self._steps_by_trainer:
            return
        self._start_step()
        if self.profiling is not None:
            self.profiling.step_start(self.mode, self.mode_steps[self.mode])

    def drive_steps_by_trainer(self, modes: Any) -> None:
        """For trainer integrations (smdebug.integrations): in ``modes``, a forward call of the
        model starts no step (:meth:`begin_trainer_step` does) and gradients are saved when
        :meth:`save_gradients` is called (before the optimizer step: the accumulated gradient)."""
        self._steps_by_trainer = frozenset(modes)
        self._grads_by_trainer = True

    def begin_trainer_step(self, mode_step: int | None = None) -> None:
        """Start a step in the current mode; ``mode_step`` (the trainer's count) numbers it."""
        if mode_step is not None and mode_step > self.mode_steps[self.mode]:
            self.mode_steps[self.mode] = mode_step - 1  # the step the trainer counts (a resumed run)
        self._start_step()
        if self.profiling is not None:
            self.profiling.step_start(self.mode, self.mode_steps[self.mode])

    @guarded()
    def save_gradients(self) -> None:
        """Save the registered models' gradients as they are now (see drive_steps_by_trainer)."""
        if self.step < 0 or not self.saving_this_step():
            return
        pairs = (
            (self.GRADIENT_PREFIX + f"{top}_{pname}", p.grad)
            for top, model in self._tops
            for pname, p in model.named_parameters()
            if p.grad is not None
        )
        for name, value in self._unsharded(pairs):
            self._save_for_tensor(name, value)

    @guarded()
    def _start_step(self) -> None:
        self.adapter.sync()
        if self.step == self.init_step:
            self.worker = self._get_worker_name()  # torch.distributed may start after the hook
        if self._late_losses.pending:
            self._late_losses.report(self._seen_nonfinite)
        self._begin_step()
        self._backward_callback = False
        if self.saving_this_step():
            self._save_parameters()

    def _save_forced_step_start(self, held: set[str]) -> None:
        """The non-finite watch made this step one that saves (core.engine.nonfinite): its
        parameters, unchanged since the step started (the optimizer runs after backward), now,
        but for those in ``held`` (the step saved them when it started)."""
        self._save_parameters(skip=held)

    def _save_parameters(self, skip: set[str] | frozenset[str] = frozenset()) -> None:
        """The registered models' parameters (a step that saves, when it starts), but for ``skip``."""
        # parameters are copied on the copy thread while forward and backward run; the
        # copies are complete before the optimizer (or anything after backward) changes them
        # except FSDP's (FullyShardedDataParallel, use_orig_params): during forward they are views
        # of a buffer FSDP frees after it, copied now (read on the copy thread, they crashed the process)
        for top, model in self._tops:
            if id(model) in self._copy_now:
                for pname, p in model.named_parameters():
                    if f"{top}_{pname}" not in skip:
                        self._save_for_tensor(f"{top}_{pname}", p)
        self._save_deferred(
            self._unsharded(
                (f"{top}_{pname}", p)
                for top, model in self._tops
                if id(model) not in self._copy_now
                for pname, p in model.named_parameters()
                if f"{top}_{pname}" not in skip
            )
        )
        if self.writes:
            self._sharded.flush(self.store, self.worker)

    def _unsharded(self, named_values: Any) -> Any:
        """``(name, value)`` with each DTensor replaced by what is saved of it (sharded.py); in
        gather mode, the all-gather runs on every rank for the names saved at this step, only."""
        for name, value in named_values:
            if type(value) in _PLAIN or not is_dtensor(value):
                yield name, value
            elif not self._sharded.gather or self._planned(name):
                value = self._sharded.value(name, value)
                if value is not None:
                    yield name, value

    def _planned(self, name: str) -> bool:
        return self.planner.plan_at_step(name, self.mode, self.mode_steps[self.mode]) is not None

    @guarded()
    def _sync_captures(self) -> None:
        self.adapter.sync()  # and grad_capture.CaptureCheck's check

    @guarded()
    def _forward_hook(self, module: Any, inputs: Any, outputs: Any) -> Any:
        if self.step < 0:
            return
        if module in self._loss_modules and isinstance(outputs, torch.Tensor):
            self._watch_value(self._module_names.get(module, "loss") + self.OUTPUT_TENSOR_SUFFIX + "0", outputs)
        if not self.saving_this_step():
            return
        if torch._C._current_graph_task_id() != -1:
            return  # activation checkpointing: backward runs the forward again, saved already
        name = self._module_names.get(module)
        if name is None:
            return
        self._write_indexed(name, inputs, self.INPUT_TENSOR_SUFFIX)
        self._write_indexed(name, outputs, self.OUTPUT_TENSOR_SUFFIX)

    def _grad_hook(self, pname: str) -> Any:
        tname = self.GRADIENT_PREFIX + pname

        @guarded()
        def on_grad(hook: Any, param: Any) -> Any:
            if not hook._backward_callback:  # the first gradient of a backward pass
                # the parameters may still be being copied on the copy thread: the copies
                # must be complete when backward ends, before a manual update or the next backward
                hook._backward_callback = True
                _queue_end_of_backward(ref)
                hook.open_writer_gate()  # backward runs in C++: the writer's turn (measured 1.13x -> 1.08x)
            grad = param.grad
            if grad is not None and hook.step >= 0 and not hook._grads_by_trainer and hook.saving_this_step():
                # copies and reductions on the copy thread, while backward goes on; complete when
                # backward ends (_end_of_backward), before anything after it can change the gradient
                adapter = hook.adapter
                if type(grad) is torch.Tensor:
                    adapter.begin_deferred()
                    try:
                        hook._save_for_tensor(tname, grad)
                    finally:
                        adapter.end_deferred()
                    return
                adapter.begin_deferred(copies=False)  # FSDP2: a DTensor, copied here
                try:
                    for name, value in hook._unsharded(((tname, grad),)):
                        hook._save_for_tensor(name, value)
                finally:
                    adapter.end_deferred()

        ref = weakref.ref(self)

        def call(param: Any) -> Any:
            hook = ref()
            if hook is not None:
                on_grad(hook, param)

        return call

    @guarded(
        check=lambda self, tensor_name, tensor_value: check_type(
            f"record_tensor_value({tensor_name!r})", "tensor_value", tensor_value, torch.Tensor, "a torch.Tensor"
        )
    )
    def record_tensor_value(self, tensor_name: str, tensor_value: Any) -> None:
        """Save a tensor computed outside a module (e.g. ``F.mse_loss(...)``) as '<name>_output_<i>'
        (watched like a loss: its first NaN or infinite value saves that step and the next few in full)."""
        if self.step >= 0:
            self._watch_value(tensor_name + self.OUTPUT_TENSOR_SUFFIX + "0", tensor_value)
        if self.step >= 0 and self.saving_this_step():
            self._write_indexed(tensor_name, tensor_value, self.OUTPUT_TENSOR_SUFFIX)

    # ---------------------------------------------------------------- the non-finite watch
    def _finite(self, name: str, value: Any) -> bool | None:
        """On the CPU, read now (a scalar: one ``item()``); on a device, the check is queued and its
        answer copied to pinned memory without a sync, read at a later step boundary."""
        if not isinstance(value, torch.Tensor):
            return super()._finite(name, value)
        t = value.detach()
        if not t.is_floating_point() and not t.is_complex():
            return True
        if t.device.type == "cpu":
            return math.isfinite(t.item()) if t.numel() == 1 else bool(torch.isfinite(t).all())
        if t.device.type == "cuda" and self._late_losses.has_room():
            flag = torch.isfinite(t).all()
            host = torch.empty((), dtype=torch.bool, pin_memory=True)
            host.copy_(flag, non_blocking=True)
            event = torch.cuda.Event()
            event.record()
            self._late_losses.add(LateCheck(name, self.step, host, event))
            return None
        return None  # another device: not read (a sync per step would cost more than the watch is worth)

    def _write_held(self) -> None:
        self._write_trainer_held()
        super()._write_held()

    def _write_trainer_held(self) -> None:
        if self.trainer_driver is not None and not self._closed:
            self.trainer_driver.release()  # guarded

    def close(self) -> None:
        self._write_trainer_held()
        if self.writes and not self._closed:
            self._sharded.flush(self.store, self.worker)  # the gradients' shards, recorded after the last step
        super().close()
        profiling, self.profiling = self.profiling, None
        if profiling is not None:
            profiling.close()
        for h in (self._opt_handle, *self._handles):  # the optimizer's, then the modules' and parameters'
            if h is not None:
                h.remove()
        self._opt_handle = None
        self._handles.clear()
