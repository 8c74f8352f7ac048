"""What crosses from the hook to its writer: a tensor's save plan and the records of a step.

The training thread turns a tensor into :class:`PendingRecord` objects as its :class:`SavePlan`
says; the records of a saved step travel to the writer thread in a
:class:`~smdebug.core.output.step_writer.StepRecords`, where the adapter's ``materialize`` turns their
values into numpy arrays.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

__all__ = ["RecordKind", "PendingRecord", "ReductionTarget", "SavePlan"]


class RecordKind(Enum):
    SHAPE = "shape"  # the tensor's shape (``shape`` set, no value)
    TENSOR = "tensor"  # a raw value or a reduction, written to the event file
    REDUCTIONS = "reductions"  # a tensor's reductions, one event each: ``tags`` names them
    HISTOGRAM = "histogram"  # a TensorBoard histogram of the value
    TB_SCALAR = "tb_scalar"  # a TensorBoard scalar of a one-element value
    SCALAR = "scalar"  # save_scalar: a numpy array already, written as a tensor and to TensorBoard


LAZY_KINDS = frozenset({RecordKind.TENSOR, RecordKind.HISTOGRAM, RecordKind.TB_SCALAR})


@dataclass(frozen=True, slots=True)
class PendingRecord:
    """One thing to write for a step. ``value`` is what the adapter's ``snapshot`` returned (a
    numpy array for SCALAR), or for REDUCTIONS what its ``reductions`` returned: a list of one
    object per tag, or one object that ``materialize`` turns into a 1-d array of all of them;
    ``wall_time`` None means "now"."""

    kind: RecordKind
    name: str
    value: Any = None
    shape: tuple | None = None
    wall_time: float | None = None
    tags: tuple[str, ...] = ()  # REDUCTIONS: the reductions' tensor names, in the order of the values
    step: int | None = None  # SCALAR: the global step save_scalar was called at (its TensorBoard step)


@dataclass(frozen=True, slots=True)
class ReductionTarget:
    """A reduction to save: its tensor name on disk (``smdebug/reductions/...``), op and abs."""

    tag: str
    op: str
    abs: bool


@dataclass(frozen=True)
class SavePlan:
    """What is saved of a tensor for a set of collections, worked out once per (name, set)."""

    save_shape: bool
    reductions: tuple[ReductionTarget, ...]
    save_raw: bool
    histogram_tag: str | None  # "<collection>/<name>" when a histogram goes to TensorBoard
    tensorboard_scalar: bool  # a one-element value of a scalar collection goes to TensorBoard
    # the (op, abs) pairs, as the adapter's ``reductions`` takes them, and their tensor names
    reduction_ops: tuple[tuple[str, bool], ...] = field(init=False)
    reduction_tags: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "reduction_ops", tuple((r.op, r.abs) for r in self.reductions))
        object.__setattr__(self, "reduction_tags", tuple(r.tag for r in self.reductions))
