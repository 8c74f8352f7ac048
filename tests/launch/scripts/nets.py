"""The small model the PyTorch test scripts train (imported from beside them: a script's own folder
is first on sys.path when it runs, under python, torchrun and accelerate launch alike). Its class
name, ``Net``, is the prefix of every tensor name the tests look for."""

import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))
