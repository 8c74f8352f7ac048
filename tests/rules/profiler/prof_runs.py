"""Real PyTorch runs with the profiler on (system metrics every 100 ms, framework events), made to
trigger the profiler rules: a slow start, a stalled step, a data loader without workers whose
items sleep, a worker that sleeps on one batch, a CPU-bound stretch, a memory leak. Each trains
for a few seconds."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

BATCH = 16
N_ITEMS = BATCH * 115
BURNER = "while True: pass"  # a busy loop: one core's share of a CPU-bound stretch


@dataclass
class ProfRun:
    root: Path  # the profiler folder
    out_dir: Path  # the hook's out_dir
    steps: int
    stalled: bool  # True when the job was asked to stop before the last step
    marks: dict = field(default_factory=dict)  # scenario stretch -> [start_us, end_us) (wall clock)


class SleepyData:
    """A dataset whose items each take ``item_sleep`` seconds (a slow data loader), and the items
    of batch ``slow_batch`` ``slow_item_s`` each (a worker that stalls on one batch)."""

    def __init__(self, x, y, item_sleep, slow_batch=None, slow_item_s=0.0):
        self.x, self.y, self.item_sleep = x, y, item_sleep
        self.slow_batch, self.slow_item_s = slow_batch, slow_item_s

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        pause = self.slow_item_s if i // BATCH == self.slow_batch else self.item_sleep
        if pause:
            time.sleep(pause)  # the work a slow loader does, not synchronisation
        return self.x[i], self.y[i]


def _now_us() -> int:
    return int(time.time() * 1e6)


class Stretch:
    """Steps ``[first, last)`` of a run that do something more (burn CPU, keep memory): the wall
    clock of its first and last step goes into ``marks[name]``."""

    def __init__(self, name, steps, marks):
        self.name, self.first, self.last, self.marks = name, *(steps or (None, None)), marks

    def at(self, n) -> bool:
        if self.first is None or not self.first <= n < self.last:
            return False
        mark = self.marks.setdefault(self.name, [_now_us(), None])
        mark[1] = _now_us()
        return True

    @property
    def t0(self) -> float:
        return self.marks[self.name][0] / 1e6


def _stop(processes, mark) -> list:
    """End the busy child processes; the stretch's mark ends then."""
    for p in processes:
        p.kill()
        p.wait()
    if processes:
        mark[1] = _now_us()
    return []


def train(
    base: Path,
    *,
    init_sleep=0.0,
    stall_step=None,
    stall_s=1.5,
    num_workers=0,
    item_sleep=0.0,
    step_s=0.0,
    same_dir=False,
    rotate_s=None,
    until_stopped_s=None,
    steps=115,
    slow_batch=None,
    slow_batch_s=2.0,
    burn=None,
    burn_s=0.05,
    leak=None,
    leak_mb_per_s=300,
    leak_mb=600,
) -> ProfRun:
    """One epoch of ``steps`` steps of an MLP under the hook with the profiler on. ``init_sleep``:
    seconds between the hook's start and the first step; ``stall_step``: the step that takes
    ``stall_s`` more; ``step_s``: each step also waits that long (steps of a known length: on a busy
    host, steps of a millisecond are dwarfed by the scheduler's pauses); ``same_dir``: the profile
    goes into the hook's out_dir (where it looks for stop requests); ``rotate_s``: how often the
    framework timeline is closed for readers (a live rule sees events then); ``until_stopped_s``:
    train epoch after epoch until a rule asks the job to stop, for at most that long;
    ``slow_batch``: the loader's items of that batch take ``slow_batch_s`` in all; ``burn``:
    ``(first, last)`` steps that busy-loop ``burn_s`` on the training thread (instead of waiting
    ``step_s``) while a child process per core busy-loops beside them (every core; ``marks["burn"]``
    ends when they are stopped); ``leak``: ``(first, last)`` steps that keep
    ``leak_mb_per_s`` MB of memory a second in a list, ``leak_mb`` at most (a step that waited
    long on a busy host catches up, so the total is capped; ``marks["kept"]``: from the first
    step of the stretch to the last allocation)."""
    import numpy as np
    import torch

    import smdebug.pytorch as smd
    from smdebug.exceptions import TrainingStopRequested
    from smdebug.profiler import ProfilerConfig

    torch.manual_seed(0)
    x = torch.randn(BATCH * steps, 32)
    y = (x[:, 0] > 0).long()
    data = SleepyData(x, y, item_sleep, slow_batch, slow_batch_s / BATCH)
    loader = torch.utils.data.DataLoader(data, batch_size=BATCH, num_workers=num_workers)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 2))
    loss_fn = torch.nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    out_dir = base / "run"
    root = out_dir if same_dir else base / "prof"
    extra = {} if rotate_s is None else {"rotate_close_interval_s": rotate_s}
    hook = smd.Hook(
        out_dir=str(out_dir), profiler_config=ProfilerConfig(local_path=str(root), interval_millis=100, **extra)
    )
    hook.register_module(model)
    hook.register_loss(loss_fn)
    hook.set_mode(smd.modes.TRAIN)
    if init_sleep:
        time.sleep(init_sleep)  # a slow initialisation, as the scenario
    marks: dict = {}
    burning, leaking = Stretch("burn", burn, marks), Stretch("leak", leak, marks)
    burners: list = []
    kept: list = []
    n, stopped = 0, False
    t_end = time.monotonic() + (until_stopped_s or 0)
    try:
        while True:
            for xb, yb in loader:
                if n == stall_step:
                    time.sleep(stall_s)  # the stalled step of the scenario
                if burning.at(n):
                    burners = burners or [
                        subprocess.Popen([sys.executable, "-c", BURNER]) for _ in range(os.cpu_count() or 1)
                    ]
                    t = time.perf_counter()
                    while time.perf_counter() - t < burn_s:  # CPU-bound work instead of step_s
                        pass
                else:
                    burners = _stop(burners, marks.get("burn"))
                    if step_s:
                        time.sleep(step_s)  # the step's own work, as the scenario
                if leaking.at(n):  # memory kept at leak_mb_per_s from the stretch's start, leak_mb at most
                    due = min(leak_mb, int((time.time() - leaking.t0) * leak_mb_per_s)) - len(kept)
                    if due > 0:
                        kept += [np.ones(2**20, dtype=np.uint8) for _ in range(due)]
                        marks["kept"] = [marks["leak"][0], _now_us()]
                opt.zero_grad()
                loss = loss_fn(model(xb), yb)
                loss.backward()
                opt.step()
                n += 1
            if until_stopped_s is None or time.monotonic() > t_end:
                break
    except TrainingStopRequested:
        stopped = True
    finally:
        _stop(burners, marks.get("burn"))
    hook.close()
    return ProfRun(root, out_dir, n, stopped, marks)
