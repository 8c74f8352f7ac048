"""Zero-code-change attach for PyTorch, installed by the bootstrap right after ``import torch``.

Public hook registries only, no patched torch: a global module forward pre-hook finds the root
model at its first forward (the first module called with trainable parameters, outside data-loader
workers), unwraps DistributedDataParallel / DataParallel / FullyShardedDataParallel (``.module``; FSDP2's
``fully_shard`` changes the model in place, so it is the model) so that tensor names equal
those of ``hook.register_module(model)`` on the bare model (torch.compile's OptimizedModule is
unwrapped by the hook itself), and registers it on the hook made from the job's
debughookconfig.json.

The loss, in this order: loss modules (``nn.modules.loss._Loss``) are registered when first
called, but for one the root's forward builds and calls itself (called while the root's forward
runs, and no submodule of it: a Hugging Face model builds a new ``CrossEntropyLoss`` at every
call); else a one-element ``loss`` in the root's output (``output.loss`` or ``output["loss"]``, as
Hugging Face models return it) is recorded as ``loss`` at every step, in every mode (a forward hook
on the root); else a loss computed with a function (``F.cross_entropy``) is recorded as ``loss``
when ``backward()`` is called on a scalar. Under AMP's GradScaler the loss recorded at backward is
the one ``scaler.scale(loss)`` was given (unscaled), not the scaled tensor backward runs on. At
the first optimizer step the
root's parameters are checked against the optimizer's. The global hook does nothing while dynamo
traces (no extra recompiles) and, after the first optimizer step, does no more than follow the root's mode.
A script that makes its own hook keeps it: nothing is attached then. One line on stderr says what was attached.

Modes: while the script never calls ``hook.set_mode``, each step takes its mode from the root model,
TRAIN while it is in training mode (``model.train()``), EVAL under ``model.eval()``; the mode is set
in the global pre-hook, before the root's own pre-hook begins the step. Once the script calls
``set_mode`` on the attached hook (reached with ``smd.get_hook()``), the mode is the script's for the
rest of the run. A hook the script made itself keeps 1.0.34's semantics: GLOBAL until ``set_mode``.
"""

from __future__ import annotations

import functools
import os
import sys
import warnings
import weakref
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from smdebug.launch.zcc_common import Attach, fast_stop_checks, logger, marked, never_raises
from smdebug.modes import ModeKeys

__all__ = ["install", "unwrap"]

_WRAPPERS = ("DistributedDataParallel", "DataParallel", "FullyShardedDataParallel")
_installed: _Attach | None = None  # the state once installed (zcc_keras reads it)


def unwrap(module: Any) -> Any:
    """The model a DDP / DataParallel / FSDP wrapper holds (torch.compile's wrapper is kept: the hook
    unwraps it; FSDP2's ``fully_shard`` changes the model in place: it is the model)."""
    while type(module).__name__ in _WRAPPERS and isinstance(getattr(module, "module", None), nn.Module):
        module = module.module
    return module


def _in_worker() -> bool:
    try:
        from torch.utils.data import get_worker_info

        return get_worker_info() is not None
    except Exception:
        return False


@dataclass
class _Scaled:
    """What ``scaler.scale(loss)`` last scaled: its scalar output (weakly) and the loss."""

    output: weakref.ref[Any]
    loss: torch.Tensor


