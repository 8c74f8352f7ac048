"""Resumed training: a hook continues the step numbers of the job it resumes instead of starting
again at step 0 (and writing over its steps). It continues after the later of:

- the last step its worker wrote into the trial folder (its index files), when the folder is
  still there (a local folder, a job restarted in place);
- the state smdebug 1.0.34 keeps in the checkpoint folder (``metadata.json`` in the ``LocalPath``
  of ``$CHECKPOINT_CONFIG_FILE_PATH``, else ``/opt/ml/input/config/checkpointconfig.json``): what
  a SageMaker spot job gets back when it resumes (its local tensors folder starts empty; the
  checkpoint folder comes back from S3).

1.0.34 wrote that state only when the checkpoint files changed, with the step then seen, so the
steps written between that checkpoint and the interruption were written again after a resume.
We write it (same format, so either library resumes from the other's) each time a step is handed
to the writer: a resumed job continues after the last step written, and no step is written twice.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field

from smdebug.codec.index import decode_index
from smdebug.core.modes import ModeKeys
from smdebug.core.output.locations import INDEX_PREFIX, parse_index_key
from smdebug.exceptions import IndexReaderException, SMDebugRuntimeError

__all__ = ["ResumePoint", "StateFile", "find_resume_point", "resume_numbering", "CHECKPOINT_CONFIG_ENV"]

CHECKPOINT_CONFIG_ENV = "CHECKPOINT_CONFIG_FILE_PATH"
DEFAULT_CHECKPOINT_CONFIG = "/opt/ml/input/config/checkpointconfig.json"
STATE_FILE = "metadata.json"
_RUN, _SAVED, _SEEN, _MODES = "training-run", "latest-global-step-saved", "latest-global-step-seen", "latest-mode-step"

logger = logging.getLogger("smdebug")
_BATCH = 64  # index files read at a time, newest first, until every mode's last step is known


@dataclass
class ResumePoint:
    """Where a worker's steps in a folder end: its last global step and each mode's last step."""

    step: int
    mode_steps: dict = field(default_factory=dict)  # ModeKeys -> last mode step written in it


def find_resume_point(store, worker: str) -> ResumePoint | None:
    """The end of ``worker``'s steps in ``store``; None when it has written none there."""
    keys = sorted(
        ((sw[0], k) for k in store.list(INDEX_PREFIX) if (sw := parse_index_key(k)) and sw[1] == worker), reverse=True
    )
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
    logger.info(
        "smdebug: %s already holds steps 0..%d of %s: continuing after them (mode steps %s)",
        store.describe(""),
        point.step,
        worker,
        ", ".join(f"{m.name} {s}" for m, s in sorted(point.mode_steps.items(), key=lambda x: x[0].value)),
    )
    return point


def checkpoint_dir() -> str | None:
    """The checkpoint folder SageMaker's checkpoint config names; None without a config file."""
    path = os.getenv(CHECKPOINT_CONFIG_ENV) or DEFAULT_CHECKPOINT_CONFIG
    if not os.path.isfile(path):
        return None
    try:
        with open(path) as f:
            folder = json.load(f).get("LocalPath")
    except (OSError, ValueError, AttributeError) as exc:
        raise SMDebugRuntimeError(f'{path} is not a checkpoint config ({{"LocalPath": ...}}): {exc}') from exc
    return str(folder) if folder else None


class StateFile:
    """1.0.34's state file in the checkpoint folder: a JSON list, one state per training run."""

    def __init__(self, folder: str):
        self.path = os.path.join(folder, STATE_FILE)
        self.states: list = []
        if os.path.isfile(self.path):
            try:
                with open(self.path) as f:
                    self.states = sorted(json.load(f), key=lambda st: st[_SEEN])
                for st in self.states:
                    st[_MODES] = {ModeKeys[m]: int(v) for m, v in st[_MODES].items()}
            except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
                raise SMDebugRuntimeError(
                    f"{self.path}: not smdebug's training state ({exc}); remove it to start the step numbers at 0"
                ) from exc
        self.run = self.states[-1][_RUN] + 1 if self.states else 0

    def point(self) -> ResumePoint | None:
        if not self.states:
            return None
        last = self.states[-1]
        return ResumePoint(step=int(last[_SEEN]), mode_steps=dict(last[_MODES]))

    def write(self, hook) -> None:
        """Record ``hook``'s current step as this run's state (atomically: tmp file, rename)."""
        state = {
            _RUN: self.run,
            _SAVED: hook.last_saved_step,
            _SEEN: hook.step,
            _MODES: {m.name: s for m, s in hook.mode_steps.items()},
        }
        old = [{**st, _MODES: {m.name: s for m, s in st[_MODES].items()}} for st in self.states if st[_RUN] != self.run]
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        tmp = f"{self.path}.tmp{os.getpid()}"
        with open(tmp, "w") as f:
            json.dump([*old, state], f)
        os.replace(tmp, self.path)


def resume_numbering(hook) -> StateFile | None:
    """Set ``hook``'s step counters after the steps of the job it resumes (see the module);
    returns the checkpoint folder's state file, to be kept current, when there is one."""
    folder = checkpoint_dir()
    state = StateFile(folder) if folder else None
    point = find_resume_point(hook.store, hook.worker)
    saved = state.point() if state is not None else None
    if saved is not None and (point is None or saved.step > point.step):
        assert state is not None  # saved comes from it
        logger.info("smdebug: %s: continuing after step %d", state.path, saved.step)
        point = saved
    if point is not None:
        hook.resumed_from = hook.last_saved_step = hook.step = point.step
        hook.mode_steps.update(point.mode_steps)
        hook.mode_steps[ModeKeys.GLOBAL] = point.step
    return state
