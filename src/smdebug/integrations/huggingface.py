"""``SMDebugCallback`` for Hugging Face ``transformers.Trainer`` (``pip install smdebug[huggingface]``).

::

    hook = smd.Hook(out_dir=..., save_config=smd.SaveConfig(save_interval=10))
    trainer = Trainer(model=model, args=args, train_dataset=..., callbacks=[SMDebugCallback(hook)])

The hook watches ``trainer.model``. TRAIN steps are the Trainer's optimizer steps
(``state.global_step``); evaluation batches are EVAL steps (one per batch: the Trainer tells its
callbacks of an evaluation only when it is over, so a forward call with the model in eval mode
makes the mode EVAL); for PREDICT, call ``hook.set_mode(smd.modes.PREDICT)`` before
``trainer.predict``. What the Trainer logs (``loss``, ``grad_norm``, ``learning_rate``,
``eval_loss``, ...) is saved as ``scalar/<name>``.
"""

from __future__ import annotations

from transformers import TrainerCallback

from smdebug.integrations._common import TrainerHook
from smdebug.modes import ModeKeys

__all__ = ["SMDebugCallback"]


class SMDebugCallback(TrainerCallback):
    def __init__(self, hook=None):
        """``hook``: a ``smdebug.pytorch.Hook``; None: the hook of the SageMaker / JSON config."""
        self._th = TrainerHook(hook, "SMDebugCallback")
        self.hook = self._th.hook

    def _attach(self, model) -> None:
        if model is not None and self._th.model is None:
            self._th.attach(model, train_steps_only=True)
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
        self._th.begin_step(ModeKeys.TRAIN, state.global_step)

    def on_pre_optimizer_step(self, args, state, control, **kwargs):
        if self._th.saves_now():
            self.hook.save_gradients()  # accumulated over the step's micro-batches

    def on_log(self, args, state, control, logs=None, **kwargs):
        self._th.save_metrics(logs or {})
