"""How a KerasHook acts on a rule's stop request (:mod:`smdebug.core.engine.stop_request`).

The request is looked for at the start of every batch of ``fit``/``evaluate``/``predict`` and of
every ``with hook.wrap_tape(tape):`` block, also when the hook has disabled itself after an
error; it is acted on once:

- in ``fit``: a request seen at a training batch sets ``model.stop_training`` (``fit`` ends after
  that batch, its epoch's validation and epoch end); one seen at a validation batch sets it too
  (``fit`` ends at the end of that epoch);
- seen in ``evaluate`` or ``predict`` outside ``fit``: it waits for the next training step (of a
  ``fit`` or a wrapped tape);
- in an eager GradientTape loop (outside ``fit``): the next ``with`` block of a wrapped tape raises
  TrainingStopRequested before its step starts; the steps before it are written first.

In ``fit`` nothing is written when the request is seen: the current step (and the epoch's last
training step, held for the epoch's logs) are completed as usual and written when ``fit`` ends,
under their own numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from smdebug.core.engine.stop_request import StopRequest, StopRequestWatcher
from smdebug.exceptions import TrainingStopRequested
from smdebug.modes import ModeKeys

__all__ = ["KerasStop"]


class KerasStop:
    """A KerasHook's side of a rule's stop request: its watcher, and the request seen and not
    acted on yet (``pending``)."""

    def __init__(self, watcher: StopRequestWatcher):
        self.watcher = watcher
        self.pending: StopRequest | None = None

    def _look(self) -> StopRequest | None:
        """The request not acted on yet: seen now (rate-limited look) or at an earlier batch."""
        req = self.watcher.take()
        if req is not None:
            self.pending = req
        return self.pending

    def at_batch(self, model: Any, mode: ModeKeys, in_fit: bool) -> None:
        """At the start of a Keras batch: set ``model.stop_training`` when a training run can be ended."""
        if self._look() is None or model is None:
            return
        if mode == ModeKeys.TRAIN or (mode == ModeKeys.EVAL and in_fit):
            model.stop_training = True
            self.pending = None

    def at_tape_step(self, write_held: Callable[[], None]) -> None:
        """At the start of a wrapped tape's step (eager, outside ``fit``): ``write_held()``, then
        raise TrainingStopRequested."""
        req = self._look()
        if req is None:
            return
        self.pending = None
        write_held()
        raise TrainingStopRequested(req.rule, req.step, req.reason)