class _Attach(Attach):
    def __init__(self) -> None:
        super().__init__()  # done: attached elsewhere, or no config
        self.root: Any = None  # the model attached to (an nn.Module)
        self.loss_modules: weakref.WeakSet[Any] = weakref.WeakSet()
        self.loss_step: int | None = None
        self.checked_optimizer = False
        self.scaled: _Scaled | None = None  # what scaler.scale last scaled
        self.in_root = False  # the root's forward is running (from its pre-hook to its forward hook)
        self.set_mode: Any = None  # the attached hook's own set_mode, while the mode follows the root's

    # ------------------------------------------------------------ root discovery
    def pre_hook(self, module: Any, args: Any) -> None:
        if torch.compiler.is_compiling():  # first: dynamo folds it and guards on nothing of ours
            return
        if module is self.root:
            self.in_root = True
            self._follow_mode()
            return
        if self.done:
            return
        if self.hook is not None:
            if isinstance(module, nn.modules.loss._Loss) and module not in self.loss_modules:
                if self.in_root and module not in self.hook.module_tensors.names:
                    return  # built by the root's forward: its output's `loss` is the loss (root_output)
                self.loss_modules.add(module)
                self.hook.register_loss(module)
            return
        if isinstance(module, nn.modules.loss._Loss) or _in_worker():
            return
        if not any(p.requires_grad for p in module.parameters()):
            return  # a transform or a frozen module: not the model being trained
        self._attach(module, args)

    def _attach(self, module: Any, args: Any) -> None:
        import smdebug.pytorch as smd

        self.done = True
        existing = smd.get_hook()
        if existing is not None:  # the script made its own hook: it keeps it
            fast_stop_checks(existing)
            sys.stderr.write(
                f"smdebug: the script made its own hook, saving to {existing.out_dir}: smdebug run "
                f"attached none{_elsewhere(existing.out_dir)}\n"
            )
            return
        hook = smd.get_hook(create_if_not_exists=True)
        if hook is None:
            return
        target = unwrap(module)
        hook.register_module(target)
        if not hook.has_registered_module:
            return  # the hook logged why and disabled itself
        self.hook, self.root, self.done = hook, target, False
        target.register_forward_hook(self.root_output)
        self._watch_set_mode(hook)
        self._follow_mode()
        inner = getattr(target, "_orig_mod", target)
        n = sum(p.numel() for p in inner.parameters())
        wrapped = f" (in {type(module).__name__})" if target is not module else ""
        self.attached(hook, f"{inner._get_name()}{wrapped}, {n} parameters,")
        if target is module:
            # a pre-hook added while the module's hooks run fires from its next call: start step 0 now
            # (a forward hook fires from this call on)
            self.in_root = True
            hook.start_step()

    # ------------------------------------------------------------ modes
    def _watch_set_mode(self, hook: Any) -> None:
        """From the script's first ``hook.set_mode`` call on, the mode is the script's."""
        own = self.set_mode = hook.set_mode

        @functools.wraps(own)
        def set_mode(mode: ModeKeys) -> Any:
            self.set_mode = None
            return own(mode)

        hook.set_mode = set_mode

    def _follow_mode(self) -> None:
        """TRAIN while the root model is in training mode, EVAL under ``model.eval()``."""
        if self.set_mode is None or self.hook is None:
            return
        mode = ModeKeys.TRAIN if getattr(self.root, "_orig_mod", self.root).training else ModeKeys.EVAL
        if self.hook.mode is not mode:
            self.set_mode(mode)

    # ------------------------------------------------------------ losses and the optimizer
    def root_output(self, module: Any, args: Any, output: Any) -> None:
        """The root's forward hook: a one-element ``loss`` in its output is the step's loss, unless
        a loss module is registered. Never breaks training (an error stops recording the loss)."""
        self.in_root = False
        hook = self.hook
        if hook is None or len(self.loss_modules) or hook.step < 0 or torch.compiler.is_compiling():
            return
        try:
            loss = output.get("loss") if isinstance(output, dict) else getattr(output, "loss", None)
            if isinstance(loss, torch.Tensor) and loss.numel() == 1 and self.loss_step != hook.step:
                self.loss_step = hook.step
                hook.record_tensor_value("loss", loss.detach())
        except Exception as exc:
            self.hook = None
            logger.error("smdebug: recording the model output's loss failed (%s); the loss is no longer recorded", exc)

    def on_backward(self, tensor: torch.Tensor) -> None:
        hook = self.hook
        if hook is None or len(self.loss_modules) or tensor.dim() != 0 or hook.step < 0:
            return
        if self.loss_step == hook.step:
            return
        self.loss_step = hook.step
        if self.scaled is not None and self.scaled.output() is tensor:
            tensor = self.scaled.loss  # backward on scaler.scale(loss): the loss itself is recorded
        hook.record_tensor_value("loss", tensor.detach())

    def on_scale(self, loss: Any, scaled: Any) -> None:
        if self.hook is not None and isinstance(loss, torch.Tensor) and loss.dim() == 0:
            self.scaled = _Scaled(weakref.ref(scaled), loss.detach())

    def stop_recording(self) -> None:
        self.hook = None

    def on_optimizer_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if self.checked_optimizer or self.root is None:
            return
        self.checked_optimizer = True
        if self.loss_modules or self.loss_step is not None:
            # the root and the loss of a step have been seen: from now on the global hook only follows the
            # root's mode, model.train() / eval() (it stays: removing it would make dynamo recompile a
            # compiled model, which guards on the number of global hooks)
            self.done = True
        trained = {id(p) for g in optimizer.param_groups for p in g["params"]}
        inner = getattr(self.root, "_orig_mod", self.root)
        mine = [n for n, p in inner.named_parameters() if p.requires_grad and id(p) not in trained]
        if mine:
            sys.stderr.write(
                f"smdebug: warning: {inner._get_name()}, the model attached to, has parameters the "
                f"optimizer does not train ({', '.join(mine[:3])}...): attach explicitly with "
                "hook.register_module(model) if it is not the model being trained\n"
            )


