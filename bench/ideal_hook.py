"""The least a reductions-only hook could cost on the hook benchmark's model: a floor for issue 22.

Same model, data and optimizer as bench/hook_workload.py (MLP 256-512-512-512-10, batch 128, SGD,
one torch thread), and the same six reductions (min, max, mean, std, abs mean, l2) of the 8
parameters at each step's start and of the 8 gradients, from the one-pass moments kernel
(``core.tensors.moments_kernel``, the ``fast`` extra) and ``reduce_moments``, as the hook computes
them. Everything else the hook does is left out: no plans, no records, no writer (the rows go to
a thread that drops them), no layer hooks, no checks. The callbacks do the least each design
needs:

- ``none``: no hook;
- ``no-moments``: the callbacks (a forward pre-hook, a list append per gradient, one end-of-backward
  callback, a loss forward hook) and the hand-over of each step to the dropping thread, no moments;
- ``inline``: the moments of the parameters and gradients on the training thread, in one batch at
  the end of backward (the parameters have not changed yet);
- ``thread-wait``: on a second thread: the parameters handed over at the step's start, the
  gradients at the end of backward, which waits for both (what the hook does);
- ``hot``: each tensor's moments on the training thread while it is in the cache: a layer's
  weight and bias in the layer's forward pre-hook (just before the layer reads them), each
  gradient in its post-accumulate-grad hook (just after backward wrote it); the rows of a step
  from the moments at the end of backward;
- ``thread``: the same as ``thread-wait``, but the end of backward waits for the parameters only; the gradients'
  moments are waited for at the next step's start (run beside the optimizer step: only sound
  when nothing after backward changes the gradients in place).

usage: python bench/ideal_hook.py [ROUNDS] [STEPS] [VARIANT ...]
Each run is a fresh process; variants alternate; per variant the median over rounds of each
process's best block of STEPS steps (ms a step), and its ratio to ``none``.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.path.dirname(HERE), "src")
VARIANTS = ("none", "no-moments", "inline", "thread-wait", "thread", "hot")
OPS = (("min", False), ("max", False), ("mean", False), ("std", False), ("mean", True), ("l2", False))


def child(variant: str, steps: int) -> float:
    import queue
    import threading
    import time

    import numpy as np
    import torch
    from torch import nn

    from smdebug.core.tensors import moments_kernel
    from smdebug.core.tensors.moments import reduce_moments

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                          nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    loss_fn = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(128, 256), torch.randint(0, 10, (128,))
    params = list(model.parameters())
    moments_kernel.kernel()
    moments_kernel.wait()
    kernel = moments_kernel.kernel()
    if kernel is None:
        raise SystemExit("the moments kernel needs numba (pip install smdebug[fast])")

    def moments(t):
        return kernel(t.detach().numpy().reshape(-1), True)

    def rows(ts: list):
        if variant == "no-moments":
            return None
        views = [t.detach().numpy() for t in ts]
        stats, _ = moments_kernel.host_moments(views, True, kernel)
        return reduce_moments(stats, [v.size for v in views], OPS)[0]

    dropped: queue.SimpleQueue = queue.SimpleQueue()
    jobs: queue.SimpleQueue = queue.SimpleQueue()

    def drop() -> None:
        while True:
            dropped.get()

    threading.Thread(target=drop, daemon=True).start()

    def work() -> None:
        while True:
            ts, done = jobs.get()
            done.append(rows(ts))
            done[0].set()

    threading.Thread(target=work, daemon=True).start()

    def submit(ts: list) -> list:
        done: list = [threading.Event()]
        jobs.put((ts, done))
        return done

    def wait(done: list):
        done[0].wait()
        return done[1]

    state: dict = {"grads": [], "queued": False, "params": None, "pending": [], "hot": [], "hot_grads": []}
    sizes = [p.numel() for p in params] + [p.numel() for p in reversed(params)]

    def end_of_backward() -> None:
        state["queued"] = False
        grads, state["grads"] = state["grads"], []
        if variant.startswith("thread"):
            got = wait(state["params"])
            job = submit(grads)
            if variant == "thread-wait":
                dropped.put((got, wait(job), state.get("loss")))
            else:
                state["pending"].append(job)
            return
        if variant == "hot":
            stats = np.array(state["hot"] + [moments_of for moments_of in state["hot_grads"]])
            state["hot"], state["hot_grads"] = [], []
            dropped.put((reduce_moments(stats, sizes, OPS)[0], state.get("loss")))
            return
        if variant == "inline":
            dropped.put((rows(params + grads), state.get("loss")))
        else:
            dropped.put((rows(params), rows(grads), state.get("loss")))

    def pre_forward(module, inputs) -> None:
        if variant.startswith("thread"):
            for job in state["pending"]:
                dropped.put(wait(job))
            state["pending"] = []
            state["params"] = submit(params)

    def on_grad(p) -> None:
        if not state["queued"]:
            state["queued"] = True
            torch.autograd.Variable._execution_engine.queue_callback(end_of_backward)
        if variant == "hot":
            state["hot_grads"].append(moments(p.grad))
        else:
            state["grads"].append(p.grad)

    def layer_pre_forward(module, inputs) -> None:
        state["hot"].append(moments(module.weight))
        state["hot"].append(moments(module.bias))

    def on_loss(module, inputs, output) -> None:
        state["loss"] = output.detach()

    if variant != "none":
        model.register_forward_pre_hook(pre_forward)
        for p in params:
            p.register_post_accumulate_grad_hook(on_grad)
        loss_fn.register_forward_hook(on_loss)
        if variant == "hot":
            for layer in model:
                if isinstance(layer, nn.Linear):
                    layer.register_forward_pre_hook(layer_pre_forward)

    def step() -> None:
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()

    for _ in range(30):
        step()
    best = float("inf")
    for _ in range(4):
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        best = min(best, (time.perf_counter() - t0) / steps)
    return best


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        print(child(sys.argv[2], int(sys.argv[3])))
        return
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 60
    variants = sys.argv[3:] or list(VARIANTS)
    if "none" not in variants:
        variants.insert(0, "none")
    sys.path.insert(0, HERE)
    from benchutil import machine

    print(f"{machine()}; {rounds} rounds x 4 blocks x {steps} steps")
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    times: dict = {v: [] for v in variants}
    for r in range(rounds):
        for v in variants if r % 2 == 0 else variants[::-1]:
            out = subprocess.run([sys.executable, __file__, "--child", v, str(steps)], env=env, check=True,
                                 capture_output=True, text=True).stdout
            times[v].append(float(out.split()[-1]) * 1e3)
    base = statistics.median(times["none"])
    for v in variants:
        med = statistics.median(times[v])
        print(f"{v:12s} {med:7.3f} ms/step  {med / base:5.3f}x   (rounds: {' '.join(f'{t:.3f}' for t in times[v])})")


if __name__ == "__main__":
    main()
