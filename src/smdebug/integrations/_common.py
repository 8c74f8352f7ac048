"""What both trainer callbacks do with the PyTorch hook."""

from __future__ import annotations

import logging
import numbers

from smdebug.core.engine.arguments import check_type
from smdebug.modes import ModeKeys
from smdebug.pytorch.hook import Hook

__all__ = ["TrainerHook"]

logger = logging.getLogger("smdebug")


class TrainerHook:
    """The hook, the model it watches, the modes whose steps the trainer starts."""

    def __init__(self, hook, owner: str):
        if hook is None:
            from smdebug.pytorch import get_hook

            hook = get_hook(create_if_not_exists=True)  # the SageMaker / config-file hook
        check_type(owner, "hook", hook, Hook, "a smdebug.pytorch.Hook")
        self.hook = hook
        self.model = None

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

    def begin_step(self, mode, mode_step: int | None = None) -> None:
        if self.hook.mode != mode:
            self.hook.set_mode(mode)
        self.hook.begin_trainer_step(mode_step)

    def save_metrics(self, metrics: dict, prefix: str = "") -> None:
        """The trainer's logged numbers, as scalars (``scalar/<name>``), with the current step."""
        for name, value in metrics.items():
            if hasattr(value, "item") and getattr(value, "numel", lambda: 1)() == 1:
                value = value.item()
            if isinstance(value, numbers.Real) and not isinstance(value, bool):
                self.hook.save_scalar(prefix + name, float(value))