def _elsewhere(out_dir: str) -> str:
    """What to add when the script's own hook saves outside the run's trial, which the rules read."""
    import json

    from smdebug.core.config.hook_config import CONFIG_FILE_PATH_ENV

    try:
        with open(os.environ[CONFIG_FILE_PATH_ENV], "rb") as f:
            run_dir = json.loads(f.read()).get("LocalPath")
    except (KeyError, OSError, ValueError):
        return ""
    if not run_dir or os.path.abspath(str(out_dir)) == os.path.abspath(run_dir):
        return ""
    return (
        f"; the run's rules read {run_dir}, not that folder (make the hook with "
        "smd.Hook.create_from_json_file() to save where they read)"
    )


@functools.cache
def install() -> _Attach:
    """Install the global hooks once per process (the bootstrap calls it after ``import torch``)."""
    global _installed
    state = _installed = _Attach()
    # not wrapped in torch.compiler.disable: with that wrapper a DDP rank hung at exit (gloo, torch
    # 2.13); the hook returns at once while dynamo traces instead (no side effect, no recompile)
    nn.modules.module.register_module_forward_pre_hook(state.pre_hook)
    # our global hook is the one this warns about; it fires for the OptimizedModule and is unwrapped
    warnings.filterwarnings("ignore", message=r"Using `torch.compile\(module\)` when there are global hooks")
    from torch.optim.optimizer import register_optimizer_step_pre_hook

    register_optimizer_step_pre_hook(state.on_optimizer_step)
    original = torch.Tensor.backward

    @functools.wraps(original)
    def backward(self: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        never_raises(
            "smdebug: recording the loss failed (%s); the loss is no longer recorded",
            lambda: state.on_backward(self),
            state.stop_recording,
        )
        return original(self, *args, **kwargs)

    torch.Tensor.backward = marked(backward)
    _wrap_grad_scaler(state)
    return state


def _wrap_grad_scaler(state: _Attach) -> None:
    """``GradScaler.scale`` (torch.amp's, which torch.cuda.amp's inherits) tells the state which loss a
    scaled tensor came from."""
    scaler_cls = torch.amp.GradScaler
    original = scaler_cls.scale

    @functools.wraps(original)
    def scale(self: Any, outputs: Any) -> Any:
        scaled = original(self, outputs)
        never_raises("smdebug: following GradScaler.scale failed (%s)", lambda: state.on_scale(outputs, scaled))
        return scaled

    scaler_cls.scale = marked(scale)
