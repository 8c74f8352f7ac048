"""Tensors over steps as plain series, shared by ``plot``, ``report`` and ``export``."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Series", "NotPlottable", "tensor_series", "default_loss_names", "scalar", "not_numeric"]


class NotPlottable(Exception):
    """A tensor whose values are not numbers (strings, complex) or that is empty at every step;
    the message says which and why. Callers skip it with one line saying so."""


def not_numeric(value) -> str | None:
    """Why an array's values are not plain numbers (None when they are)."""
    kind = value.dtype.kind
    if kind in "fiub":
        return None
    if kind == "c":
        return "complex values (real part, imaginary part or magnitude? use `smdebug show`)"
    if kind in "US":
        return "strings, not numbers"
    return f"{value.dtype} values, not numbers"


@dataclass
class Series:
    """One line of a plot: a tensor (or one of its reductions) over the steps of one mode."""

    tensor: str
    mode: str
    label: str
    steps: list = field(default_factory=list)  # global steps
    mode_steps: list = field(default_factory=list)
    values: list = field(default_factory=list)


def scalar(v) -> float:
    import numpy as np

    a = np.asarray(v)
    return float(a.ravel()[0]) if a.size else float("nan")


def default_loss_names(trial) -> list:
    """The losses collection, else tensors whose name says loss."""
    names = trial.tensor_names(collection="losses") if "losses" in trial.collections() else []
    return names or trial.tensor_names(regex="[Ll]oss")


def tensor_series(trial, name: str, mode, reduction: str | None = None, abs_: bool = False) -> Series | None:
    """``name`` over the complete steps of ``mode``: its scalar value, or a reduction of it.

    Without ``reduction`` a scalar tensor gives its value and a larger one its mean. A step where
    neither the raw tensor nor the reduction was saved, or where the tensor is empty, is left out.
    NotPlottable when the values are not numbers or the tensor is empty at every step.
    """
    import numpy as np

    from smdebug.exceptions import TensorUnavailableForStep

    t = trial.tensor(name)
    steps = t.steps(mode=mode)
    if not steps:
        return None
    label = name if reduction is None else f"{'abs ' if abs_ else ''}{reduction}({name})"
    s = Series(tensor=name, mode=mode.name, label=label)
    raw_values = None
    if reduction is None:
        try:
            raw_values = t.values(mode=mode)
        except TensorUnavailableForStep:
            raw_values = None
    empty = 0
    for step in steps:
        if raw_values is not None:
            v = _numeric(name, raw_values[step])
            if v.size == 0:
                empty += 1
                continue
            y = scalar(v) if v.size == 1 else float(np.mean(v, dtype=np.float64))
        else:
            saved = t.saved(step, mode=mode)
            if (reduction or "mean", bool(abs_)) not in saved["reductions"] and saved["raw"]:
                # computed from the raw value: numbers only, and not from an empty array
                if _numeric(name, t.value(step, mode=mode)).size == 0:
                    empty += 1
                    continue
            try:
                y = scalar(t.reduction_value(step, reduction or "mean", mode=mode, abs=abs_))
            except TensorUnavailableForStep:
                continue
        s.mode_steps.append(step)
        s.steps.append(trial.global_step(mode, step) if mode.name != "GLOBAL" else step)
        s.values.append(y)
    if empty and not s.values:
        raise NotPlottable(f"{name}: empty (0 values) at every {mode.name} step")
    return s if s.values else None


def _numeric(name: str, value):
    import numpy as np

    v = np.asarray(value)
    why = not_numeric(v)
    if why:
        raise NotPlottable(f"{name}: {why}")
    return v
