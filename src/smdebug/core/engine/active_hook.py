"""The active-hook slot that ``get_hook()`` / ``set_hook()`` / ``del_hook()`` use: the only global
state. Each framework package re-exports the three functions bound to its Hook class
(:func:`bind`); a hook registers itself here when it is made, and is closed at interpreter exit."""

from __future__ import annotations

import atexit
import logging
import weakref
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from smdebug.exceptions import SMDebugTypeError

__all__ = ["get_hook", "set_hook", "del_hook", "bind", "close_at_exit", "HookSlot", "AnyHook"]

logger = logging.getLogger("smdebug")


@runtime_checkable
class AnyHook(Protocol):
    """What this slot needs of a hook (every smdebug hook is one; BaseHook is not imported here, so
    that the hook's module and this one do not import each other)."""

    def close(self) -> None: ...

    def save_tensor(self, tensor_name: str, tensor_value: Any, collections_to_write: Any = ...) -> None: ...

    def save_scalar(self, name: str, value: Any, sm_metric: bool = ..., timestamp: Any = ...) -> None: ...


_H = TypeVar("_H", bound=AnyHook)
_active: AnyHook | None = None


def get_hook(*, json_config_path: str | None = None, hook_class: Any = None,
             create_if_not_exists: bool = False) -> Any:
    """The active hook (None when there is none); with ``create_if_not_exists``, one made from
    SageMaker's hook JSON if a config file applies. ``smdebug.<framework>.get_hook()`` is typed
    with the framework's hook class (:class:`HookSlot`)."""
    global _active
    if hook_class is not None and _active is not None and not isinstance(_active, hook_class):
        logger.info("smdebug: the active hook is not a %s; replacing it", hook_class.__name__)
        _active = None
    if _active is None and create_if_not_exists and hook_class is not None:
        _active = hook_class.create_from_json_file(json_file_path=json_config_path)
    return _active


def set_hook(custom_hook: AnyHook) -> None:
    if not isinstance(custom_hook, AnyHook) or isinstance(custom_hook, type):
        raise SMDebugTypeError(f"custom_hook={custom_hook!r} must be a hook")
    global _active
    _active = custom_hook


def del_hook() -> None:
    global _active
    _active = None


class HookSlot(Generic[_H]):
    """``get_hook`` / ``set_hook`` / ``del_hook`` of a framework package, typed with its Hook class."""

    def __init__(self, hook_class: type[_H]) -> None:
        self.hook_class = hook_class

    def get_hook(self, json_config_path: str | None = None, create_if_not_exists: bool = False) -> _H | None:
        """The active hook (None when there is none); with ``create_if_not_exists``, one made from
        SageMaker's hook JSON (``$SMDEBUG_CONFIG_FILE_PATH`` / ``json_config_path``) if it applies."""
        hook: _H | None = get_hook(json_config_path=json_config_path, hook_class=self.hook_class,
                                   create_if_not_exists=create_if_not_exists)
        return hook

    def set_hook(self, hook: _H) -> None:
        """Make ``hook`` the active hook."""
        set_hook(hook)

    def del_hook(self) -> None:
        """Forget the active hook."""
        del_hook()


def bind(hook_class: type[_H]) -> HookSlot[_H]:
    """``get_hook`` / ``set_hook`` / ``del_hook`` for a framework package, bound to its Hook:
    ``_slot = bind(Hook); get_hook, set_hook, del_hook = _slot.get_hook, _slot.set_hook, _slot.del_hook``."""
    return HookSlot(hook_class)


def _close(ref: Any) -> None:
    hook = ref()
    if hook is not None:
        hook.close()


def close_at_exit(hook: AnyHook) -> None:
    """Close ``hook`` at interpreter exit (if it still exists), so its last step is written."""
    atexit.register(_close, weakref.ref(hook))
