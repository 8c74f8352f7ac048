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

from smdebug.core.engine.stop_request import StopRequest
from smdebug.exceptions import TrainingStopRequested
from smdebug.modes import ModeKeys

__all__ = ["pending", "stop_fit", "stop_tape"]


def pending(hook) -> StopRequest | None:
    """The request not acted on yet: seen now (rate-limited look) or at an earlier batch."""
    req = hook.stop_watcher.take()
    if req is not None:
        hook._stop_pending = req
    return getattr(hook, "_stop_pending", None)


def stop_fit(hook, mode: ModeKeys) -> None:
    """At the start of a Keras batch: set ``model.stop_training`` when a training run can be ended."""
    if pending(hook) is None or hook.model is None:
        return
    if mode == ModeKeys.TRAIN or (mode == ModeKeys.EVAL and hook._in_fit):
        hook.model.stop_training = True
        hook._stop_pending = None


def stop_tape(hook) -> None:
    """At the start of a wrapped tape's step (eager, outside ``fit``): raise TrainingStopRequested."""
    req = pending(hook)
    if req is None:
        return
    hook._stop_pending = None
    hook._write_held()
    raise TrainingStopRequested(req.rule, req.step, req.reason)
