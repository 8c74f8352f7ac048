"""Hook overhead workload, runnable by either implementation (ours, or 1.0.34 in its venv).

usage: hook_workload.py CONFIG OUT_DIR STEPS     CONFIG: none | raw | reductions, optionally with
       "/N": saving every Nth step (raw/10), not every step
prints {"loop_s": ..., "close_s": ..., "steps": ..., "train_cpu_s": ..., "proc_cpu_s": ...}
(train_cpu_s: CPU time of the training thread in the loop; proc_cpu_s: CPU time of the whole
process, all threads, in the loop and close: both robust to other load on the machine)
MLP 256-512-512-512-10, batch 128, CPU, one thread, SGD; the hook saves every step.
"""

import json
import logging
import shutil
import sys
import time

logging.disable(logging.CRITICAL)
import torch  # noqa: E402
from torch import nn  # noqa: E402

WARMUP = 20


class Mlp:
    """The benchmarks' model on one torch thread: MLP 256-512-512-512-10, cross-entropy, SGD, one
    batch of 128 random rows (bench/ideal_hook.py and profiler_workload.py use it too)."""

    def __init__(self):
        torch.set_num_threads(1)
        torch.manual_seed(0)
        self.model = nn.Sequential(
            nn.Linear(256, 512),
            nn.ReLU(),
            nn.Linear(512, 512),
            nn.ReLU(),
            nn.Linear(512, 512),
            nn.ReLU(),
            nn.Linear(512, 10),
        )
        self.loss_fn = nn.CrossEntropyLoss()
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01)
        self.x = torch.randn(128, 256)
        self.y = torch.randint(0, 10, (128,))

    def step(self):
        self.opt.zero_grad()
        self.loss_fn(self.model(self.x), self.y).backward()
        self.opt.step()


def build(config, out_dir):
    """The model, its loss and optimizer, and the hook of CONFIG: ``(step, hook)``, ``step()`` one
    training step, ``hook`` None for "none" (bench/hook_ab.py and hook_callgrind.py use this too)."""
    mlp = Mlp()
    model, loss_fn = mlp.model, mlp.loss_fn
    hook = None
    if config != "none":
        import smdebug.pytorch as smd
        from hook_ablate import apply

        apply()  # $SMDEBUG_BENCH_ABLATE: parts of the hook switched off (bench/hook_ablate.py)

        shutil.rmtree(out_dir, ignore_errors=True)
        config, _, every = config.partition("/")
        if config == "raw":
            rc = smd.ReductionConfig(save_raw_tensor=True)
        else:
            rc = smd.ReductionConfig(
                reductions=["min", "max", "mean", "std"], abs_reductions=["mean"], norms=["l2"], save_raw_tensor=False
            )
        hook = smd.Hook(
            out_dir=out_dir,
            save_config=smd.SaveConfig(save_interval=int(every or 1)),
            reduction_config=rc,
            include_collections=["weights", "biases", "gradients", "losses"],
        )
        hook.register_module(model)
        hook.register_loss(loss_fn)
        try:  # the one-pass moments kernel (where the tree has it): compiled before any step is timed
            from smdebug.core.tensors import moments_kernel
        except ImportError:
            pass
        else:
            moments_kernel.wait()

    return mlp.step, hook


def main():
    config, out_dir, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
    step, hook = build(config, out_dir)
    for i in range(WARMUP + steps):
        if i == WARMUP:
            t0, c0, p0 = time.perf_counter(), time.thread_time(), time.process_time()
        step()
    loop, train_cpu = time.perf_counter() - t0, time.thread_time() - c0
    t1 = time.perf_counter()
    if hook is not None:
        hook.close()
    close = time.perf_counter() - t1
    print(
        json.dumps(
            {
                "loop_s": loop,
                "close_s": close,
                "steps": steps,
                "train_cpu_s": train_cpu,
                "proc_cpu_s": time.process_time() - p0,
            }
        )
    )


if __name__ == "__main__":
    main()
