"""Where the hook's time goes, with measures that hold on a loaded machine: CPU time per thread
(training, writer, copy threads), and what the training thread does in one step (Python calls
by cProfile, torch ops by torch.profiler).

usage: PYTHONPATH=src python bench/profile_hook.py CONFIG [STEPS]     CONFIG: none | raw | reductions
Same model and hook as bench/hook_workload.py (MLP 256-512-512-512-10, batch 128, 1 thread).
"""

from __future__ import annotations

import cProfile
import logging
import pstats
import sys
import tempfile
import threading
import time

logging.disable(logging.CRITICAL)
import torch  # noqa: E402
from torch import nn  # noqa: E402


def thread_cpu() -> dict:
    out = {}
    for t in threading.enumerate():
        try:
            out[t.name] = time.clock_gettime(time.pthread_getcpuclockid(t.ident))
        except (OSError, TypeError):
            pass
    return out


def main() -> None:
    config = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                          nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    loss_fn = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(128, 256), torch.randint(0, 10, (128,))
    hook = None
    if config != "none":
        import smdebug.pytorch as smd

        rc = (smd.ReductionConfig(save_raw_tensor=True) if config == "raw" else
              smd.ReductionConfig(reductions=["min", "max", "mean", "std"], abs_reductions=["mean"],
                                  norms=["l2"], save_raw_tensor=False))
        hook = smd.Hook(out_dir=tempfile.mkdtemp(prefix="smdebug-prof-"), reduction_config=rc,
                        save_config=smd.SaveConfig(save_interval=1),
                        include_collections=["weights", "biases", "gradients", "losses"])
        hook.register_module(model)
        hook.register_loss(loss_fn)

    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()

    for _ in range(20):
        step()
    before, t0 = thread_cpu(), time.perf_counter()
    for _ in range(steps):
        step()
    if hook is not None:
        hook.flush() if hasattr(hook, "flush") else None
    after, wall = thread_cpu(), time.perf_counter() - t0
    print(f"{config}: wall {wall / steps * 1e3:.2f} ms/step (machine load makes this noisy)")
    for name in after:
        d = after[name] - before.get(name, 0.0)
        print(f"  CPU {name:<24}{d / steps * 1e3:8.3f} ms/step")
    prof = cProfile.Profile()
    prof.enable()
    step()
    prof.disable()
    st = pstats.Stats(prof)
    print(f"  training thread, one step: {st.total_calls} Python calls (cProfile)")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as p:
        step()
    ops = [e for e in p.events() if e.name.startswith("aten::") and e.cpu_parent is None]
    print(f"  training thread, one step: {len(ops)} top-level torch ops (torch.profiler)")
    if hook is not None:
        hook.close()


if __name__ == "__main__":
    main()
