"""Real PyTorch runs with the profiler on (system metrics every 100 ms, framework events), made to
trigger the profiler rules: a slow start, a stalled step, a data loader without workers whose
items sleep. Each trains for a few seconds."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

N_ITEMS = 16 * 115


@dataclass
class ProfRun:
    root: Path  # the profiler folder
    out_dir: Path  # the hook's out_dir
    steps: int
    stalled: bool  # True when the job was asked to stop before the last step


class SleepyData:
    """A dataset whose items each take ``item_sleep`` seconds (a slow data loader)."""

    def __init__(self, x, y, item_sleep):
        self.x, self.y, self.item_sleep = x, y, item_sleep

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        if self.item_sleep:
            time.sleep(self.item_sleep)  # the work a slow loader does, not synchronisation
        return self.x[i], self.y[i]


def train(base: Path, *, init_sleep=0.0, stall_step=None, stall_s=1.5, num_workers=0, item_sleep=0.0,
          step_s=0.0, same_dir=False, rotate_s=None, until_stopped_s=None) -> ProfRun:
    """One epoch of an MLP under the hook with the profiler on. ``init_sleep``: seconds between
    the hook's start and the first step; ``stall_step``: the step that takes ``stall_s`` more;
    ``step_s``: each step also waits that long (steps of a known length: on a busy host, steps
    of a millisecond are dwarfed by the scheduler's pauses); ``same_dir``: the profile goes into the hook's out_dir (where it looks for stop requests);
    ``rotate_s``: how often the framework timeline is closed for readers (a live rule sees events
    then); ``until_stopped_s``: train epoch after epoch until a rule asks the job to stop, for at
    most that long."""
    import torch

    import smdebug.pytorch as smd
    from smdebug.exceptions import TrainingStopRequested
    from smdebug.profiler import ProfilerConfig

    torch.manual_seed(0)
    x = torch.randn(N_ITEMS, 32)
    y = (x[:, 0] > 0).long()
    loader = torch.utils.data.DataLoader(SleepyData(x, y, item_sleep), batch_size=16, num_workers=num_workers)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 2))
    loss_fn = torch.nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    out_dir = base / "run"
    root = out_dir if same_dir else base / "prof"
    extra = {} if rotate_s is None else {"rotate_close_interval_s": rotate_s}
    hook = smd.Hook(out_dir=str(out_dir),
                    profiler_config=ProfilerConfig(local_path=str(root), interval_millis=100, **extra))
    hook.register_module(model)
    hook.register_loss(loss_fn)
    hook.set_mode(smd.modes.TRAIN)
    if init_sleep:
        time.sleep(init_sleep)  # a slow initialisation, as the scenario
    n, stopped = 0, False
    t_end = time.monotonic() + (until_stopped_s or 0)
    try:
        while True:
            for xb, yb in loader:
                if n == stall_step:
                    time.sleep(stall_s)  # the stalled step of the scenario
                if step_s:
                    time.sleep(step_s)  # the step's own work, as the scenario
                opt.zero_grad()
                loss = loss_fn(model(xb), yb)
                loss.backward()
                opt.step()
                n += 1
            if until_stopped_s is None or time.monotonic() > t_end:
                break
    except TrainingStopRequested:
        stopped = True
    hook.close()
    return ProfRun(root, out_dir, n, stopped)
