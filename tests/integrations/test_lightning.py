"""SMDebugCallback in a Lightning Trainer (CPU): optimizer steps under gradient accumulation,
validation / test / predict modes, the training_step loss of each micro-batch and logged metrics."""

from __future__ import annotations

import numpy as np
import pytest

pl = pytest.importorskip("lightning.pytorch")
import torch  # noqa: E402
from torch import nn  # noqa: E402

import smdebug.pytorch as smd  # noqa: E402
from smdebug import modes  # noqa: E402
from smdebug.integrations.lightning import SMDebugCallback  # noqa: E402
from smdebug.trials import create_trial  # noqa: E402

LR = 0.1


class Regressor(pl.LightningModule):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
        self.losses = []

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.mse_loss(self(x), y)
        self.losses.append(loss.item())
        self.log("train_loss", loss, on_step=False, on_epoch=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", nn.functional.mse_loss(self(x), y))

    def test_step(self, batch, batch_idx):
        x, y = batch
        self.log("test_loss", nn.functional.mse_loss(self(x), y))

    def predict_step(self, batch, batch_idx):
        return self(batch[0])

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=LR)


def _loader(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 4, generator=g)
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, x.sum(1, keepdim=True)), batch_size=4)


def test_lightning_steps_modes_gradients_and_losses(tmp_path):
    hook = smd.Hook(
        out_dir=str(tmp_path / "run"),
        save_config=smd.SaveConfig(save_interval=1),
        include_collections=["weights", "gradients", "losses"],
    )
    module = Regressor()
    trainer = pl.Trainer(
        max_epochs=1,
        accumulate_grad_batches=2,
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        callbacks=[SMDebugCallback(hook)],
        default_root_dir=str(tmp_path),
    )
    trainer.fit(module, _loader(32, 1), _loader(8, 2))  # 8 micro-batches: 4 optimizer steps, then validation
    trainer.test(module, _loader(4, 3), verbose=False)
    trainer.predict(module, _loader(8, 4))
    hook.close()
    trial = create_trial(str(tmp_path / "run"))
    assert trainer.global_step == 4
    assert trial.steps(mode=modes.TRAIN) == [0, 1, 2, 3]
    assert trial.steps(mode=modes.EVAL) == [0, 1, 2]  # 2 validation batches, 1 test batch
    assert trial.steps(mode=modes.PREDICT) == [0, 1]
    # each micro-batch's loss, numbered in its optimizer step
    loss0, loss1 = trial.tensor("loss_output_0"), trial.tensor("loss_output_1")
    assert loss0.steps(mode=modes.TRAIN) == loss1.steps(mode=modes.TRAIN) == [0, 1, 2, 3]
    saved = [t.value(s, mode=modes.TRAIN) for s in range(4) for t in (loss0, loss1)]
    np.testing.assert_allclose(np.ravel(saved), module.losses, rtol=1e-6)
    w, grad = trial.tensor("Regressor_net.0.weight"), trial.tensor("gradient/Regressor_net.0.weight")
    assert grad.steps(mode=modes.TRAIN) == [0, 1, 2, 3]
    for step in range(3):  # SGD: the saved gradient is the accumulated one the optimizer used
        update = w.value(step + 1, mode=modes.TRAIN) - w.value(step, mode=modes.TRAIN)
        np.testing.assert_allclose(update, -LR * grad.value(step, mode=modes.TRAIN), rtol=1e-4, atol=1e-6)
    # what the module logged: the epoch's train_loss, val_loss, test_loss
    names = trial.tensor_names()
    assert {"scalar/train_loss", "scalar/val_loss", "scalar/test_loss"} <= set(names)
    np.testing.assert_allclose(
        trial.tensor("scalar/train_loss").value(trial.tensor("scalar/train_loss").steps()[0]),
        np.mean(module.losses),
        rtol=1e-5,
    )


