"""``SMDebugCallback`` for Hugging Face ``transformers.Trainer`` (``pip install 'smdebug-open[huggingface]'``).

::

    hook = smd.Hook(out_dir=..., save_config=smd.SaveConfig(save_interval=10))
    trainer = Trainer(model=model, args=args, train_dataset=..., callbacks=[SMDebugCallback(hook)])

The hook watches ``trainer.model``. TRAIN steps are the Trainer's optimizer steps
(``state.global_step``). Evaluation and prediction batches are steps of their own, one per
batch: the Trainer tells its callbacks of an evaluation only when it is over, so the first forward
call with the model in eval mode starts it, and the ``metric_key_prefix`` of the Trainer's
``evaluation_loop`` running it gives the mode: ``eval`` (``trainer.evaluate``'s) EVAL, ``test``
(``trainer.predict``'s) or ``predict`` PREDICT, any other EVAL. (Without that loop, e.g. a callback
of yours calling the model in eval mode: EVAL, or the mode the script set with ``hook.set_mode``.)

What the Trainer logs is saved as ``scalar/<name>`` in the mode that produced it, at the step it
was logged at, whatever the save schedule: the training logs (``loss``, ``grad_norm``,
``learning_rate``) and the end-of-training summary (``train_loss``, ``train_runtime``, ...) in
TRAIN, ``eval_*`` in EVAL, ``test_*`` / ``predict_*`` (``trainer.predict``'s metrics) in PREDICT.
The TRAIN step before an evaluation is held open across it and written after it, with what the
Trainer logs for it afterwards.

A Trainer given the callback twice (two ``SMDebugCallback(hook)`` for one hook, or one added again
with ``trainer.add_callback``) calls each with every event: the callbacks of one hook handle each
event once (the first call; the others do nothing, with one warning), so the steps are still
the Trainer's 0, 1, 2, ... A hook may serve one Trainer after another.
"""

from __future__ import annotations

import logging
import sys
import weakref
from types import FrameType

from smdebug.integrations import engine_missing

try:
    from transformers import TrainerCallback
except ModuleNotFoundError as exc:
    raise engine_missing("huggingface", "transformers", exc) from exc

from smdebug.core.engine.guard import GuardedByHook, guarded  # noqa: E402
from smdebug.integrations._common import TrainerHook  # noqa: E402
from smdebug.modes import ModeKeys  # noqa: E402

__all__ = ["SMDebugCallback"]

logger = logging.getLogger("smdebug")

_PREDICT_PREFIXES = ("test", "predict")


class _HookState(GuardedByHook):  # an error in its methods disables the hook
    """What the callbacks of one hook share: its TrainerHook, the Trainer events handled, the loop
    running. A Trainer calls its callbacks one after another with the same objects (``state``,
    ``logs``, ``model``), so a call with the objects of the event handled last, and the same
    ``global_step``, is that event again."""

    def __init__(self, th: TrainerHook):
        self.th = th
        self.hook = th.hook
        self.loop_mode: ModeKeys | None = None  # the mode of the evaluation or prediction running
        self.training = False  # between on_train_begin and on_train_end
        self._last: dict[str, tuple] = {}  # event -> (the object it came with, global_step)
        self._warned = False
        self.eval_watched: weakref.WeakSet = weakref.WeakSet()  # models with the eval-mode pre-hook

    def first(self, event: str, obj, global_step) -> bool:
        last = self._last.get(event)
        if last is not None and last[0] is obj and last[1] == global_step:
            if not self._warned:
                self._warned = True
                logger.warning(
                    "smdebug: the Trainer has more than one SMDebugCallback for this hook (or the same one "
                    "added twice): each event is handled once, the other callbacks do nothing"
                )
            return False
        self._last[event] = (obj, global_step)
        return True

    @guarded()
    def eval_forward(self, module, inputs) -> None:
        """A forward call of the model in eval mode: the first one of an evaluation or a prediction
        switches the mode (holding the TRAIN step open when it runs inside training)."""
        if self.loop_mode is None:
            mode = _loop_mode()
            if mode is None:  # not the Trainer's loop: EVAL, or the mode the script set
                mode = self.th.hook.mode if self.th.hook.mode in (ModeKeys.EVAL, ModeKeys.PREDICT) else ModeKeys.EVAL
            self.loop_mode = mode
        if self.th.hook.mode != self.loop_mode:
            self.th.switch_mode(self.loop_mode, hold=self.training)


