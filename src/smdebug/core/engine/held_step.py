"""A step kept open while the hook goes on with later steps, to be completed and written once.

Keras reports an epoch's logs (``val_loss``, ...) only after the validation steps that follow the
epoch's last training step; the hook keeps that training step open across them
(``BaseHook.hold_step``), adds the epoch's logs to it and writes it (``BaseHook.complete_held``).
The step is written once, after the later steps: nothing is written twice.
"""

from __future__ import annotations

from dataclasses import dataclass

from smdebug.core.engine.step_buffer import StepBuffer
from smdebug.core.modes import ModeKeys

__all__ = ["HeldStep"]


@dataclass
class HeldStep:
    """What a hook records of one step: its buffer, its global number, the mode it began in and its
    number in that mode, and whether it is written with its scalars alone."""

    buffer: StepBuffer
    step: int
    mode: ModeKeys
    mode_step: int
    saves: bool = False  # written with its scalars alone (its schedule saves it, or it was made to)
