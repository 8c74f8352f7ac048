"""What both trainer callbacks do with the PyTorch hook: attach it to the trainer's model, start the
steps the trainer counts, and save what the trainer logs in the mode that produced it."""

from __future__ import annotations

import logging
import numbers
from typing import Any

from smdebug.core.engine.arguments import check_type
from smdebug.core.engine.guard import GuardedByHook, guarded
from smdebug.core.engine.held_step import HeldStep
from smdebug.modes import ModeKeys
from smdebug.pytorch.hook import Hook

__all__ = ["TrainerHook"]

logger = logging.getLogger("smdebug")


class TrainerHook(GuardedByHook):  # an error in its methods disables the hook itself
    """The hook, the model it watches, and the TRAIN step held open while the trainer evaluates.

    A trainer reports the logs of a training step or epoch (``train_loss``) after the evaluation
    that follows it: the TRAIN step is held open across the EVAL steps (core.engine.held_step) and
    written once, with those logs, when training goes on or ends. Logged values are saved at the
    step they were logged at, in their mode, whatever the save schedule (as Keras' epoch logs):
    they never wait for a later saved step, which could be of another mode.

    One per hook (``Hook.trainer_driver``), shared by the callbacks given that hook; its methods
    run under the hook's guard (an error disables the hook, training goes on)."""

    def __init__(self, hook):
        self.hook = hook
        self.model = None
        self.held: HeldStep | None = None  # the TRAIN step held open while the trainer evaluates
        self.callbacks: Any = None  # what a trainer's callbacks of this hook share (integrations.huggingface)

    @classmethod
    def of(cls, hook, owner: str) -> TrainerHook:
        """The driver of ``hook`` (None: the hook of the SageMaker / JSON config), made at its first
        callback; ``owner`` names the callback in the error for a hook of another kind."""
        if hook is None:
            from smdebug.pytorch import get_hook

            hook = get_hook(create_if_not_exists=True)
        check_type(owner, "hook", hook, Hook, "a smdebug.pytorch.Hook")
        if hook.trainer_driver is None:
            hook.trainer_driver = cls(hook)
        return hook.trainer_driver

    def attach(self, model, train_steps_only: bool) -> None:
        """Register ``model`` (once); the trainer starts the TRAIN steps (and, if not
        ``train_steps_only``, the EVAL and PREDICT steps too)."""
        if self.model is model:
            return
        if self.model is not None:
            logger.warning("smdebug: the trainer's model changed; the hook keeps saving the first one")
            return
        self.model = model
        if not self.hook.has_registered_module:
            self.hook.register_module(model)
        modes = {ModeKeys.TRAIN} if train_steps_only else {ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT}
        self.hook.drive_steps_by_trainer(modes)

    def saves_now(self) -> bool:
        """Whether the hook saves anything at its current step: the callbacks skip their own work
        (tensor arithmetic, the hook's calls) on the other steps. False on a disabled hook; never
        raises (the collections are prepared when the step starts, under the hook's guard)."""
        hook = self.hook
        return not hook.disabled and hook.step >= 0 and hook.prepared_collections and hook.saving_this_step()

    @guarded()
    def begin_step(self, mode, mode_step: int | None = None, hold: bool = False) -> None:
        """Start a step of ``mode`` (numbered ``mode_step``, the trainer's count, if given); a TRAIN
        step held open across an evaluation is written first. ``hold``: see :meth:`switch_mode`."""
        self.switch_mode(mode, hold)
        if mode == ModeKeys.TRAIN:
            self.release()
        self.hook.begin_trainer_step(mode_step)

    @guarded()
    def switch_mode(self, mode, hold: bool = False) -> None:
        """The trainer goes on in ``mode``. ``hold``: an evaluation inside training, after which
        the trainer logs the training step's values: the current TRAIN step is held open until
        training goes on (:meth:`begin_step`), ends (:meth:`release`), or the hook closes or
        stops (``Hook.trainer_driver``)."""
        hook = self.hook
        if hook.mode == mode:
            return
        if hold and hook.mode == ModeKeys.TRAIN and self.held is None and hook.step >= 0:
            self.held = hook.hold_step()
        hook.set_mode(mode)

    @guarded()
    def release(self) -> None:
        """Write the TRAIN step held open across an evaluation, if any (training goes on or ends)."""
        self._complete(None)

    def _complete(self, add) -> None:
        held, self.held = self.held, None
        if held is not None:
            self.hook.complete_held(held, add)

    @guarded()
    def save_metrics(self, metrics: dict, mode) -> None:
        """What the trainer logged for ``mode``, as scalars (``scalar/<name>``), at the step they
        belong to, whatever the save schedule: the current step when it is of ``mode``; for
        TRAIN, else the TRAIN step held open across an evaluation; else a step of ``mode`` of
        their own (a log with no step of its mode to go with, e.g. after an empty evaluation)."""
        values = {name: v for name, v in ((n, _number(v)) for n, v in metrics.items()) if v is not None}
        if not values:
            return
        hook = self.hook
        if mode == ModeKeys.TRAIN and self.held is not None and hook.recording_mode != mode:
            self._complete(lambda: self._save_in_step(values))
            return
        if hook.recording_mode != mode or hook.step < 0:  # no step of ``mode`` is current (a step records in its mode)
            self.switch_mode(mode)
            hook.begin_trainer_step()
        self._save_in_step(values)

    def _save_in_step(self, values: dict) -> None:
        hook = self.hook
        for name, value in values.items():
            hook.save_scalar(name, value)
        hook.keep_step()  # the current step is written, with these scalars if nothing else


def _number(value) -> float | None:
    """A logged value as a float: a real number or a one-element tensor; None for anything else."""
    if hasattr(value, "item") and getattr(value, "numel", lambda: 1)() == 1:
        value = value.item()
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    return None
