"""Tensors over steps as plain series, shared by ``plot``, ``report`` and ``export``."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Series", "tensor_series", "default_loss_names", "scalar"]


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
    neither the raw tensor nor the reduction was saved is left out.
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
    for step in steps:
        if raw_values is not None:
            v = np.asarray(raw_values[step])
            y = scalar(v) if v.size == 1 else float(np.mean(v, dtype=np.float64))
        else:
            try:
                y = scalar(t.reduction_value(step, reduction or "mean", mode=mode, abs=abs_))
            except TensorUnavailableForStep:
                continue
        s.mode_steps.append(step)
        s.steps.append(trial.global_step(mode, step) if mode.name != "GLOBAL" else step)
        s.values.append(y)
    return s if s.values else None