def _prefix_mode(prefix: str) -> ModeKeys:
    return ModeKeys.PREDICT if prefix in _PREDICT_PREFIXES else ModeKeys.EVAL


def _loop_mode() -> ModeKeys | None:
    """The mode of the Trainer's ``evaluation_loop`` this forward call runs in, from its
    ``metric_key_prefix``; None outside one. Looked at once per evaluation or prediction."""
    frame: FrameType | None = sys._getframe(2)
    for _ in range(64):
        if frame is None:
            return None
        if frame.f_code.co_name in ("evaluation_loop", "prediction_loop"):
            prefix = frame.f_locals.get("metric_key_prefix")
            if isinstance(prefix, str):
                return _prefix_mode(prefix)
        frame = frame.f_back
    return None


def _log_mode(logs: dict) -> ModeKeys:
    """The mode of a Trainer log: an evaluation's or prediction's metrics carry its prefix
    (``eval_loss``, ``<prefix>_runtime``); training logs and the training summary (``train_*``) TRAIN."""
    for key in logs:
        prefix, _, rest = key.partition("_")
        if prefix == "train" and rest:
            return ModeKeys.TRAIN
        if prefix in ("eval", *_PREDICT_PREFIXES) and rest:
            return _prefix_mode(prefix)
        if key.endswith("_runtime"):  # an evaluation with a metric_key_prefix of its own
            return _prefix_mode(key[: -len("_runtime")])
    return ModeKeys.TRAIN


class SMDebugCallback(TrainerCallback):
    def __init__(self, hook=None):
        """``hook``: a ``smdebug.pytorch.Hook``; None: the hook of the SageMaker / JSON config."""
        th = TrainerHook.of(hook, "SMDebugCallback")
        self.hook = th.hook
        if th.callbacks is None:
            th.callbacks = _HookState(th)
        self._state = th.callbacks
        self._th = th

    def _attach(self, model) -> None:
        if model is not None and model not in self._state.eval_watched:  # once per model
            self._state.eval_watched.add(model)
            self._th.attach(model, train_steps_only=True)
            model.register_forward_pre_hook(self._eval_mode, prepend=True)

    def _eval_mode(self, module, inputs) -> None:
        if not module.training:  # most forward calls: one attribute read
            self._state.eval_forward(module, inputs)

    def on_init_end(self, args, state, control, model=None, **kwargs):
        self._attach(model)

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        self._attach(model)
        self._state.training = True

    def on_step_begin(self, args, state, control, model=None, **kwargs):
        self._attach(model)
        if self._state.first("step_begin", state, state.global_step):
            self._state.loop_mode = None
            self._th.begin_step(ModeKeys.TRAIN, state.global_step)

    def on_pre_optimizer_step(self, args, state, control, **kwargs):
        if self._state.first("pre_optimizer_step", state, state.global_step) and self._th.saves_now():
            self.hook.save_gradients()  # accumulated over the step's micro-batches

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and self._state.first("log", logs, state.global_step):
            self._th.save_metrics(logs, _log_mode(logs))

    def on_evaluate(self, args, state, control, model=None, metrics=None, **kwargs):
        self._attach(model)
        if self._state.first("evaluate", metrics, state.global_step):
            self._state.loop_mode = None  # its metrics were logged (on_log)

    def on_predict(self, args, state, control, metrics=None, **kwargs):
        if self._state.first("predict", metrics, state.global_step):
            self._state.loop_mode = None
            if metrics:  # trainer.predict logs nothing: its metrics are saved here
                self._th.save_metrics(metrics, ModeKeys.PREDICT)

    def on_train_end(self, args, state, control, **kwargs):
        if self._state.first("train_end", state, state.global_step):
            self._state.training = False
            self._th.release()
