"""The active-hook slot that ``get_hook()`` / ``set_hook()`` / ``del_hook()`` use: the only global
state. Each framework package re-exports the three functions bound to its Hook class
(:func:`bind`); a hook registers itself here when it is made, and is closed at interpreter exit."""

from __future__ import annotations

import atexit
import logging
import weakref
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, cast

from smdebug.exceptions import SMDebugTypeError

if TYPE_CHECKING:
    from smdebug.core.engine.hook import BaseHook

__all__ = ["get_hook", "set_hook", "del_hook", "bind", "close_at_exit", "HookSlot"]

logger = logging.getLogger("smdebug")
_active = None
_H = TypeVar("_H")


class HookSlot(Protocol, Generic[_H]):
    """What :func:`bind` gives a framework package, typed with its Hook class (to type checkers:
    ``smdebug.pytorch.get_hook()`` is a ``Hook | None``)."""

    def get_hook(self, json_config_path: str | None = None, create_if_not_exists: bool = False) -> _H | None: ...

    def set_hook(self, hook: _H) -> None: ...

    def del_hook(self) -> None: ...


def get_hook(
    *, json_config_path: str | None = None, hook_class: type[BaseHook] | None = None, create_if_not_exists: bool = False
) -> Any:  # the active BaseHook, or None
    """The active hook; with ``create_if_not_exists``, one made from SageMaker's hook JSON if a
    config file applies (None otherwise)."""
    global _active
    if hook_class is not None and _active is not None and not isinstance(_active, hook_class):
        logger.info("smdebug: the active hook is not a %s; replacing it", hook_class.__name__)
        _active = None
    if _active is None and create_if_not_exists and hook_class is not None:
        _active = hook_class.create_from_json_file(json_file_path=json_config_path)
    return _active


def set_hook(custom_hook: BaseHook) -> None:
    from smdebug.core.engine.hook import BaseHook

    if not isinstance(custom_hook, BaseHook):
        raise SMDebugTypeError(f"custom_hook={custom_hook!r} must be a hook")
    global _active
    _active = custom_hook


def del_hook() -> None:
    global _active
    _active = None


def bind(hook_class: type[_H]) -> HookSlot[_H]:
    """``get_hook`` / ``set_hook`` / ``del_hook`` for a framework package, bound to its Hook:
    ``get_hook, set_hook, del_hook = vars(bind(Hook)).values()``."""

    def get_hook_for(json_config_path: str | None = None, create_if_not_exists: bool = False) -> Any:
        """The active hook; with ``create_if_not_exists``, made from SageMaker's hook JSON."""
        return get_hook(
            json_config_path=json_config_path,
            hook_class=cast(Any, hook_class),
            create_if_not_exists=create_if_not_exists,
        )

    def set_hook_for(hook: Any) -> None:
        """Make ``hook`` the active hook."""
        set_hook(hook)

    def del_hook_for() -> None:
        """Forget the active hook."""
        del_hook()

    get_hook_for.__name__, set_hook_for.__name__, del_hook_for.__name__ = "get_hook", "set_hook", "del_hook"
    return cast("HookSlot[_H]", SimpleNamespace(get_hook=get_hook_for, set_hook=set_hook_for, del_hook=del_hook_for))


def _close(ref: Any) -> None:
    hook = ref()
    if hook is not None:
        hook.close()


def close_at_exit(hook: BaseHook) -> None:
    """Close ``hook`` at interpreter exit (if it still exists), so its last step is written."""
    atexit.register(_close, weakref.ref(hook))
