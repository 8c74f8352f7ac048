"""``SMDebugCallback`` for Hugging Face ``transformers.Trainer`` (``pip install smdebug-open[huggingface]``).

::

    hook = smd.Hook(out_dir=..., save_config=smd.SaveConfig(save_interval=10))
    trainer = Trainer(model=model, args=args, train_dataset=..., callbacks=[SMDebugCallback(hook)])

The hook watches ``trainer.model``. TRAIN steps are the Trainer's optimizer steps
(``state.global_step``); evaluation batches are EVAL steps (one per batch: the Trainer tells its
callbacks of an evaluation only when it is over, so a forward call with the model in eval mode
makes the mode EVAL); for PREDICT, call ``hook.set_mode(smd.modes.PREDICT)`` before
``trainer.predict``. What the Trainer logs (``loss``, ``grad_norm``, ``learning_rate``,
``eval_loss``, ...) is saved as ``scalar/<name>``.

A Trainer given the callback twice (two ``SMDebugCallback(hook)`` for one hook, or one added again
with ``trainer.add_callback``) calls each with every event: the callbacks of one hook handle each
event once (the first call; the others do nothing, with one warning), so the steps are still
the Trainer's 0, 1, 2, ... A hook may serve one Trainer after another.
"""

from __future__ import annotations

import logging
import weakref

from transformers import TrainerCallback

from smdebug.integrations._common import TrainerHook
from smdebug.modes import ModeKeys

__all__ = ["SMDebugCallback"]

logger = logging.getLogger("smdebug")


class _HookEvents:
    """The Trainer events the callbacks of one hook have handled. A Trainer calls its callbacks
    one after another with the same objects (``state``, ``logs``, ``model``), so a call with the
    objects of the event handled last, and the same ``global_step``, is that event again."""

    def __init__(self):
        self._last: dict[str, tuple] = {}  # event -> (the object it came with, global_step)
        self._warned = False
        self.eval_watched: weakref.WeakSet = weakref.WeakSet()  # models with the EVAL-mode pre-hook

    def first(self, event: str, obj, global_step) -> bool:
        last = self._last.get(event)
        if last is not None and last[0] is obj and last[1] == global_step:
            if not self._warned:
                self._warned = True
                logger.warning("smdebug: the Trainer has more than one SMDebugCallback for this hook (or the same one "
                               "added twice): each event is handled once, the other callbacks do nothing")
            return False
        self._last[event] = (obj, global_step)
        return True


_EVENTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # hook -> _HookEvents


def _events(hook) -> _HookEvents:
    events = _EVENTS.get(hook)
    if events is None:
        events = _EVENTS[hook] = _HookEvents()
    return events


class SMDebugCallback(TrainerCallback):
    def __init__(self, hook=None):
        """``hook``: a ``smdebug.pytorch.Hook``; None: the hook of the SageMaker / JSON config."""
        self._th = TrainerHook(hook, "SMDebugCallback")
        self.hook = self._th.hook
        self._events = _events(self.hook)

    def _attach(self, model) -> None:
        if model is not None and self._th.model is None:
            self._th.attach(model, train_steps_only=True)
            if model not in self._events.eval_watched:
                self._events.eval_watched.add(model)
                model.register_forward_pre_hook(self._eval_mode, prepend=True)

    def _eval_mode(self, module, inputs) -> None:
        # evaluation (model.eval()) between training steps: EVAL steps, one per forward call
        if not module.training and self.hook.mode == ModeKeys.TRAIN:
            self.hook.set_mode(ModeKeys.EVAL)

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        self._attach(model)

    def on_evaluate(self, args, state, control, model=None, **kwargs):
        self._attach(model)

    def on_step_begin(self, args, state, control, model=None, **kwargs):
        self._attach(model)
        if self._events.first("step_begin", state, state.global_step):
            self._th.begin_step(ModeKeys.TRAIN, state.global_step)

    def on_pre_optimizer_step(self, args, state, control, **kwargs):
        if self._events.first("pre_optimizer_step", state, state.global_step) and self._th.saves_now():
            self.hook.save_gradients()  # accumulated over the step's micro-batches

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and self._events.first("log", logs, state.global_step):
            self._th.save_metrics(logs)
