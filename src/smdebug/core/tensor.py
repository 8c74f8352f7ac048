"""``smdebug.core.tensor``: StepState here; the Tensor class lives in :mod:`smdebug.trials.tensor`."""

from __future__ import annotations

from enum import Enum

__all__ = ["StepState"]


class StepState(Enum):
    UNAVAILABLE = 0
    AVAILABLE = 1
    NOT_YET_AVAILABLE = 2


def __getattr__(name):  # the documented path smdebug.core.tensor.Tensor, without a core -> trials import
    if name == "Tensor":
        from smdebug.trials.tensor import Tensor

        return Tensor
    raise AttributeError(name)
