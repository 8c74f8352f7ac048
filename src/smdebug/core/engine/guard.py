"""Debugging never kills training: callbacks run under a guard that logs once and disables the hook."""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar, cast

from smdebug.codec.values import parse_bool
from smdebug.exceptions import TrainingStopRequested

__all__ = ["guarded", "GuardedByHook", "PROPAGATE_ERRORS_ENV"]

logger = logging.getLogger("smdebug")
PROPAGATE_ERRORS_ENV = "SMDEBUG_PROPAGATE_ERRORS"

_P = ParamSpec("_P")
_R = TypeVar("_R")


def propagate_default() -> bool:
    """``$SMDEBUG_PROPAGATE_ERRORS`` as a bool (:func:`smdebug.codec.values.parse_bool`); unset or
    empty is False; a value that is no boolean is False, with a warning naming it."""
    raw = os.getenv(PROPAGATE_ERRORS_ENV, "")
    if not raw.strip():
        return False
    try:
        return parse_bool(raw)
    except ValueError:
        logger.warning(
            "smdebug: %s=%r is not a boolean (true/false or 1/0): errors are not propagated", PROPAGATE_ERRORS_ENV, raw
        )
        return False


def guarded(
    default: Any = None, check: Callable[..., object] | None = None
) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """Decorate a hook method: when it raises, log the error once, disable the hook and return
    ``default`` — unless ``hook.propagate_errors`` is set (or $SMDEBUG_PROPAGATE_ERRORS=1).
    TrainingStopRequested always goes through: it is how a hook stops training.

    ``check(self, *args, **kwargs)`` (a public method's argument checks) runs first, outside the
    guard and on a disabled hook too: a wrong argument is the caller's error, raised at once."""

    def deco(method: Callable[_P, _R]) -> Callable[_P, _R]:
        @functools.wraps(method)
        def wrapper(self, *args, **kwargs):
            if check is not None:
                check(self, *args, **kwargs)
            if getattr(self, "disabled", False):
                return default
            try:
                return method(self, *args, **kwargs)
            except TrainingStopRequested:  # not an error of the hook: training is to stop
                raise
            except Exception:
                if getattr(self, "propagate_errors", False):
                    raise
                self.disabled = True
                logger.exception(
                    "smdebug: an error in %s.%s disabled the hook; training continues without it "
                    "(set %s=1 to raise such errors instead)",
                    type(self).__name__,
                    method.__name__,
                    PROPAGATE_ERRORS_ENV,
                )
                return default

        return cast(Callable[_P, _R], wrapper)

    return deco


class GuardedByHook:
    """A helper of a hook (a trainer callback's state) whose :func:`guarded` methods answer to the
    hook's guard: an error in one disables ``self.hook``, or propagates when the hook's errors do."""

    hook: Any

    @property
    def disabled(self) -> bool:
        return bool(self.hook.disabled)

    @disabled.setter
    def disabled(self, value: bool) -> None:
        self.hook.disabled = value

    @property
    def propagate_errors(self) -> bool:
        return bool(self.hook.propagate_errors)
