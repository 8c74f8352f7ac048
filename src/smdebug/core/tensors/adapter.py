"""The contract between a hook and its framework's tensors (:class:`TensorAdapter`), and the
adapter for numpy arrays and Python numbers (:class:`NumpyAdapter`).

Two threads use an adapter:

- **T**, the training thread: the framework calls the hook (a module callback, a Keras
  callback, an XGBoost callback), the hook calls the adapter.
- **W**, the hook's writer thread (:mod:`smdebug.core.output.step_writer`): one per hook; it turns what
  T kept into numpy arrays, encodes and writes them.

One step, as :class:`~smdebug.core.engine.hook.BaseHook` drives it:

1. T: ``size`` / ``shape`` / ``is_bool`` of each tensor the step saves; ``snapshot`` (a value
   that no longer changes when training goes on) when the raw value, a histogram or a
   TensorBoard scalar is saved, or when ``reductions_need_snapshot``; ``reductions``.
   Between ``begin_deferred()`` and ``end_deferred()`` (the hook's ``_save_deferred``)
   snapshots may be taken later, on a background thread, while the framework runs forward and
   backward (parameters at the start of a step). ``end_deferred`` starts that copy (or keeps a
   small batch for the next ``end_deferred`` or ``sync``).
2. T: ``sync()`` whenever a value whose copy was deferred may change: before an optimizer
   step, at the end of backward, when the next step starts, at close. After ``sync`` returns
   every deferred copy is complete.
3. W: ``materialize(objs, held)`` once per saved step, with every object ``snapshot`` and
   ``reductions`` returned for that step, in order (the items of a list ``reductions``
   returned, each on its own); it returns one numpy array per object
   (device-to-host copies can be batched here). Buffers the adapter may reuse go into
   ``held``; once the step is written, W calls ``release(held)``.
4. T: ``shutdown()`` at close, after ``sync()``: stop any thread the adapter started.

Nothing else crosses threads: W never calls ``snapshot`` / ``reductions``, T never calls
``materialize`` except through ``save_scalar`` (a scalar is materialized on T, at once).
A new framework implements this protocol, or gives :class:`~smdebug.core.tensors.batched_adapter.
BatchedAdapter` its :class:`~smdebug.core.tensors.tensor_ops.TensorOps` (a few tensor operations) and
gets snapshots, deferred copies, reductions and batched host copies from core.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from smdebug.codec.tensor import to_numpy
from smdebug.core.tensors.reductions import numpy_reductions

__all__ = ["TensorAdapter", "NumpyAdapter"]


@runtime_checkable
class TensorAdapter(Protocol):
    """What a hook asks of a framework's tensors; see the module docstring for the threads."""

    def size(self, value: Any) -> int:
        """T: number of elements (0: the tensor is not saved)."""

    def shape(self, value: Any) -> tuple:
        """T: the shape, as saved with ``save_shape``."""

    def is_bool(self, value: Any) -> bool:
        """T: whether the dtype is boolean or text (no histogram for those)."""

    def snapshot(self, value: Any) -> Any:
        """T: a copy that stays as it is when training changes ``value`` (may be deferred,
        see ``begin_deferred``). ``materialize`` turns it into a numpy array."""

    def reductions_need_snapshot(self, value: Any) -> bool:
        """T: whether ``reductions`` are computed later from a snapshot (the hook then takes one
        even when the raw value is not saved) rather than right away."""

    def reductions(self, value: Any, snap: Any, ops: Sequence[tuple[str, bool]]) -> Any:
        """T: the reductions ``ops`` (``(op, abs)`` pairs: 'mean', 'l2', ...; see
        core.tensors.reductions) of ``value``, computed now or scheduled; ``snap`` is the value's
        snapshot or None. Either a list of one object per pair, or one object (not a list) that
        ``materialize`` turns into a 1-d array of all of them, in the order of ``ops`` (a row: one
        object to hand over per tensor rather than one per reduction)."""

    def begin_deferred(self) -> None:
        """T: snapshots from now on may be copied later, on a background thread."""

    def end_deferred(self) -> None:
        """T: no more deferred snapshots; start copying those taken since ``begin_deferred`` (an
        adapter may wait for more: ``sync`` starts and completes everything deferred)."""

    def sync(self) -> None:
        """T: return once every deferred copy is complete (values may change after this)."""

    def materialize(self, objs: list, held: list | None = None) -> list:
        """W: numpy arrays for what ``snapshot`` / ``reductions`` returned, in order; buffers
        to give back later go into ``held``."""

    def release(self, held: list) -> None:
        """W: the step is written; what ``materialize`` put in ``held`` may be reused."""

    def shutdown(self) -> None:
        """T: at close, after ``sync``: stop the adapter's threads."""


class NumpyAdapter:
    """The :class:`TensorAdapter` for numpy arrays and Python numbers (XGBoost's tensors, scalars
    of every framework): snapshots are copies, reductions are computed at once with numpy,
    nothing is deferred."""

    def snapshot(self, value):
        return np.array(to_numpy(value), copy=True)

    def reductions(self, value, snap, ops) -> list:
        data = to_numpy(snap if snap is not None else value)
        return numpy_reductions(data, ops)

    def reductions_need_snapshot(self, value) -> bool:
        return False

    def shape(self, value) -> tuple:
        return tuple(np.shape(value)) if not np.isscalar(value) else (1,)

    def size(self, value) -> int:
        return int(np.size(value))

    def is_bool(self, value) -> bool:
        """Boolean, and text (XGBoost's trees/* columns): neither has a histogram."""
        return to_numpy(value).dtype.kind in "bUSO"

    def begin_deferred(self) -> None:
        """Nothing is deferred: numpy copies are taken at once."""

    def end_deferred(self) -> None:
        """Nothing is deferred."""

    def sync(self) -> None:
        """Nothing is deferred."""

    def materialize(self, objs: list, held: list | None = None) -> list:
        return [np.asarray(o) for o in objs]

    def release(self, held) -> None:
        """Nothing is reused."""

    def shutdown(self) -> None:
        """No thread to stop."""
