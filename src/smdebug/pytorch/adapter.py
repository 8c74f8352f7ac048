"""Torch tensors for the hook: the torch operations core's BatchedAdapter needs (copies and
reductions with torch ops on the tensor's own device, one batched device-to-host copy per step)."""

from __future__ import annotations

import numpy as np
import torch

from smdebug.core.tensors.batched_adapter import BatchedAdapter

__all__ = ["TorchAdapter", "TorchOps"]

_LOW_PRECISION = (torch.float16, torch.bfloat16)

_OPS = {
    "mean": torch.Tensor.mean,
    "std": torch.Tensor.std,
    "variance": torch.Tensor.var,
    "sum": torch.Tensor.sum,
    "prod": torch.Tensor.prod,
    "l1": lambda t: torch.linalg.vector_norm(t, ord=1),
    "l2": lambda t: torch.linalg.vector_norm(t, ord=2),
}


class TorchOps:
    """:class:`smdebug.core.tensors.tensor_ops.TensorOps` for torch.Tensor."""

    @staticmethod
    def is_tensor(value) -> bool:
        return isinstance(value, torch.Tensor)

    @staticmethod
    def detach(t):
        return t.detach()

    @staticmethod
    def is_host(t) -> bool:
        return t.is_cpu

    @staticmethod
    def is_host_real(value) -> bool:
        return isinstance(value, torch.Tensor) and value.is_cpu and not value.dtype.is_complex

    @staticmethod
    def numel(t) -> int:
        return t.numel()

    @staticmethod
    def ndim(t) -> int:
        return t.dim()

    @staticmethod
    def shape(t) -> tuple:
        return tuple(t.shape)

    @staticmethod
    def dtype(t):
        return t.dtype

    @staticmethod
    def is_bool(t) -> bool:
        return t.dtype == torch.bool

    @staticmethod
    def is_complex(t) -> bool:
        return t.is_complex()

    @staticmethod
    def group_key(t):
        return (t.device, t.dtype)

    @staticmethod
    def clone(t):
        return t.clone()

    @staticmethod
    def empty_host(shape, dtype):
        return torch.empty(shape, dtype=dtype)

    @staticmethod
    def copy_into(dsts, srcs) -> None:
        if len(dsts) == 1:
            dsts[0].copy_(srcs[0])
        else:
            torch._foreach_copy_(list(dsts), list(srcs))

    @staticmethod
    def abs(t, out=None):
        return t.abs() if out is None else torch.abs(t, out=out)

    @staticmethod
    def stack(ts):
        return torch.stack(list(ts))

    @staticmethod
    def concat_flat(ts):
        return torch.cat([t.reshape(-1) for t in ts])

    @staticmethod
    def to_host(t):
        return t.cpu()

    @staticmethod
    def to_numpy(t) -> np.ndarray:
        if t.dtype == torch.bfloat16:
            import ml_dtypes

            return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
        return t.numpy()

    @staticmethod
    def reduction_input(t):
        if t.dtype in _LOW_PRECISION or not (t.is_floating_point() or t.is_complex()):
            return t.float()
        return t

    @staticmethod
    def reduce(t, op: str):
        fn = _OPS.get(op)
        if fn is None:
            from smdebug.exceptions import SMDebugValueError

            raise SMDebugValueError(f"Invalid reduction {op!r}")
        return fn(t)

    @staticmethod
    def min_max(t):
        # amin and amax, not aminmax: on this CPU aminmax of 512x512 float32 takes 68 us, amin and
        # amax 22 us each (torch 2.13, one thread); the same values, NaN propagated alike
        return t.amin(), t.amax()

    @staticmethod
    def moments(ts, abs_ts=None):
        # per tensor amin, amax and a sum (and the sum of its |t|); one _foreach_norm for all (on a
        # CPU the same op per tensor, in one call); one stack of every result and one numpy view
        norms = torch._foreach_norm(ts)
        cells = []
        for i, t in enumerate(ts):
            mn, mx = t.amin(), t.amax()
            cells += (mn, mx, t.sum(), norms[i], abs_ts[i].sum() if abs_ts is not None else mn)
        stats = torch.stack(cells).numpy().reshape(len(ts), 5)
        if abs_ts is None:
            stats[:, 4] = np.nan
        return stats


class TorchAdapter(BatchedAdapter):
    def __init__(self):
        super().__init__(TorchOps())
