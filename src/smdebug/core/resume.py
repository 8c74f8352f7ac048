"""Resumed training: a hook whose trial folder already holds steps of its worker continues after
them instead of starting again at step 0 (and writing over them).

This is how a SageMaker job resumed from a checkpoint (spot training) finds where it was: the
folder is the job's own (its index files), which says what was written; smdebug 1.0.34 kept a
separate state file in the checkpoint folder (``$CHECKPOINT_CONFIG_FILE_PATH``) with the step
last seen when a checkpoint was written, and restarted from there, so the steps between that
checkpoint and the interruption were written again. We continue after the last step written:
no step is written twice, and the steps trained again after the checkpoint get new numbers.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from smdebug.codec.index import decode_index
from smdebug.core.locations import INDEX_PREFIX, parse_index_key
from smdebug.core.modes import ModeKeys
from smdebug.exceptions import IndexReaderException

__all__ = ["ResumePoint", "find_resume_point", "resume_numbering"]

logger = logging.getLogger("smdebug")
_BATCH = 64  # index files read at a time, newest first, until every mode's last step is known


@dataclass
class ResumePoint:
    """Where a worker's steps in a folder end: its last global step and each mode's last step."""

    step: int
    mode_steps: dict = field(default_factory=dict)  # ModeKeys -> last mode step written in it


def find_resume_point(store, worker: str) -> ResumePoint | None:
    """The end of ``worker``'s steps in ``store``; None when it has written none there."""
    keys = sorted(((sw[0], k) for k in store.list(INDEX_PREFIX) if (sw := parse_index_key(k)) and sw[1] == worker),
                  reverse=True)
    if not keys:
        return None
    point = ResumePoint(step=keys[0][0])
    wanted = {ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT, ModeKeys.GLOBAL}
    for i in range(0, len(keys), _BATCH):
        batch = keys[i : i + _BATCH]
        for (_, key), blob in zip(batch, store.read_many([k for _, k in batch])):
            if isinstance(blob, Exception):
                raise IndexReaderException(f"{store.describe(key)}: cannot read it to resume the step numbers: {blob}")
            parsed = decode_index(blob, store.describe(key))
            if parsed.mode not in point.mode_steps:
                point.mode_steps[parsed.mode] = parsed.mode_step
        if wanted <= set(point.mode_steps):
            break
    logger.info("smdebug: %s already holds steps 0..%d of %s: continuing after them (mode steps %s)",
                store.describe(""), point.step, worker,
                ", ".join(f"{m.name} {s}" for m, s in sorted(point.mode_steps.items(), key=lambda x: x[0].value)))
    return point


def resume_numbering(hook) -> None:
    """Set ``hook``'s step counters to the end of its worker's steps in its folder, if any."""
    point = find_resume_point(hook.store, hook.worker)
    if point is not None:
        hook.resumed_from = hook.last_saved_step = hook.step = point.step
        hook.mode_steps.update(point.mode_steps)
        hook.mode_steps[ModeKeys.GLOBAL] = point.step
