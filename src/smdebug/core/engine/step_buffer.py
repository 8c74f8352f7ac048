"""The step buffer: what the training thread holds of the current step until it ends.

Tensors are turned into :class:`~smdebug.core.output.records.PendingRecord` objects as their plan
says (the adapter snapshots and reduces them); scalars wait for the next saved step. When the
step ends, :meth:`StepBuffer.take` hands everything over as one StepRecords.
"""

from __future__ import annotations

from smdebug.core.modes import ModeKeys
from smdebug.core.output.records import PendingRecord, RecordKind, SavePlan
from smdebug.core.output.step_writer import StepRecords
from smdebug.core.tensors.adapter import TensorAdapter

__all__ = ["StepBuffer"]

_SHAPE, _TENSOR, _REDUCTIONS, _HIST, _TB_SCALAR, _SCALAR = (
    RecordKind.SHAPE,
    RecordKind.TENSOR,
    RecordKind.REDUCTIONS,
    RecordKind.HISTOGRAM,
    RecordKind.TB_SCALAR,
    RecordKind.SCALAR,
)


class StepBuffer:
    def __init__(self, adapter: TensorAdapter):
        self.adapter = adapter
        self.records: list[PendingRecord] = []
        self.scalars: list[PendingRecord] = []  # go with the next saved step
        self._counts: dict[str, int] = {}  # "<module>_output_" -> tensors numbered so far this step

    def add(self, name: str, value, plan: SavePlan) -> None:
        """Snapshot / reduce ``value`` on the training thread as ``plan`` says."""
        ad = self.adapter
        size = ad.size(value)
        if size == 0:
            return
        records = self.records
        if plan.save_shape:
            records.append(PendingRecord(_SHAPE, name, shape=ad.shape(value)))
        hist = plan.histogram_tag
        if hist and ad.is_bool(value):
            hist = None
        reds, raw = plan.reductions, plan.save_raw
        tb_scalar = plan.tensorboard_scalar and size == 1
        snap = None
        if raw or hist or tb_scalar or (reds and ad.reductions_need_snapshot(value)):
            snap = ad.snapshot(value)
        if reds:  # one record for all of the tensor's reductions
            records.append(
                PendingRecord(
                    _REDUCTIONS, name, ad.reductions(value, snap, plan.reduction_ops), tags=plan.reduction_tags
                )
            )
        if raw:
            records.append(PendingRecord(_TENSOR, name, snap))
        if hist:
            records.append(PendingRecord(_HIST, hist, snap))
        if tb_scalar:
            records.append(PendingRecord(_TB_SCALAR, name, snap))

    def add_scalar(self, name: str, value, wall_time: float, step: int | None = None) -> None:
        """A scalar (a one-element numpy array already) for the next saved step; ``step``: the step
        it was saved at (TensorBoard shows it there)."""
        self.scalars.append(PendingRecord(_SCALAR, name, value, wall_time=wall_time, step=step))

    def number(self, base: str, count: int) -> int:
        """The first of ``count`` consecutive numbers for tensors named ``<base><i>`` this step."""
        first = self._counts.get(base, 0)
        self._counts[base] = first + count
        return first

    def names(self) -> set:
        """The names of the tensors (not reductions) the step holds so far."""
        return {r.name for r in self.records if r.kind is _TENSOR or r.kind is _SHAPE}

    def hoist(self, start: int) -> None:
        """Put the records added since there were ``start`` before the earlier ones: what a step
        saves when it starts, saved late, is written first (the write order is the order the model
        computed the tensors in, which smdebug.analysis.nonfinite reads)."""
        if len(self.records) > start:
            self.records = self.records[start:] + self.records[:start]

    def new_step(self) -> None:
        self._counts.clear()

    def take(self, step: int, mode: ModeKeys, mode_step: int) -> StepRecords:
        """Everything held (tensors, then scalars), as the records of one step; the buffer is empty
        after. The adapter's deferred work is started (complete) first: the writer waits for it."""
        self.adapter.sync()
        records, self.records = self.records, []
        scalars, self.scalars = self.scalars, []
        return StepRecords(step, mode, mode_step, records=records + scalars)

    def drop_captures(self, ids: set) -> list[str]:
        """Drop the records of every tensor one of whose captures (the adapter's deferred
        objects, by ``id()``) is in ``ids``, all of that tensor's records; the names dropped."""

        def hit(v) -> bool:
            return id(v) in ids or (type(v) is list and any(id(getattr(x, "src", None)) in ids for x in v))

        names = {r.name for r in self.records if hit(r.value)}
        if names:
            self.records = [r for r in self.records if r.name not in names]
        return sorted(names)

    def drop(self) -> None:
        self.records, self.scalars = [], []
