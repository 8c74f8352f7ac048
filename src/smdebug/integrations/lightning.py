"""``SMDebugCallback`` for Lightning (``pip install smdebug-open[lightning]``).

::

    hook = smd.Hook(out_dir=..., save_config=smd.SaveConfig(save_interval=10))
    trainer = lightning.Trainer(callbacks=[SMDebugCallback(hook)], ...)

The hook watches the LightningModule. TRAIN steps are optimizer steps (``trainer.global_step``;
with ``accumulate_grad_batches``, the step starts with the first micro-batch), validation and test
batches are EVAL steps, ``trainer.predict`` batches PREDICT steps. The loss a ``training_step``
returns is saved as ``loss_output_<i>`` (one per micro-batch), what the module logs (``self.log``)
as ``scalar/<name>`` at the end of each epoch.
"""

from __future__ import annotations

import lightning.pytorch as pl

from smdebug.integrations._common import TrainerHook
from smdebug.modes import ModeKeys

__all__ = ["SMDebugCallback"]


class SMDebugCallback(pl.Callback):
    def __init__(self, hook=None):
        """``hook``: a ``smdebug.pytorch.Hook``; None: the hook of the SageMaker / JSON config."""
        self._th = TrainerHook(hook, "SMDebugCallback")
        self.hook = self._th.hook

    def setup(self, trainer, pl_module, stage):
        self._th.attach(pl_module, train_steps_only=False)

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        if batch_idx % trainer.accumulate_grad_batches == 0:  # the first micro-batch of an optimizer step
            self._th.begin_step(ModeKeys.TRAIN, trainer.global_step)
        elif self.hook.mode != ModeKeys.TRAIN:
            self.hook.set_mode(ModeKeys.TRAIN)

    def on_before_optimizer_step(self, trainer, pl_module, optimizer):
        if self._th.saves_now():
            self.hook.save_gradients()  # accumulated over the step's micro-batches

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if not self._th.saves_now():  # most steps: no tensor arithmetic on the training thread
            return
        loss = outputs.get("loss") if isinstance(outputs, dict) else outputs
        if loss is not None:
            if pl_module.automatic_optimization:  # Lightning hands callbacks the loss divided by
                loss = loss * trainer.accumulate_grad_batches  # accumulate_grad_batches: the step's own
            self.hook.record_tensor_value("loss", loss.detach())

    def on_validation_batch_start(self, trainer, pl_module, batch, batch_idx, dataloader_idx=0):
        if not trainer.sanity_checking:  # the sanity check's batches are no steps (nothing is saved)
            self._th.begin_step(ModeKeys.EVAL)

    def on_test_epoch_end(self, trainer, pl_module):
        self._th.save_metrics(trainer.logged_metrics)

    def on_test_batch_start(self, trainer, pl_module, batch, batch_idx, dataloader_idx=0):
        self._th.begin_step(ModeKeys.EVAL)

    def on_predict_batch_start(self, trainer, pl_module, batch, batch_idx, dataloader_idx=0):
        self._th.begin_step(ModeKeys.PREDICT)

    def on_train_epoch_end(self, trainer, pl_module):
        self._th.save_metrics(trainer.logged_metrics)

    def on_validation_epoch_end(self, trainer, pl_module):
        if not trainer.sanity_checking:
            self._th.save_metrics(trainer.logged_metrics)
