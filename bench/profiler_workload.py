"""Profiler overhead workload (our implementation).

usage: profiler_workload.py CONFIG OUT_DIR STEPS     CONFIG: hook | profiled | profiled100 | python
prints {"loop_s": ..., "close_s": ..., "cpu_s": ..., "steps": ..., "outside_s": ...}
(cpu_s: the process's CPU time over the timed loop and hook.close(), the sampler thread included)
MLP 256-512-512-512-10, batch 128, CPU, one thread, SGD, fed by a DataLoader (in-process); the
same PyTorch hook (default collections, default save interval) in every configuration:
  hook         no profiling
  profiled     system metrics every 500 ms + framework events every step (steps, forward,
               backward, optimizer, data loader)
  profiled100  the same with system metrics every 100 ms
  python       profiled + cProfile of 2 steps (steps 100-101 of the timed loop); outside_s is the
               loop time without those two steps
"""

import json
import logging
import shutil
import sys
import time

logging.disable(logging.CRITICAL)
import torch  # noqa: E402

from hook_workload import Mlp  # noqa: E402

WARMUP = 20
PY_STEPS = (WARMUP + 100, 2)


def main():
    config, out_dir, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
    mlp = Mlp()
    model, loss_fn, opt = mlp.model, mlp.loss_fn, mlp.opt
    n = (WARMUP + steps) * 128
    data = torch.utils.data.TensorDataset(torch.randn(n, 256), torch.randint(0, 10, (n,)))
    loader = torch.utils.data.DataLoader(data, batch_size=128, num_workers=0)

    import smdebug.pytorch as smd
    from smdebug.profiler import ProfilerConfig

    shutil.rmtree(out_dir, ignore_errors=True)
    prof = None
    if config != "hook":
        prof = ProfilerConfig(
            local_path=f"{out_dir}/profiler",
            interval_millis=100 if config == "profiled100" else 500,
            python=PY_STEPS if config == "python" else None,
        )
    hook = smd.Hook(out_dir=f"{out_dir}/run", profiler_config=prof)
    hook.register_module(model)
    hook.register_loss(loss_fn)
    hook.set_mode(smd.modes.TRAIN)
    py_time = 0.0
    for i, (x, y) in enumerate(loader):
        if i == WARMUP:
            t0 = time.perf_counter()
            c0 = time.process_time()
        if i == PY_STEPS[0]:
            tp = time.perf_counter()
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
        if i == PY_STEPS[0] + PY_STEPS[1]:  # the step after the profiled ones stops the profile
            py_time = time.perf_counter() - tp
    loop = time.perf_counter() - t0
    t1 = time.perf_counter()
    hook.close()
    print(
        json.dumps(
            {
                "loop_s": loop,
                "close_s": time.perf_counter() - t1,
                "cpu_s": time.process_time() - c0,
                "steps": steps,
                "outside_s": loop - py_time,
                "outside_steps": steps - PY_STEPS[1] - 1,
            }
        )
    )


if __name__ == "__main__":
    main()
