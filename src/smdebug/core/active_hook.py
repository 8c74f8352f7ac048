"""The active-hook slot that ``get_hook()`` / ``set_hook()`` / ``del_hook()`` use: the only global state."""

from __future__ import annotations

import logging

from smdebug.exceptions import SMDebugTypeError

__all__ = ["get_hook", "set_hook", "del_hook"]

logger = logging.getLogger("smdebug")
_active = None


def get_hook(*, json_config_path=None, hook_class=None, create_if_not_exists=False):
    """The active hook; with ``create_if_not_exists``, one made from SageMaker's hook JSON if a
    config file applies (None otherwise)."""
    global _active
    if hook_class is not None and _active is not None and not isinstance(_active, hook_class):
        logger.info("smdebug: the active hook is not a %s; replacing it", hook_class.__name__)
        _active = None
    if _active is None and create_if_not_exists and hook_class is not None:
        _active = hook_class.create_from_json_file(json_file_path=json_config_path)
    return _active


def set_hook(custom_hook) -> None:
    from smdebug.core.hook import BaseHook

    if not isinstance(custom_hook, BaseHook):
        raise SMDebugTypeError(f"custom_hook={custom_hook!r} must be a hook")
    global _active
    _active = custom_hook


def del_hook() -> None:
    global _active
    _active = None
