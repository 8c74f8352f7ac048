"""An unmodified Hugging Face Accelerate training script (CPU), for the launcher's tests; run with
``accelerate launch --cpu`` (one process) or ``accelerate launch --multi_gpu --num_processes 2``
(two CPU processes on gloo: the script asks for the CPU, and multi_gpu is accelerate's torchrun launcher;
its --cpu flag runs one process unless mpirun is used).

--explicit: hooked by hand, ``register_module(accelerator.unwrap_model(model))`` (the reference for names).
"""

import argparse

import torch
import torch.nn.functional as F
from accelerate import Accelerator
from gloo_exit import end_gloo  # beside this script
from nets import Net  # beside this script


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--explicit", action="store_true")
    args = p.parse_args()
    accelerator = Accelerator(cpu=True)
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model, opt = accelerator.prepare(model, opt)
    hook = None
    if args.explicit:
        import smdebug.pytorch as smd

        hook = smd.Hook.create_from_json_file()
        hook.register_module(accelerator.unwrap_model(model))
    x = torch.randn(32, 8)
    y = torch.randint(0, 4, (32,))
    for step in range(args.steps):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        if hook is not None:
            hook.record_tensor_value("loss", loss)
        accelerator.backward(loss)
        opt.step()
        print(f"last step {step}", flush=True)
    if torch.distributed.is_initialized():
        end_gloo()  # see gloo_exit.py
    accelerator.end_training()


if __name__ == "__main__":
    main()
