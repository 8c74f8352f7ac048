"""The least a hook could cost on the hook benchmark's model: a floor for issue 22's targets.

Same model, data and optimizer as bench/hook_workload.py (MLP 256-512-512-512-10, batch 128, SGD,
one torch thread). For reductions, the same six (min, max, mean, std, abs mean, l2) of the 8
parameters at each step's start and of the 8 gradients, from the one-pass moments kernel
(``core.tensors.moments_kernel``, the ``fast`` extra) and ``reduce_moments``, as the hook computes
them; for raw values, copies of the 16 tensors and one file written a step. Everything else the
hook does is left out: no plans, no records, no event files (the rows go to a thread that drops
them), no layer hooks, no checks. The callbacks do the least each design needs:

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
- ``raw``: the raw values instead of reductions: the parameters and gradients copied at the end
  of backward on the training thread (``torch._foreach_copy_`` into one of three reused sets of
  buffers), and written by a second thread, one file a step (5.3 MB), as the writer would; the
  step waits when the writer is three steps behind;
- ``raw-thread``: the same, copied on the second thread (the parameters during forward, the
  gradients when backward ends, waited for), as the hook does;
- ``raw-nowrite``: the copies of ``raw`` only;
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
VARIANTS = ("none", "no-moments", "inline", "thread-wait", "thread", "hot", "raw", "raw-thread", "raw-nowrite")
OPS = (("min", False), ("max", False), ("mean", False), ("std", False), ("mean", True), ("l2", False))


def child(variant: str, steps: int) -> float:
    import queue
    import tempfile
    import threading
    import time

    import numpy as np
    import torch
    from torch import nn

    from hook_workload import Mlp
    from smdebug.core.tensors import moments_kernel
    from smdebug.core.tensors.moments import reduce_moments

    mlp = Mlp()
    model, loss_fn = mlp.model, mlp.loss_fn
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

    files: queue.SimpleQueue = queue.SimpleQueue()
    out_dir = tempfile.mkdtemp(prefix="ideal-hook-")

    def write_files() -> None:
        n = 0
        while True:
            bufs, written = files.get()
            path = os.path.join(out_dir, f"step{n % 4}")
            fd = os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            for b in bufs:
                os.write(fd, memoryview(b.numpy()).cast("B"))
            os.close(fd)
            os.replace(path + ".tmp", path)
            n += 1
            written.set()

    threading.Thread(target=write_files, daemon=True).start()
    state_ring = []
    for _ in range(3):
        done = threading.Event()
        done.set()
        state_ring.append(([torch.empty_like(p) for p in params + params], done))

    def work() -> None:
        while True:
            fn, done = jobs.get()
            with torch.no_grad():
                done.append(fn())
            done[0].set()

    threading.Thread(target=work, daemon=True).start()

    def submit(ts: list) -> list:
        done: list = [threading.Event()]
        jobs.put((ts if callable(ts) else (lambda: rows(ts)), done))
        return done

    def wait(done: list):
        done[0].wait()
        return done[1]

    state: dict = {
        "grads": [],
        "queued": False,
        "params": None,
        "pending": [],
        "hot": [],
        "hot_grads": {},
        "ring": state_ring,
    }
    sizes = [p.numel() for p in params + params]

    def end_of_backward() -> None:
        state["queued"] = False
        state["grads"] = []  # the least bookkeeping a hook does per gradient (read: the gradients below)
        grads = [p.grad for p in params]
        if variant.startswith("raw"):
            ring = state["ring"]
            if variant == "raw-thread":
                free = ring[-1]
                n = len(params)
                wait(state["params"])
                wait(submit(lambda: torch._foreach_copy_(free[0][n:], grads)))
            else:
                free = ring.pop(0)
                free[1].wait()  # written
                free[1].clear()
                torch._foreach_copy_(free[0], params + grads)
                ring.append(free)
            if variant in ("raw", "raw-thread"):
                files.put(free)
            else:
                free[1].set()
            return
        if variant.startswith("thread"):
            got = wait(state["params"])
            job = submit(grads)
            if variant == "thread-wait":
                dropped.put((got, wait(job), state.get("loss")))
            else:
                dropped.put(got)
                state["pending"].append(job)
            return
        if variant == "hot":
            stats = np.array(state["hot"] + [state["hot_grads"][p] for p in params])
            state["hot"], state["hot_grads"] = [], {}
            dropped.put((reduce_moments(stats, sizes, OPS)[0], state.get("loss")))
            return
        if variant == "inline":
            dropped.put((rows(params + grads), state.get("loss")))
        else:
            dropped.put((rows(params), rows(grads), state.get("loss")))

    def pre_forward(module, inputs) -> None:
        if variant == "raw-thread":
            ring = state["ring"]
            free = ring.pop(0)
            free[1].wait()
            free[1].clear()
            ring.append(free)
            state["params"] = submit(lambda: torch._foreach_copy_(free[0][: len(params)], params))
            return
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
            state["hot_grads"][p] = moments(p.grad)
        else:
            state["grads"].append(p)

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

    step = mlp.step
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
            out = subprocess.run(
                [sys.executable, __file__, "--child", v, str(steps)],
                env=env,
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            times[v].append(float(out.split()[-1]) * 1e3)
    base = statistics.median(times["none"])
    for v in variants:
        med = statistics.median(times[v])
        print(f"{v:12s} {med:7.3f} ms/step  {med / base:5.3f}x   (rounds: {' '.join(f'{t:.3f}' for t in times[v])})")


if __name__ == "__main__":
    main()
