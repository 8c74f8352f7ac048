"""How the hook handles values: numpy here; frameworks subclass it (smdebug.pytorch.adapter)."""

from __future__ import annotations

import numpy as np

from smdebug.codec.tensor import to_numpy
from smdebug.core.reductions import get_numpy_reduction

__all__ = ["NumpyAdapter"]


class NumpyAdapter:
    """Values the hook keeps until the end of a step must not change when training goes on:
    ``snapshot`` copies; ``reductions`` computes (or schedules) reductions; ``materialize``
    turns what both returned into numpy arrays, once per step on the writer thread, so that a
    framework can batch its device-to-host copies and compute reductions off the training
    thread."""

    def snapshot(self, value):
        return np.array(to_numpy(value), copy=True)

    def reductions(self, value, snap, ops) -> list:
        """One object per (op, abs) of ``ops``; ``snap`` is the value's snapshot or None."""
        data = to_numpy(snap if snap is not None else value)
        return [np.asarray(get_numpy_reduction(op, data, is_abs)) for op, is_abs in ops]

    def reductions_need_snapshot(self, value) -> bool:
        """Whether reductions are computed later from a snapshot (True) or right away (False)."""
        return False

    def shape(self, value) -> tuple:
        return tuple(np.shape(value)) if not np.isscalar(value) else (1,)

    def size(self, value) -> int:
        return int(np.size(value))

    def is_bool(self, value) -> bool:
        return to_numpy(value).dtype == bool

    def materialize(self, objs: list, held: list | None = None) -> list:
        """``held`` collects what :meth:`release` may recycle once the step is written."""
        return [np.asarray(o) for o in objs]

    def release(self, objs) -> None:
        """The writer is done with what ``materialize`` put in ``held``."""
