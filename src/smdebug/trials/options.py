"""A Trial's options from its arguments and the environment: the steps range, the poll interval,
the incomplete-step window and the wait for collection files (the documented SMDEBUG_* variables)."""

from __future__ import annotations

import os
from typing import Any

from smdebug.exceptions import SMDebugValueError

__all__ = [
    "check_range",
    "parse_poll_interval",
    "incomplete_step_window",
    "collection_wait_seconds",
    "INCOMPLETE_STEP_WAIT_WINDOW_KEY",
    "COLLECTION_WAIT_TIMEOUT_KEY",
    "POLL_INTERVAL_KEY",
]

INCOMPLETE_STEP_WAIT_WINDOW_KEY = "SMDEBUG_INCOMPLETE_STEP_WAIT_WINDOW"
INCOMPLETE_STEP_WAIT_WINDOW_DEFAULT = 1000
COLLECTION_WAIT_TIMEOUT_KEY = "SMDEBUG_COLLECTION_WAIT_TIMEOUT"
POLL_INTERVAL_KEY = "SMDEBUG_POLL_INTERVAL"


def check_range(range_steps: Any) -> tuple[int | None, int | None] | None:
    """``range_steps`` checked: None, or a ``(begin, end)`` pair of None or non-negative ints."""
    if range_steps is None:
        return None
    try:
        lo, hi = range_steps
    except (TypeError, ValueError):
        raise SMDebugValueError(f"range_steps={range_steps!r} must be a (begin, end) pair") from None
    for v in (lo, hi):
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
            raise SMDebugValueError(f"range_steps={range_steps!r}: bounds must be None or non-negative ints")
    if lo is not None and hi is not None and hi <= lo:
        raise SMDebugValueError(f"range_steps={range_steps!r} must be (begin, end) with begin < end")
    return (lo, hi)


def parse_poll_interval(value: Any) -> float:
    """Seconds between two looks at a live trial: ``poll_interval``, else $SMDEBUG_POLL_INTERVAL, else 1."""
    where, value = (
        ("poll_interval", value) if value is not None else (POLL_INTERVAL_KEY, os.getenv(POLL_INTERVAL_KEY, "1"))
    )
    try:
        if float(value) > 0:
            return float(value)
    except (TypeError, ValueError):
        pass
    raise SMDebugValueError(f"{where}={value!r} must be a number of seconds > 0")


def incomplete_step_window() -> int:
    """$SMDEBUG_INCOMPLETE_STEP_WAIT_WINDOW: how many steps past an incomplete one make it complete."""
    return int(os.getenv(INCOMPLETE_STEP_WAIT_WINDOW_KEY, INCOMPLETE_STEP_WAIT_WINDOW_DEFAULT))


def collection_wait_seconds(value: float | None) -> float:
    """Seconds to wait for the collection files: ``value``, else $SMDEBUG_COLLECTION_WAIT_TIMEOUT, else 0."""
    return float(value if value is not None else os.getenv(COLLECTION_WAIT_TIMEOUT_KEY, "0"))
