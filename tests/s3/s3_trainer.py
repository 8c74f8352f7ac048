"""Trains a small model with the hook writing to S3 (started by test_hook_s3.py).

usage: s3_trainer.py OUT_URL STEPS HANDSHAKE_DIR
After step 5 it waits until HANDSHAKE_DIR/reader_opened exists (the reader opened the trial while
the job runs), then finishes; it writes HANDSHAKE_DIR/losses.json with the loss of every step.
"""

import json
import os
import sys
import time

import torch
from torch import nn

import smdebug.pytorch as smd


def main():
    out, steps, hs = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    loss_fn = nn.CrossEntropyLoss()
    hook = smd.Hook(
        out_dir=out, save_config=smd.SaveConfig(save_interval=1), include_collections=["weights", "gradients", "losses"]
    )
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(64, 16), torch.randint(0, 4, (64,))
    losses = {}
    for step in range(steps):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        losses[step] = float(loss.detach())
        if step == 5:
            deadline = time.monotonic() + 120
            while not os.path.exists(os.path.join(hs, "reader_opened")):
                if time.monotonic() > deadline:
                    raise SystemExit("the reader never opened the trial")
                time.sleep(0.01)  # waiting for the reader's file, bounded by the deadline
    hook.close()
    with open(os.path.join(hs, "losses.json"), "w") as f:
        json.dump(losses, f)


if __name__ == "__main__":
    main()
