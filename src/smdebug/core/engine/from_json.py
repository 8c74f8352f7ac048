"""A hook made from SageMaker's hook JSON (``Hook.create_from_json_file``): the settings that
core.config.hook_config reads, applied to a new hook and its collections."""

from __future__ import annotations

import logging
from typing import Any

from smdebug.core.config.hook_config import load_hook_config
from smdebug.core.engine.guard import PROPAGATE_ERRORS_ENV, propagate_default

__all__ = ["create_hook"]

logger = logging.getLogger("smdebug")


def create_hook(hook_cls: Any, path: str | None = None, *, default_values: dict | None = None) -> Any:
    """A ``hook_cls`` configured by the hook JSON that applies (see :func:`load_hook_config`,
    also for ``default_values``), with its collection settings applied; None when no file applies.

    The document is checked as a whole first: with errors propagating the first problem is
    raised; otherwise all of them are logged once and the hook saves what is valid."""
    problems: list[str] | None = None if propagate_default() else []
    settings = load_hook_config(
        path, default_values=default_values, known_collections=hook_cls.collection_defaults.known, problems=problems
    )
    if settings is None:
        return None
    if problems:
        logger.error(
            "smdebug: the hook config has %d problem(s), left out; the hook saves the rest "
            "(set %s=1 to raise instead):\n  %s",
            len(problems),
            PROPAGATE_ERRORS_ENV,
            "\n  ".join(problems),
        )
    hook = hook_cls(**settings.hook_kwargs())
    for cs in settings.collections:
        c = hook.get_collection(cs.name)
        if cs.include_regex:
            c.include(cs.include_regex)
        if cs.save_config is not None:
            c.save_config = cs.save_config
        if cs.reduction_config is not None:
            c.reduction_config = cs.reduction_config
        if cs.save_histogram is not None:
            c.save_histogram = cs.save_histogram
    return hook
