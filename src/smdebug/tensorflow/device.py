"""Keras' epoch-end logs (``loss``, metrics, ``val_loss``, ``val_*``): saved at the epoch's last
TRAIN step, whatever the schedule (as 1.0.34). With validation, Keras reports them after the
EVAL steps that follow that step, so the hook holds the step open across them
(:mod:`smdebug.core.engine.held_step`) and writes it once, after them."""

from __future__ import annotations

from smdebug.core.config.collection import CollectionKeys as _K
from smdebug.core.engine.held_step import complete_held, hold_step
from smdebug.core.engine.hook import BaseHook
from smdebug.tensorflow.variables import assign

__all__ = ["log_collection", "hold_for_epoch_end", "force_save"]


def log_collection(key: str) -> str:
    return _K.LOSSES if key == "loss" or key.endswith("_loss") else _K.METRICS


def hold_for_epoch_end(hook: BaseHook) -> None:
    old = hook.__dict__.pop("_held_for_epoch", None)
    if old is not None:  # an epoch that never ended: its step is written as it is
        complete_held(hook, old)
    hook._held_for_epoch = hold_step(hook)


def force_save(hook: BaseHook, logs: dict) -> None:
    """Save ``logs`` in the current step, whatever the schedule, if their collection is saved."""
    present = hook.buffer.names()
    for key, value in logs.items():
        assign(hook, key, log_collection(key))
        if key not in present:
            hook._save_for_tensor(key, value, check_before_write=False)