def test_lightning_ddp_on_two_processes(tmp_path):
    """strategy="ddp", devices=2 on CPU: each rank a worker, optimizer steps counted alike on both,
    the same accumulated (all-reduced) gradient saved by both."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).with_name("pl_ddp_worker.py")
    proc = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "run")],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=str(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    trial = create_trial(str(tmp_path / "run"))
    assert trial.workers() == ["worker_0", "worker_1"]
    assert trial.steps(mode=modes.TRAIN) == [0, 1, 2, 3]
    grad = trial.tensor("gradient/Regressor_net.0.weight")
    for step in range(4):
        assert grad.workers(step, mode=modes.TRAIN) == ["worker_0", "worker_1"]
        np.testing.assert_allclose(
            grad.value(step, mode=modes.TRAIN, worker="worker_0"),
            grad.value(step, mode=modes.TRAIN, worker="worker_1"),
            rtol=1e-5,
            atol=1e-7,
        )
    losses = trial.tensor("loss_output_1")  # each rank's second micro-batch of each step
    assert losses.workers(3, mode=modes.TRAIN) == ["worker_0", "worker_1"]


def test_steps_the_hook_does_not_save_cost_the_callback_no_tensor_operation(tmp_path):
    """The callback's own work on the training thread: on the steps the hook saves nothing, the
    loss Lightning hands it is left alone (no multiplication by accumulate_grad_batches)."""
    from torch.overrides import TorchFunctionMode

    hook = smd.Hook(
        out_dir=str(tmp_path / "run"), save_config=smd.SaveConfig(save_interval=3), include_collections=["losses"]
    )
    callback = SMDebugCallback(hook)
    ops_at_step = []

    class Count(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            ops_at_step.append(hook.step)
            return func(*args, **(kwargs or {}))

    batch_end = callback.on_train_batch_end

    def counted(*args, **kwargs):
        with Count():
            batch_end(*args, **kwargs)

    callback.on_train_batch_end = counted  # Lightning calls the instance's attribute
    module = Regressor()
    trainer = pl.Trainer(
        max_epochs=1,
        accumulate_grad_batches=2,
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[callback],
        default_root_dir=str(tmp_path),
    )
    trainer.fit(module, _loader(48, 1))  # 12 micro-batches: 6 optimizer steps, steps 0 and 3 saved
    hook.close()
    assert trainer.global_step == 6
    assert sorted(set(ops_at_step)) == [0, 3]
    trial = create_trial(str(tmp_path / "run"))
    saved = [trial.tensor(f"loss_output_{i}").value(s, mode=modes.TRAIN) for s in (0, 3) for i in (0, 1)]
    np.testing.assert_allclose(np.ravel(saved), module.losses[0:2] + module.losses[6:8], rtol=1e-6)


class WithLossModule(Regressor):
    """A module whose loss is a submodule named ``loss``: its outputs are saved as loss_output_<i>."""

    def __init__(self):
        super().__init__()
        self.loss = nn.MSELoss()

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = self.loss(self(x), y)
        self.losses.append(loss.item())
        self.log("train_loss", loss, on_step=False, on_epoch=True)
        return loss


def test_epoch_logs_go_in_the_mode_that_logged_them_and_each_loss_is_saved_once(tmp_path):
    """2 epochs of 2 optimizer steps, a validation batch after each (Lightning ends the training
    epoch after it), then a test batch; save_interval=3 saves TRAIN step 0 and 3 and EVAL step 0."""
    hook = smd.Hook(
        out_dir=str(tmp_path / "run"), save_config=smd.SaveConfig(save_interval=3), include_collections=["losses"]
    )
    module = WithLossModule()
    trainer = pl.Trainer(
        max_epochs=2,
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        callbacks=[SMDebugCallback(hook)],
        default_root_dir=str(tmp_path),
    )
    trainer.fit(module, _loader(8, 1), _loader(4, 2))
    trainer.test(module, _loader(4, 3), verbose=False)
    hook.close()
    trial = create_trial(str(tmp_path / "run"))

    def where(name):
        t = trial.tensor(name)
        return {m.name: t.steps(mode=m) for m in (modes.TRAIN, modes.EVAL, modes.PREDICT) if t.steps(mode=m)}

    # each epoch's train_loss at the epoch's last TRAIN step (held open across the validation)
    assert where("scalar/train_loss") == {"TRAIN": [1, 3]}
    assert where("scalar/val_loss") == {"EVAL": [0, 1]}  # each validation's one batch
    assert where("scalar/test_loss") == {"EVAL": [2]}
    np.testing.assert_allclose(
        [trial.tensor("scalar/train_loss").value(s, mode=modes.TRAIN)[0] for s in (1, 3)],
        [np.mean(module.losses[0:2]), np.mean(module.losses[2:4])],
        rtol=1e-5,
    )
    # the loss module's output is the loss, once per step: no second loss_output_<i> from the callback
    assert trial.tensor_names(collection="losses") == ["loss_output_0"]
    assert where("loss_output_0") == {"TRAIN": [0, 3]}
    np.testing.assert_allclose(
        [trial.tensor("loss_output_0").value(s, mode=modes.TRAIN) for s in (0, 3)],
        [module.losses[0], module.losses[3]],
        rtol=1e-6,
    )
