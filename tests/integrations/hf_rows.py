"""The tiny token data set the Hugging Face tests train on (no download)."""

from __future__ import annotations

import torch


class Rows(torch.utils.data.Dataset):
    """``n`` rows of 6 token ids below 50 and a label 0 or 1, from ``seed``."""

    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(0, 50, (n, 6), generator=g)
        self.labels = torch.randint(0, 2, (n,), generator=g)

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.labels[i]}
