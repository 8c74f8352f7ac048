"""A PyTorch training that a test drives: before each step it reads one line from stdin (the test
hands out steps), so the test decides how far training may run ahead of the rule.

usage: rt_trainer.py OUT_DIR STEPS
"""

import sys

import torch
import torch.nn as nn

import smdebug.pytorch as smd
from smdebug.core.save_config import SaveConfig

out_dir, steps = sys.argv[1], int(sys.argv[2])
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
loss_fn = nn.CrossEntropyLoss()
hook = smd.Hook(out_dir=out_dir, save_config=SaveConfig(save_interval=1), include_collections=["weights", "losses"])
hook.register_module(model)
hook.register_loss(loss_fn)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(16, 8), torch.randint(0, 3, (16,))
for step in range(steps):
    if sys.stdin.readline().strip() != "go":
        sys.exit(f"trainer: expected 'go' before step {step}")
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
hook.close()
print("trainer done", flush=True)
