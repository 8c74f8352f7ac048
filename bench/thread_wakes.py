"""What waking another Python thread costs the training step, without smdebug.

The PyTorch hook hands work to its copy thread and its writer thread a few times a step; each
hand-over that finds the thread asleep wakes it (a futex wake, and the GIL handed back and forth).
This measures that alone, on the hook benchmark's model (MLP 256-512-512-512-10, batch 128, SGD,
one thread): each parameter gets a post-accumulate-grad hook that, by MODE,

- ``none``: is not registered;
- ``noop``: does nothing;
- ``put``: puts an item on a ``queue.SimpleQueue`` that a consumer thread waits on (8 wake-ups a
  step); the consumer then runs a loop of WORK additions holding the GIL.

usage: python bench/thread_wakes.py [STEPS] [ROUNDS] [WORK]
Fresh process per mode, modes alternating; prints per mode the minimum over rounds of the
wall time and the training thread's CPU time per step.
"""

from __future__ import annotations

import json
import subprocess
import sys

CHILD = r"""
import json, queue, sys, threading, time
import torch
from torch import nn
mode, steps, rounds, work = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
torch.set_num_threads(1)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                      nn.Linear(512, 10))
loss_fn, opt = nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(128, 256), torch.randint(0, 10, (128,))
q = queue.SimpleQueue()

def consume():
    while True:
        q.get()
        s = 0
        for i in range(work):
            s += i

if mode != "none":
    threading.Thread(target=consume, daemon=True).start()
    hook = (lambda p: q.put(1)) if mode == "put" else (lambda p: None)
    for p in model.parameters():
        p.register_post_accumulate_grad_hook(hook)

def step():
    opt.zero_grad()
    loss_fn(model(x), y).backward()
    opt.step()

for _ in range(50):
    step()
wall, cpu = [], []
for _ in range(rounds):
    w, c = time.perf_counter(), time.thread_time()
    for _ in range(steps):
        step()
    wall.append((time.perf_counter() - w) / steps * 1e3)
    cpu.append((time.thread_time() - c) / steps * 1e3)
print(json.dumps({"wall": min(wall), "cpu": min(cpu)}))
"""


def main() -> None:
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 6
    work = sys.argv[3] if len(sys.argv) > 3 else "0"
    modes = ("none", "noop", "put")
    best: dict = {m: {"wall": float("inf"), "cpu": float("inf")} for m in modes}
    for r in range(3):
        for m in modes if r % 2 == 0 else modes[::-1]:
            out = subprocess.run(
                [sys.executable, "-c", CHILD, m, str(steps), str(rounds), work],
                capture_output=True,
                text=True,
                check=True,
            )
            got = json.loads(out.stdout.strip().splitlines()[-1])
            best[m] = {k: min(best[m][k], got[k]) for k in got}
    print(f"{steps} steps x {rounds} rounds x 3 processes per mode, consumer work {work}; ms a step (minimum)")
    for m in modes:
        print(f"  {m:<5} wall {best[m]['wall']:.3f}  training-thread CPU {best[m]['cpu']:.3f}")


if __name__ == "__main__":
    main()
