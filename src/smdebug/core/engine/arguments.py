"""Argument checks of the hooks' public methods: a wrong argument is the caller's error, raised at
once (SMDebugValueError / SMDebugTypeError), never swallowed by the guard that keeps an error
inside the hook from stopping training (core.engine.guard)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from smdebug.core.config.collection import CollectionKeys
from smdebug.core.modes import ALLOWED_MODES
from smdebug.exceptions import SMDebugTypeError, SMDebugValueError

__all__ = ["check_mode", "check_save_tensor", "check_type", "instance_check", "scalar_value"]


def check_mode(mode) -> None:
    if mode not in ALLOWED_MODES:
        raise SMDebugValueError(f"Invalid mode {mode!r}: valid modes are {', '.join(m.name for m in ALLOWED_MODES)}")


def check_save_tensor(hook, tensor_name, tensor_value=None, collections_to_write=CollectionKeys.DEFAULT) -> None:
    if not isinstance(tensor_name, str) or not tensor_name:
        raise SMDebugTypeError(f"save_tensor: tensor_name={tensor_name!r} must be a non-empty string")
    colls = [collections_to_write] if isinstance(collections_to_write, str) else collections_to_write
    if not isinstance(colls, (list, tuple, set)) or not colls or not all(isinstance(c, str) and c for c in colls):
        raise SMDebugTypeError(
            f"save_tensor({tensor_name!r}): collections_to_write={collections_to_write!r} must "
            "be a collection name or a list of them"
        )


def check_type(method: str, argument: str, value, expected, what: str) -> None:
    """``value`` must be an instance of ``expected`` (``what`` names it in the message)."""
    if not isinstance(value, expected):
        raise SMDebugTypeError(f"{method}: {argument} must be {what}, not {type(value).__name__}")


def instance_check(method: str, argument: str, expected: Any, what: str) -> Callable[..., None]:
    """A ``check`` for :func:`~smdebug.core.engine.guard.guarded`: the method's one argument
    ``argument`` must be an instance of ``expected`` (:func:`check_type`)."""

    def check(hook: Any, *args: Any, **kwargs: Any) -> None:
        if len(args) + len(kwargs) != 1 or (kwargs and argument not in kwargs):
            raise SMDebugTypeError(f"{method} takes one argument, {argument}")
        check_type(method, argument, args[0] if args else kwargs[argument], expected, what)

    return check


def scalar_value(adapter, name, value, timestamp) -> np.ndarray:
    """save_scalar's value as a one-element float64 array, its arguments checked."""
    if not isinstance(name, str) or not name:
        raise SMDebugTypeError(f"save_scalar: name={name!r} must be a non-empty string")
    if timestamp is not None and (isinstance(timestamp, bool) or not isinstance(timestamp, (int, float))):
        raise SMDebugTypeError(f"save_scalar({name!r}): timestamp={timestamp!r} must be seconds since the epoch")
    try:
        arr = np.asarray(adapter.materialize([adapter.snapshot(value)])[0], dtype=np.float64).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise SMDebugTypeError(f"save_scalar({name!r}): value {value!r} is not a number") from exc
    if arr.size != 1:
        raise SMDebugTypeError(f"save_scalar({name!r}): value of type {type(value).__name__} is not a scalar")
    return arr
