"""How the hook handles values: numpy here; frameworks subclass it (smdebug.pytorch.adapter)."""

from __future__ import annotations

import numpy as np

from smdebug.codec.tensor import to_numpy
from smdebug.core.reductions import get_numpy_reduction

__all__ = ["NumpyAdapter"]


class NumpyAdapter:
    """Values the hook keeps until the end of a step must not change when training goes on:
    ``snapshot`` copies; ``reduce`` computes now; ``materialize`` turns what both returned into
    numpy arrays, once per step, so that a framework can batch its device-to-host copies."""

    def snapshot(self, value):
        return np.array(to_numpy(value), copy=True)

    def reduce(self, value, op: str, abs: bool):
        return np.asarray(get_numpy_reduction(op, to_numpy(value), abs))

    def shape(self, value) -> tuple:
        return tuple(np.shape(value)) if not np.isscalar(value) else (1,)

    def size(self, value) -> int:
        return int(np.size(value))

    def is_bool(self, value) -> bool:
        return to_numpy(value).dtype == bool

    def materialize(self, objs: list) -> list:
        return [np.asarray(o) for o in objs]
