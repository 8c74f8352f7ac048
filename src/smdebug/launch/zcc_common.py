"""What the zero-code-change attach modules (``zcc_<framework>``, installed by the bootstrap right after
the framework's import) share: the per-process state they start from, the guard that keeps an attach
error from breaking training, and how an attached hook is announced.

Framework objects (models, the framework's smdebug hook) are ``Any`` here: the frameworks are not
analysed by the type checker, and this module imports none of them.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["Attach", "fast_stop_checks", "logger", "marked", "never_raises"]

logger = logging.getLogger("smdebug")
T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


class Attach:
    """A framework's attach state, one per process (its module's ``install()`` makes it once): the hook
    attached (None until then) and ``done``, nothing more to do in this process."""

    def __init__(self) -> None:
        self.hook: Any = None
        self.done = False

    def attached(self, hook: Any, what: str) -> None:
        """``hook`` now saves what ``what`` computes: it looks for a rule's stop request as often as the
        launcher looks for new steps, and one line on stderr says what was attached."""
        fast_stop_checks(hook)
        self.hook = hook
        sys.stderr.write(f"smdebug: attached to {what} via zero-code-change; saving to {hook.out_dir}\n")


def fast_stop_checks(hook: Any) -> None:
    """Look for a rule's stop request as often as the launcher looks for new steps
    (``SMDEBUG_STOP_CHECK_INTERVAL``: 20 ms on a local folder, 0.5 s on object storage, at step
    boundaries only)."""
    interval = os.environ.get("SMDEBUG_STOP_CHECK_INTERVAL")
    watcher = getattr(hook, "stop_watcher", None)
    if interval and watcher is not None:  # on S3 the launcher's interval is 0.5 s: one request at most
        watcher.interval = min(watcher.interval, float(interval))


def never_raises(message: str, call: Callable[[], T], on_error: Callable[[], object] | None = None) -> T | None:
    """``call()``, or None when it raises: the attach code never breaks training. On an error,
    ``on_error()`` (which stops what failed) runs, then ``message % error`` is logged."""
    try:
        return call()
    except Exception as exc:
        if on_error is not None:
            on_error()
        logger.error(message, exc)
        return None


def marked(wrapper: F) -> F:
    """``wrapper``, smdebug's replacement of a framework function, marked ``__smdebug_zcc__`` (for
    whoever inspects the patched framework)."""
    wrapper.__dict__["__smdebug_zcc__"] = True
    return wrapper
