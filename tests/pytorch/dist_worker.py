"""One rank of a 2-process gloo training run with the hook (started by test_hook_distributed.py).

usage: dist_worker.py RANK WORLD PORT OUT_DIR INCLUDE_WORKERS
"""

import os
import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

import smdebug.pytorch as smd

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "launch", "scripts"))
from gloo_exit import end_gloo  # noqa: E402


def main():
    rank, world, port, out_dir, include_workers = (
        int(sys.argv[1]),
        int(sys.argv[2]),
        sys.argv[3],
        sys.argv[4],
        sys.argv[5],
    )
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    torch.set_num_threads(1)
    hook = smd.Hook(
        out_dir=out_dir,
        save_config=smd.SaveConfig(save_interval=1),
        include_workers=include_workers,
        include_collections=["weights", "gradients", "losses"],
    )
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = DistributedDataParallel(nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 1)))
    hook.register_module(model)
    loss_fn = nn.MSELoss()
    hook.register_loss(loss_fn)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(rank)
    for _ in range(3):
        x, y = torch.randn(8, 4, generator=g), torch.randn(8, 1, generator=g)
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    hook.close()
    end_gloo()  # see tests/launch/scripts/gloo_exit.py


if __name__ == "__main__":
    main()
