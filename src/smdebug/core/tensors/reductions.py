"""Reduction names, reduction tensor tags, and reductions computed with numpy."""

from __future__ import annotations

import numpy as np

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


# the variance from sums, (sumsq - sum * mean) / (n - 1), cancels digits when the mean is large
# against the spread: below this share of sumsq, the framework's own variance is computed instead
_MIN_SPREAD = 0.1
_FROM_MOMENTS_ABS = frozenset({"mean", "std", "variance", "sum", "l1"})  # need sum(|t|)


def needs_abs_sum(ops) -> bool:
    """Whether :func:`reductions_from_moments` needs sum(|t|) for these (op, abs) pairs."""
    return any(op == "l1" or (is_abs and op in _FROM_MOMENTS_ABS) for op, is_abs in ops)


def reductions_from_moments(stats: np.ndarray, n: int, ops) -> list:
    """The reductions ``ops`` ((op, abs) pairs) of a real tensor of ``n`` elements from its
    ``stats`` = [min, max, sum, l2 norm, sum of |t|] (see TensorOps.moments): 0-d arrays of the
    dtype of ``stats``; None where they cannot be told from the moments exactly enough (prod,
    the minimum of |t| across zero, a variance whose digits would cancel, one element): the
    caller computes those with the framework's op."""
    mn, mx, s, l2, a1 = (float(v) for v in stats)
    sumsq = l2 * l2
    out = []
    for op, is_abs in ops:
        total = a1 if is_abs else s
        if op == "min":
            v = mn if not is_abs else (mn if mn >= 0 else -mx if mx <= 0 else None)
        elif op == "max":
            v = mx if not is_abs else max(abs(mn), abs(mx))
        elif op == "sum":
            v = total
        elif op == "mean":
            v = total / n
        elif op == "l1":
            v = a1
        elif op == "l2":
            v = l2
        elif op in ("std", "variance"):
            spread = sumsq - total * (total / n)
            if n > 1 and np.isfinite(spread) and spread >= _MIN_SPREAD * sumsq:
                var = spread / (n - 1)
                v = var if op == "variance" else np.sqrt(var)
            else:
                v = None
        elif op == "prod":
            v = None
        else:
            raise SMDebugValueError(f"Invalid reduction {op!r}: expected one of "
                                    f"{', '.join(ALLOWED_REDUCTIONS + ALLOWED_NORMS)}")
        out.append(None if v is None else np.asarray(v, dtype=stats.dtype))
    return out


def get_reduction_tensor_name(tensorname: str, reduction_name: str, abs: bool) -> str:
    return f"{REDUCTIONS_PREFIX}{'abs_' if abs else ''}{reduction_name}/{tensorname}"


def reverse_reduction_tensor_name(tag: str) -> tuple[str, str, bool]:
    """'smdebug/reductions/abs_mean/fc1.weight' -> ('fc1.weight', 'mean', True)."""
    rest = tag[tag.index(REDUCTIONS_PREFIX) + len(REDUCTIONS_PREFIX) :]
    op, _, name = rest.partition("/")
    if op.startswith("abs_"):
        return name, op[4:], True
    return name, op, False
