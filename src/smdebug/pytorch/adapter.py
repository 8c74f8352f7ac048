"""Torch tensors for the hook: copies and reductions with torch ops on the tensor's own device,
one batched device-to-host copy per step."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import torch

from smdebug.core.adapter import NumpyAdapter

__all__ = ["TorchAdapter"]

_LOW_PRECISION = (torch.float16, torch.bfloat16)


def _to_numpy(t: torch.Tensor) -> np.ndarray:
    if t.dtype == torch.bfloat16:
        import ml_dtypes

        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


class TorchAdapter(NumpyAdapter):
    def snapshot(self, value):
        if isinstance(value, torch.Tensor):
            # a copy on the same device: the optimizer may change the tensor before the step ends
            return value.detach().clone()
        return super().snapshot(value)

    def reduce(self, value, op: str, abs: bool):
        if not isinstance(value, torch.Tensor):
            return super().reduce(value, op, abs)
        t = value.detach()
        if t.dtype in _LOW_PRECISION or not (t.is_floating_point() or t.is_complex()):
            t = t.float()
        if abs:
            t = t.abs()
        if op == "min":
            return t.min()
        if op == "max":
            return t.max()
        if op == "mean":
            return t.mean()
        if op == "std":
            return t.std()
        if op == "variance":
            return t.var()
        if op == "sum":
            return t.sum()
        if op == "prod":
            return t.prod()
        if op in ("l1", "l2"):
            return torch.linalg.vector_norm(t, ord=int(op[1]))
        return super().reduce(value.detach().cpu().numpy(), op, abs)

    def shape(self, value) -> tuple:
        return tuple(value.shape) if isinstance(value, torch.Tensor) else super().shape(value)

    def size(self, value) -> int:
        return value.numel() if isinstance(value, torch.Tensor) else super().size(value)

    def is_bool(self, value) -> bool:
        return value.dtype == torch.bool if isinstance(value, torch.Tensor) else super().is_bool(value)

    def materialize(self, objs: list) -> list:
        out: list = [None] * len(objs)
        scalars = defaultdict(list)  # (device, dtype) -> indices of 0-d tensors (reductions)
        device_tensors = defaultdict(list)  # accelerator tensors, copied in one go per dtype
        for i, o in enumerate(objs):
            if not isinstance(o, torch.Tensor):
                out[i] = np.asarray(o)
            elif o.dim() == 0:
                scalars[(o.device, o.dtype)].append(i)
            elif o.device.type != "cpu":
                device_tensors[(o.device, o.dtype)].append(i)
            else:
                out[i] = _to_numpy(o)
        for idx in scalars.values():
            host = torch.stack([objs[i] for i in idx]).cpu()
            for j, i in enumerate(idx):
                out[i] = _to_numpy(host[j])
        for idx in device_tensors.values():
            flat = torch.cat([objs[i].reshape(-1) for i in idx]).cpu()
            offset = 0
            for i in idx:
                n = objs[i].numel()
                out[i] = _to_numpy(flat[offset : offset + n]).reshape(tuple(objs[i].shape))
                offset += n
        return out
