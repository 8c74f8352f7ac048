"""What a rule reads at a step, in one batched read per trial, and the vectorized helpers the
built-in rules judge values with.

Reading goes through the trial's one batched read (:meth:`smdebug.trials.Trial.read`): records
grouped by event file, one ranged read per span, each payload checked against the CRC32C its
index entry recorded (a rule never judges a record that ``smdebug show`` would refuse as
corrupt), decoded by the codec's one decoder of records (:mod:`smdebug.codec.record`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from smdebug.core.tensors.reductions import as_numeric, get_numpy_reduction
from smdebug.trials.reader import StepValue, ValueKey

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from smdebug.trials import Trial

__all__ = ["ValueKey", "StepValue", "ReadHow", "StepReader", "numeric", "scalar", "mean_abs", "close_each"]


def numeric(value: Any) -> np.ndarray | None:
    """``value`` as a numeric array (bfloat16 and friends as float32); None for strings and objects."""
    return as_numeric(value)


def scalar(value: Any) -> float:
    """The one number of a reduction (saved as shape (1,) or computed as a 0-d array)."""
    return float(np.asarray(value).reshape(-1)[0])


def mean_abs(values: list[StepValue]) -> np.ndarray:
    """mean(|x|) of each value, vectorized: saved reductions (``from_reduction``) are taken as
    they are, raw values reduced together (empty ones give NaN)."""
    out = np.full(len(values), np.nan)
    red = [i for i, v in enumerate(values) if v.from_reduction]
    if red:
        out[red] = np.concatenate([values[i].value.reshape(-1)[:1] for i in red]).astype(np.float64)
    raw = [i for i, v in enumerate(values) if not v.from_reduction and v.value.size]
    if raw:
        arrays = [values[i].value.reshape(-1) for i in raw]
        sizes = np.array([a.size for a in arrays])
        offsets = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        flat = np.abs(np.concatenate(arrays).astype(np.float64, copy=False))
        with np.errstate(all="ignore"):
            out[raw] = np.add.reduceat(flat, offsets) / sizes
    return out


def close_each(olds: list, news: list, rtol: float, atol: float, equal_nan: bool) -> np.ndarray:
    """``numpy.allclose(old, new)`` of each pair (same shapes), vectorized over all pairs."""
    out = np.ones(len(olds), dtype=bool)
    keep = [i for i, a in enumerate(olds) if a.size]
    if not keep:
        return out
    a = np.concatenate([olds[i].reshape(-1) for i in keep])
    b = np.concatenate([news[i].reshape(-1) for i in keep])
    if a.dtype.kind not in "fc" or b.dtype.kind not in "fc":
        a, b = a.astype(np.float64), b.astype(np.float64)
    sizes = np.array([olds[i].size for i in keep])
    offsets = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    with np.errstate(all="ignore"):
        close = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    out[keep] = np.logical_and.reduceat(close, offsets)
    return out


class ReadHow(TypedDict, total=False):
    """How :class:`StepReader` reads: ``reduction`` (a reduction name; None: the raw value) of the
    value or its ``abs``, computed from the raw value when not saved unless ``compute`` is False;
    ``reductions_if_no_value``: a tensor saved only as reductions gives those."""

    reduction: str | None
    abs: bool
    reductions_if_no_value: bool
    compute: bool


class StepReader:
    """What the built-in rules read at a step, through the trial's one batched read
    (:meth:`smdebug.trials.Trial.read`), as numbers: strings and objects are left out."""

    def fetch(self, trial: Trial, keys: list[ValueKey], **how: Unpack[ReadHow]) -> list[StepValue]:
        """Read ``keys`` (ValueKey) in one batched read; what is not saved is left out.

        With ``reduction``, the saved reduction when there is one, else computed from the raw
        value (or, with ``compute=False``, the raw value, ``from_reduction`` False, for the caller
        to reduce). With ``reductions_if_no_value``, a tensor saved only as reductions gives those.
        """
        reduction, abs, compute = how.get("reduction"), how.get("abs", False), how.get("compute", True)
        reads = trial.read(
            keys, reduction=reduction, abs=abs, reductions_if_no_value=how.get("reductions_if_no_value", False)
        )
        out = []
        for sv in reads:
            v: np.ndarray | None = sv.value
            if v is not None and v.dtype.kind not in "biufc":
                v = numeric(v)
            if v is None:
                continue
            if reduction is not None and compute and not sv.from_reduction:
                if v.size == 0:
                    continue
                with np.errstate(all="ignore"):  # inf and NaN give NaN or inf, quietly
                    v = get_numpy_reduction(reduction, v, abs)
            sv.value = v
            out.append(sv)
        return out

    def step(self, trial: Trial, step: int, names: Iterable[str], **how: Unpack[ReadHow]) -> list[StepValue]:
        """Every worker's value of each of ``names`` at global ``step``, in one batched read (``how``:
        as :meth:`fetch`)."""
        return self.fetch(trial, [ValueKey(n, step) for n in names], **how)

    def values(self, trial: Any, keys: Any) -> list[StepValue]:
        """The raw values of ``keys`` (ValueKey), in one batched read."""
        return self.fetch(trial, keys)
