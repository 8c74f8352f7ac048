"""A PyTorch job for the StopTraining test: trains until a rule stops it (or MAX_STEPS).

usage: stop_trainer.py OUT NAN_STEP
From step NAN_STEP on, the inputs are NaN, so the weights become NaN. Each step also stands for
a real training step's duration (STEP_SECONDS of work), so that a rule in another process has the
time a real job gives it. Prints one JSON line: the steps run, and how training ended.
"""

import json
import sys
import time

import torch
import torch.nn as nn

import smdebug.pytorch as smd
from smdebug.exceptions import TrainingStopRequested

STEP_SECONDS = 0.3
MAX_STEPS = 60

out, nan_step = sys.argv[1], int(sys.argv[2])
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
loss_fn = nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
hook = smd.Hook(
    out_dir=out,
    save_config=smd.SaveConfig(save_interval=1),
    include_collections=["weights", "biases", "gradients", "losses"],
)
hook.register_module(model)
hook.register_loss(loss_fn)
x, y = torch.randn(32, 8), torch.randint(0, 3, (32,))
ended, steps = "max_steps", 0
try:
    for step in range(MAX_STEPS):
        xb = torch.full_like(x, float("nan")) if step >= nan_step else x
        opt.zero_grad()
        loss_fn(model(xb), y).backward()
        opt.step()
        steps = step + 1
        time.sleep(STEP_SECONDS)  # the rest of a real step's work
except TrainingStopRequested as exc:
    ended = f"stopped: {exc}"
hook.close()
print(json.dumps({"steps": steps, "ended": ended}))
