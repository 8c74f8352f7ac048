"""A Lightning DDP run on 2 CPU processes with SMDebugCallback (started by test_lightning.py;
Lightning starts the second process by running this script again).

usage: pl_ddp_worker.py OUT_DIR
"""

import sys

import lightning.pytorch as pl
import torch
from torch import nn

import smdebug.pytorch as smd
from smdebug.integrations.lightning import SMDebugCallback


class Regressor(pl.LightningModule):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return nn.functional.mse_loss(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def main():
    torch.set_num_threads(1)
    hook = smd.Hook(
        out_dir=sys.argv[1],
        save_config=smd.SaveConfig(save_interval=1),
        include_workers="all",
        include_collections=["weights", "gradients", "losses"],
    )
    g = torch.Generator().manual_seed(1)
    x = torch.randn(64, 4, generator=g)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, x.sum(1, keepdim=True)), batch_size=4)
    trainer = pl.Trainer(
        max_epochs=1,
        accumulate_grad_batches=2,
        accelerator="cpu",
        devices=2,
        strategy="ddp",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[SMDebugCallback(hook)],
    )
    trainer.fit(Regressor(), loader)  # 16 batches split over 2 ranks: 8 micro-batches each, 4 optimizer steps
    hook.close()
    trainer.strategy.barrier()  # both ranks are done before the process group goes


if __name__ == "__main__":
    main()
