"""Reduction names, reduction tensor tags, and reductions computed with numpy."""

from __future__ import annotations

import numpy as np

from smdebug.core.tensors.moments import needs_abs_sum, reductions_from_moments
from smdebug.exceptions import SMDebugValueError

__all__ = [
    "ALLOWED_REDUCTIONS",
    "ALLOWED_NORMS",
    "REDUCTIONS_PREFIX",
    "get_numpy_reduction",
    "needs_abs_sum",
    "reductions_from_moments",
    "get_reduction_tensor_name",
    "reverse_reduction_tensor_name",
]

ALLOWED_REDUCTIONS = ["min", "max", "mean", "std", "variance", "sum", "prod"]
ALLOWED_NORMS = ["l1", "l2"]
REDUCTIONS_PREFIX = "smdebug/reductions/"
_NUMPY_OPS = {
    "min": np.min,
    "max": np.max,
    "mean": np.mean,
    "std": np.std,
    "variance": np.var,
    "sum": np.sum,
    "prod": np.prod,
}


def get_numpy_reduction(reduction_name: str, numpy_data, abs: bool = False):
    """A reduction of the flattened array; norms are vector norms, whatever the rank."""
    data = np.asarray(numpy_data)
    if abs:
        data = np.absolute(data)
    op = _NUMPY_OPS.get(reduction_name)
    if op is not None:
        return op(data)
    if reduction_name in ("l1", "l2"):
        return np.linalg.norm(data.ravel(), ord=int(reduction_name[1]))
    raise SMDebugValueError(
        f"Invalid reduction {reduction_name!r}: expected one of "
        f"{', '.join(ALLOWED_REDUCTIONS + ALLOWED_NORMS)}"
    )


def get_reduction_tensor_name(tensorname: str, reduction_name: str, abs: bool) -> str:
    return f"{REDUCTIONS_PREFIX}{'abs_' if abs else ''}{reduction_name}/{tensorname}"


def reverse_reduction_tensor_name(tag: str) -> tuple[str, str, bool]:
    """'smdebug/reductions/abs_mean/fc1.weight' -> ('fc1.weight', 'mean', True)."""
    rest = tag[tag.index(REDUCTIONS_PREFIX) + len(REDUCTIONS_PREFIX) :]
    op, _, name = rest.partition("/")
    if op.startswith("abs_"):
        return name, op[4:], True
    return name, op, False
