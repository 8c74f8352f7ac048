"""An unmodified PyTorch script (no smdebug in it): 64 steps of an MLP on scikit-learn's digits; a NaN
enters the input at step 33, so the loss is NaN from there on."""

import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch import nn

torch.manual_seed(0)
digits = load_digits()
x = torch.tensor(digits.data / 16.0, dtype=torch.float32)
y = torch.tensor(digits.target, dtype=torch.long)
model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(64):
    batch = torch.arange(step * 16, step * 16 + 16) % len(x)
    xb = x[batch].clone()
    if step == 33:
        xb[0, 0] = float("nan")
    opt.zero_grad()
    loss = F.cross_entropy(model(xb), y[batch])
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.4f}", flush=True)
