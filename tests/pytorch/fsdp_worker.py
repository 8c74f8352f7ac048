"""One rank of a 2-process FSDP2 (``fully_shard``) training run on gloo, with the hook; started by
torchrun from test_fsdp.py. Rank 0 also trains an unsharded copy of the model on both ranks' batches
(what FSDP computes) and writes its parameters and gradients at every step to RESULT_DIR/reference.npz.

usage: torchrun --nproc_per_node 2 fsdp_worker.py OUT_DIR gather|local RESULT_DIR [compile|checkpoint|hsdp1x2|hsdp2x1]

hsdp<R>x<S>: HSDP, fully_shard on a 2-D device mesh of R replicas of S shards ("replicate", "shard").
"""

import copy
import os
import sys

import numpy as np
import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import fully_shard

import smdebug.pytorch as smd

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "launch", "scripts"))
from gloo_exit import end_gloo  # noqa: E402

TRAIN_STEPS = 3


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 6)
        self.fc2 = nn.Linear(6, 3)
        self.scale = nn.Parameter(torch.full((3,), 1.5))  # a parameter of the root module itself

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x))) * self.scale


def main():
    out_dir, mode, result_dir = sys.argv[1:4]
    variant = sys.argv[4] if len(sys.argv) > 4 else ""
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = MLP()
    reference = copy.deepcopy(model)  # unsharded, the same initial values
    mesh = None
    if variant.startswith("hsdp"):
        from torch.distributed.device_mesh import init_device_mesh

        shape = tuple(int(n) for n in variant[len("hsdp") :].split("x"))
        mesh = init_device_mesh("cpu", shape, mesh_dim_names=("replicate", "shard"))
    fully_shard(model.fc1, mesh=mesh)
    fully_shard(model.fc2, mesh=mesh)
    fully_shard(model, mesh=mesh)
    if variant == "checkpoint":
        from torch.utils.checkpoint import checkpoint

        inner = model.fc1.forward
        model.fc1.forward = lambda x: checkpoint(inner, x, use_reentrant=False)
    hook = smd.Hook(
        out_dir=out_dir,
        save_config=smd.SaveConfig(save_interval=1),
        include_workers="all",
        include_collections=["weights", "gradients", "losses"],
        gather_sharded=(mode == "gather"),
        reduction_config=smd.ReductionConfig(reductions=["mean", "max"], norms=["l2"], save_raw_tensor=True),
    )
    run = torch.compile(model) if variant == "compile" else model
    hook.register_module(run)
    loss_fn = nn.MSELoss()
    hook.register_loss(loss_fn)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1)
    ref = {}
    hook.set_mode(smd.modes.TRAIN)
    for step in range(TRAIN_STEPS):
        g = torch.Generator().manual_seed(100 * step)
        xs, ys = torch.randn(world, 8, 4, generator=g), torch.randn(world, 8, 3, generator=g)
        for name, p in reference.named_parameters():
            ref[f"{step}/MLP_{name}"] = p.detach().numpy().copy()
        opt.zero_grad()
        loss = loss_fn(run(xs[rank]), ys[rank])
        loss.backward()
        opt.step()
        ref_opt.zero_grad()
        ref_loss = nn.functional.mse_loss(reference(xs.reshape(-1, 4)), ys.reshape(-1, 3))
        ref_loss.backward()
        for name, p in reference.named_parameters():
            ref[f"{step}/gradient/MLP_{name}"] = p.grad.numpy().copy()
        ref_opt.step()
        ref[f"{step}/loss_{rank}"] = np.array([loss.item()])
    hook.set_mode(smd.modes.EVAL)
    with torch.no_grad():
        run(torch.ones(2, 4))
    hook.close()
    losses = [None] * world
    dist.all_gather_object(losses, {k: v for k, v in ref.items() if k.split("/")[1].startswith("loss_")})
    if rank == 0:
        for part in losses:
            ref.update(part)
        np.savez(os.path.join(result_dir, "reference.npz"), **ref)
    end_gloo()  # see tests/launch/scripts/gloo_exit.py: torch 2.13's gloo can abort a rank at exit otherwise


if __name__ == "__main__":
    main()
