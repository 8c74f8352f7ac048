"""An unmodified FSDP training script on gloo (CPU), for the launcher's tests; run under torchrun.

--fsdp 1: FullyShardedDataParallel(model, use_orig_params=True); --fsdp 2: FSDP2's ``fully_shard``,
which changes the model in place. --explicit: hooked by hand, ``register_module`` of the inner model
after wrapping (the reference for names).
"""

import argparse

import torch
import torch.distributed as dist
import torch.nn.functional as F
from gloo_exit import end_gloo  # beside this script
from nets import Net  # beside this script


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--fsdp", choices=["1", "2"], required=True)
    p.add_argument("--explicit", action="store_true")
    args = p.parse_args()
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = Net()
    if args.fsdp == "1":
        from torch.distributed.fsdp import FullyShardedDataParallel

        net = FullyShardedDataParallel(model, use_orig_params=True, device_id=torch.device("cpu"))
        inner = net.module
    else:
        from torch.distributed.fsdp import fully_shard

        net = inner = fully_shard(model)
    hook = None
    if args.explicit:
        import smdebug.pytorch as smd

        hook = smd.Hook.create_from_json_file()
        hook.register_module(inner)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    x = torch.randn(32, 8)
    y = torch.randint(0, 4, (32,))
    for step in range(args.steps):
        opt.zero_grad()
        loss = F.cross_entropy(net(x), y)
        if hook is not None:
            hook.record_tensor_value("loss", loss)
        loss.backward()
        opt.step()
        print(f"last step {step}", flush=True)
    end_gloo()  # see gloo_exit.py


if __name__ == "__main__":
    main()
