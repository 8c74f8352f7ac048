"""Reductions of real tensors told from five moments: [min, max, sum, l2 norm, sum of |t|].

A framework computes the moments of many tensors with a few of its own ops (TensorOps.moments);
every reduction smdebug saves follows from them with a little arithmetic, done here for a whole
batch of tensors at once with numpy. Where the moments cannot tell a reduction exactly enough,
the caller computes it with the framework's own op: prod, the minimum of |t| across zero, a
variance whose digits would cancel, anything of one element, nan and inf.
"""

from __future__ import annotations

import numpy as np

from smdebug.exceptions import SMDebugValueError

__all__ = ["MOMENTS", "needs_abs_sum", "reduce_moments", "reductions_from_moments"]

MOMENTS = ("min", "max", "sum", "l2", "abs_sum")  # the columns of a moments array, in order

# the variance from sums, (sumsq - sum * mean) / (n - 1), cancels digits when the mean is large
# against the spread: below this share of sumsq, the framework's own variance is computed instead
_MIN_SPREAD = 0.1
_FROM_MOMENTS_ABS = frozenset({"mean", "std", "variance", "sum", "l1"})  # need sum(|t|)
_KNOWN = ("min", "max", "mean", "std", "variance", "sum", "prod", "l1", "l2")


def needs_abs_sum(ops) -> bool:
    """Whether :func:`reduce_moments` needs sum(|t|) for these (op, abs) pairs."""
    return any(op == "l1" or (is_abs and op in _FROM_MOMENTS_ABS) for op, is_abs in ops)


def reduce_moments(stats: np.ndarray, n, ops, ddof: int = 1) -> tuple[np.ndarray, np.ndarray | None]:
    """The reductions ``ops`` ((op, abs) pairs) of N real tensors from their moments ``stats``
    (an N x 5 array, columns as :data:`MOMENTS`) and element counts ``n``: an N x len(ops) array
    of the dtype of ``stats``, and a boolean array of the same shape marking the values the
    moments cannot tell (None when there is none): the caller computes those with the
    framework's op. Variance and std divide by ``n - ddof``: 1 as torch's, 0 as numpy's
    ``np.var``. Arithmetic in float64, as the scalar formulas it replaces."""
    st = np.asarray(stats, dtype=np.float64)
    mn, mx, s, l2, a1 = st[:, 0], st[:, 1], st[:, 2], st[:, 3], st[:, 4]
    count = np.asarray(n, dtype=np.float64)
    sumsq = l2 * l2
    out = np.empty((st.shape[0], len(ops)), dtype=np.float64)
    bad = None
    with np.errstate(all="ignore"):
        for j, (op, is_abs) in enumerate(ops):
            total = a1 if is_abs else s
            unknown = None
            if op == "min":
                if is_abs:  # |t|'s minimum is known when t keeps one sign
                    out[:, j] = np.where(mn >= 0, mn, -mx)
                    unknown = ~((mn >= 0) | (mx <= 0))
                else:
                    out[:, j] = mn
            elif op == "max":
                out[:, j] = np.maximum(np.abs(mn), np.abs(mx)) if is_abs else mx
            elif op == "sum":
                out[:, j] = total
            elif op == "mean":
                out[:, j] = total / count
            elif op == "l1":
                out[:, j] = a1
            elif op == "l2":
                out[:, j] = l2
            elif op in ("std", "variance"):
                spread = sumsq - total * (total / count)
                known = (count > 1) & np.isfinite(spread) & (spread >= _MIN_SPREAD * sumsq)
                var = spread / (count - ddof)
                out[:, j] = var if op == "variance" else np.sqrt(var)
                unknown = ~known
            elif op == "prod":
                unknown = np.ones(st.shape[0], dtype=bool)
            else:
                raise SMDebugValueError(f"Invalid reduction {op!r}: expected one of {', '.join(_KNOWN)}")
            if unknown is not None and unknown.any():
                if bad is None:
                    bad = np.zeros(out.shape, dtype=bool)
                bad[:, j] = unknown
        vals = out.astype(stats.dtype, copy=False)  # (what is not told may not fit: no warning)
    return vals, bad


def reductions_from_moments(stats: np.ndarray, n: int, ops) -> list:
    """The reductions ``ops`` of one real tensor of ``n`` elements from its ``stats`` (the five
    moments, see :func:`reduce_moments`): 0-d arrays of the dtype of ``stats``, None where the
    moments cannot tell them exactly enough."""
    stats = np.asarray(stats)
    vals, bad = reduce_moments(stats.reshape(1, -1), [n], ops)
    return [None if bad is not None and bad[0, j] else vals[0, j, ...] for j in range(len(ops))]
