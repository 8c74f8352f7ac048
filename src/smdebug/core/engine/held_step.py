"""A step kept open while the hook goes on with later steps, to be completed and written once.

Keras reports an epoch's logs (``val_loss``, ...) only after the validation steps that follow the
epoch's last training step; the hook keeps that training step open across them
(:func:`hold_step`), adds the epoch's logs to it and writes it (:func:`complete_held`). The step
is written once, after the later steps: nothing is written twice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from smdebug.core.engine.step_buffer import StepBuffer
from smdebug.core.modes import ModeKeys

__all__ = ["HeldStep", "hold_step", "complete_held"]


@dataclass
class HeldStep:
    buffer: StepBuffer
    step: int
    mode: ModeKeys
    mode_step: int
    saves: bool = False  # written with its scalars alone (its schedule saves it, or it was made to)


def hold_step(hook) -> HeldStep:
    """Take ``hook``'s current step aside, still open; the hook goes on with an empty buffer.
    Scalars waiting for a saved step stay with the held step if it saves, else they wait on."""
    held = HeldStep(hook.buffer, hook.step, hook._rec_mode, hook._rec_mode_step, hook._step_saves)
    hook.buffer = StepBuffer(hook.adapter)
    if not hook._step_saves:
        hook.buffer.scalars, held.buffer.scalars = held.buffer.scalars, []
    hook._step_saves = False
    return held


def complete_held(hook, held: HeldStep, add: Callable[[], None] | None = None) -> None:
    """Run ``add()`` with ``held`` as the hook's current step (what it saves goes there), then
    hand the held step to the writer; the hook's own current step is left as it was. A held step
    that saves (``held.saves``, or ``add`` set ``hook._step_saves``) is written with its scalars
    alone, as the hook's own step would be (BaseHook._end_step)."""
    current = (hook.buffer, hook.step, hook._rec_mode, hook._rec_mode_step, hook.last_saved_step, hook._step_saves)
    hook.buffer, hook.step, hook._rec_mode, hook._rec_mode_step = held.buffer, held.step, held.mode, held.mode_step
    hook._step_saves = held.saves
    try:
        if add is not None and not hook.disabled:
            add()
        if hook.buffer.records or (hook._step_saves and hook.buffer.scalars):
            hook._flush_records()
        else:
            current[0].scalars[:0] = hook.buffer.scalars  # nothing saved: its scalars wait on
            hook.buffer.scalars = []
    finally:
        last = hook.last_saved_step
        hook.buffer, hook.step, hook._rec_mode, hook._rec_mode_step = current[:4]
        hook._step_saves = current[5]
        hook.last_saved_step = max(x for x in (last, current[4]) if x is not None) if last is not None else current[4]
