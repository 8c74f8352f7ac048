"""What a built-in rule's finding or "evaluated nothing" reason says about the trial: the worker a
value was read from, and what the trial saved (smdebug.rules.finding)."""

from __future__ import annotations

import weakref
from typing import Any

from smdebug.core.modes import ModeKeys

__all__ = ["first_worker", "trial_holds"]


def first_worker(trial: Any, name: str, step: int, mode: Any = ModeKeys.GLOBAL) -> str | None:
    """The worker whose value ``Tensor.value`` reads at the step (the first by name); None if unknown."""
    try:
        return trial.tensor(name).workers(step, mode)[0]
    except Exception:  # a trial-like object without workers, or a step it does not hold
        return None


_HOLDS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # trial -> (index version, text)


def trial_holds(trial: Any) -> str:
    """What the trial saved, for an "evaluated nothing" reason: its collections that hold tensors
    (worked out again only when the trial has read new index data)."""
    version = getattr(trial, "index_version", None)
    try:
        kept = _HOLDS.get(trial)
    except TypeError:  # a trial-like object that takes no weak reference
        kept = None
    if kept is not None and kept[0] == version:
        return kept[1]
    text = _holds(trial)
    try:
        _HOLDS[trial] = (version, text)
    except TypeError:
        pass
    return text


def _holds(trial: Any) -> str:
    parts = []
    for c in sorted(trial.collections()):
        try:
            n = len(trial.tensor_names(collection=c))
        except Exception:  # a collection whose regex the trial cannot run
            continue
        if n:
            parts.append(f"{c} ({n})")
    if not parts:
        return f"no collection holding a tensor ({len(trial.tensor_names())} tensors in all)"
    more = f", and {len(parts) - 12} more" if len(parts) > 12 else ""
    return "collections " + ", ".join(parts[:12]) + more
