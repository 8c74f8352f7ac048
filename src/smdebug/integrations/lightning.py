"""``SMDebugCallback`` for Lightning (``pip install 'smdebug-open[lightning]'``).

::

    hook = smd.Hook(out_dir=..., save_config=smd.SaveConfig(save_interval=10))
    trainer = lightning.Trainer(callbacks=[SMDebugCallback(hook)], ...)

The hook watches the LightningModule. TRAIN steps are optimizer steps (``trainer.global_step``;
with ``accumulate_grad_batches``, the step starts with the first micro-batch), validation and test
batches are EVAL steps, ``trainer.predict`` batches PREDICT steps. The loss a ``training_step``
returns is saved as ``loss_output_<i>`` (one per micro-batch), unless the module has a submodule
named ``loss`` that computed it (its outputs are saved under that name already).

What the module logs for an epoch (``self.log``, epoch-level values) is saved as
``scalar/<name>`` at the end of the epoch, in the mode of the loop that logged it, whatever the
save schedule: a training epoch's logs at its last TRAIN step (held open across the validation that
Lightning runs before it ends the epoch), validation's and test's at their last EVAL step.
"""

from __future__ import annotations

import logging

from smdebug.integrations import engine_missing

try:
    import lightning.pytorch as pl
except ModuleNotFoundError as exc:
    raise engine_missing("lightning", "lightning", exc) from exc

from smdebug.integrations._common import TrainerHook  # noqa: E402
from smdebug.modes import ModeKeys  # noqa: E402

__all__ = ["SMDebugCallback"]

logger = logging.getLogger("smdebug")


_warned: list[bool] = []  # the fallback below was announced


def _epoch_metrics(trainer) -> dict:
    """The epoch-level values the running loop (training, validation or test) logged: what
    Lightning hands its loggers at the end of that loop's epoch (``trainer.logged_metrics`` holds
    every loop's values)."""
    results = getattr(trainer, "_results", None)  # the running loop's results (Lightning 2.x)
    if results is not None and hasattr(results, "metrics"):
        return results.metrics(False)["log"]
    if not _warned:
        _warned.append(True)
        logger.warning(
            "smdebug: this Lightning version does not say which loop logged a value: the epoch-end "
            "values saved are all of trainer.logged_metrics, in the mode of the epoch that ends"
        )
    return dict(trainer.logged_metrics)


class SMDebugCallback(pl.Callback):
    def __init__(self, hook=None):
        """``hook``: a ``smdebug.pytorch.Hook``; None: the hook of the SageMaker / JSON config."""
        self._th = TrainerHook.of(hook, "SMDebugCallback")
        self.hook = self._th.hook
        self._loss_module = None  # the module's submodule named "loss", whose outputs are saved as the loss
        self._loss_module_ran = False  # in the current micro-batch

    def setup(self, trainer, pl_module, stage):
        self._th.attach(pl_module, train_steps_only=False)
        loss = dict(pl_module.named_modules()).get("loss")
        if loss is not None and self._loss_module is None:
            self._loss_module = loss
            loss.register_forward_hook(self._loss_ran)

    def _loss_ran(self, module, inputs, output) -> None:
        self._loss_module_ran = True

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        self._loss_module_ran = False
        if batch_idx % trainer.accumulate_grad_batches == 0:  # the first micro-batch of an optimizer step
            self._th.begin_step(ModeKeys.TRAIN, trainer.global_step)
        elif self.hook.mode != ModeKeys.TRAIN:
            self._th.switch_mode(ModeKeys.TRAIN)

    def on_before_optimizer_step(self, trainer, pl_module, optimizer):
        if self._th.saves_now():
            self.hook.save_gradients()  # accumulated over the step's micro-batches

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if self._loss_module_ran or not self._th.saves_now():  # most steps: no tensor arithmetic here
            return
        loss = outputs.get("loss") if isinstance(outputs, dict) else outputs
        if loss is not None:
            if pl_module.automatic_optimization:  # Lightning hands callbacks the loss divided by
                loss = loss * trainer.accumulate_grad_batches  # accumulate_grad_batches: the step's own
            self.hook.record_tensor_value("loss", loss.detach())

    def on_train_epoch_end(self, trainer, pl_module):
        self._th.save_metrics(_epoch_metrics(trainer), ModeKeys.TRAIN)

    def on_train_end(self, trainer, pl_module):
        self._th.release()

    def on_validation_batch_start(self, trainer, pl_module, batch, batch_idx, dataloader_idx=0):
        if not trainer.sanity_checking:  # the sanity check's batches are no steps (nothing is saved)
            # inside fit, the TRAIN step is held open: Lightning ends the epoch after validating
            self._th.begin_step(ModeKeys.EVAL, hold=trainer.state.fn == "fit")

    def on_validation_epoch_end(self, trainer, pl_module):
        if not trainer.sanity_checking:
            self._th.save_metrics(_epoch_metrics(trainer), ModeKeys.EVAL)

    def on_test_batch_start(self, trainer, pl_module, batch, batch_idx, dataloader_idx=0):
        self._th.begin_step(ModeKeys.EVAL)

    def on_test_epoch_end(self, trainer, pl_module):
        self._th.save_metrics(_epoch_metrics(trainer), ModeKeys.EVAL)

    def on_predict_batch_start(self, trainer, pl_module, batch, batch_idx, dataloader_idx=0):
        self._th.begin_step(ModeKeys.PREDICT)
