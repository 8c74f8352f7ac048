"""What the KerasHook does for each device it writes: itself, and with MirroredStrategy and
include_workers="all" a Replica for each other device (:mod:`smdebug.tensorflow.replicas`).

:class:`KerasDevice` is their common class: it puts each tensor into its collection once (a
variable's collection follows what it is, see :mod:`smdebug.tensorflow.variables`), saves values,
starts the batches' steps, and saves Keras' epoch-end logs (``loss``, metrics, ``val_loss``,
``val_*``) at the epoch's last TRAIN step, whatever the schedule (as 1.0.34). With validation,
Keras reports them after the EVAL steps that follow that step, so the step is held open across
them (``BaseHook.hold_step``) and written once, after them.
"""

from __future__ import annotations

from typing import Any

from smdebug.core.config.collection import CollectionKeys as _K
from smdebug.core.engine.held_step import HeldStep
from smdebug.core.engine.hook import BaseHook
from smdebug.modes import ModeKeys

__all__ = ["KerasDevice", "log_collection"]


def log_collection(key: str) -> str:
    return _K.LOSSES if key == "loss" or key.endswith("_loss") else _K.METRICS


class KerasDevice(BaseHook):
    """The hook of one device: what the KerasHook asks of itself and of each of its Replicas."""

    def _configure(self, options: Any) -> None:
        super()._configure(options)
        self._assigned: set[str] = set()  # tensor names put into their collection
        self._held_for_epoch: HeldStep | None = None  # the epoch's last TRAIN step, open for the epoch's logs

    def assign(self, name: str, coll: str | None) -> None:
        """Put tensor ``name`` into collection ``coll``, once (whether it is saved is the plan's)."""
        if name in self._assigned or not coll:
            return
        self._assigned.add(name)
        self.collection_manager.get(coll).add_tensor_name(name)
        self.planner.forget(name)

    def save_value(self, name: str, coll: str | None, value: Any) -> None:
        """Save ``value`` as tensor ``name`` of collection ``coll`` if the step's plan saves it."""
        self.assign(name, coll)
        self._save_for_tensor(name, value)

    def begin_batch(self, mode: ModeKeys, in_fit: bool) -> None:
        """Start the step of a batch of ``mode``; inside ``fit``, the epoch's last TRAIN step waits
        for the epoch's logs (held open across the validation that follows it)."""
        if self.mode != mode:
            if in_fit and self.mode == ModeKeys.TRAIN and mode == ModeKeys.EVAL:
                self.write_epoch_held()  # an epoch that never ended: its step is written as it is
                self._held_for_epoch = self.hold_step()
            self.set_mode(mode)
        self._begin_step()

    def save_epoch_logs(self, logs: dict) -> None:
        """The epoch's logs, at the epoch's last TRAIN step (the held one, else the current one)."""
        held, self._held_for_epoch = self._held_for_epoch, None
        if held is not None:
            self.complete_held(held, lambda: self._force_save(logs))
        elif self.mode == ModeKeys.TRAIN:
            self._force_save(logs)

    def write_epoch_held(self) -> None:
        """Write the step held for the epoch's logs, as it is (fit ended without an epoch end)."""
        held, self._held_for_epoch = self._held_for_epoch, None
        if held is not None:
            self.complete_held(held)

    def write_held(self) -> None:
        """Write everything held and wait for the writer: what the KerasHook does at the end of
        ``fit``/``evaluate``/``predict`` and on a stop request, for itself and each Replica."""
        self._write_held()

    def _write_held(self) -> None:
        self.write_epoch_held()
        super()._write_held()

    def _force_save(self, logs: dict) -> None:
        """Save ``logs`` in the current step, whatever the schedule, if their collection is saved;
        a name the step saved already keeps its value."""
        present = self.buffer.names()
        for key, value in logs.items():
            self.assign(key, log_collection(key))
            if key not in present:
                self._save_for_tensor(key, value, check_before_write=False)
