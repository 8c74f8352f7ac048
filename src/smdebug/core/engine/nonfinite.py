"""The first non-finite value a hook sees, and what follows from it: policies as small units.

:class:`NonFiniteWatch`: the hook shows it the loss of every step (a scalar it has anyway); when a
value first becomes NaN or infinite, that step and the next ``after`` steps are saved in full,
every collection the hook saves, whatever the save config says. A failure is caught without
a save schedule from the user; once seen, the watch keeps quiet (one log line, one window).

:class:`LateChecks`: a loss on a device that has not computed it yet is checked later (the
framework queues the check without waiting), read at a step boundary once the device has.

:class:`VerdictWait`: under ``smdebug run`` with rules beside the job, the launcher writes the
last global step that every live rule has judged into a file ($SMDEBUG_RULES_JUDGED). After the
first non-finite step, the hook holds training at its next step boundary until the rules have
judged that step (or a stop request came, or ``timeout`` seconds passed): a rule with
StopTraining then stops the job at the next step, not dozens of steps later on a fast loop.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = [
    "NonFiniteWatch",
    "LateCheck",
    "LateChecks",
    "VerdictWait",
    "RULES_JUDGED_ENV",
    "WATCH_ENV",
    "VERDICT_WAIT_ENV",
    "steps_text",
    "is_finite_number",
]

logger = logging.getLogger("smdebug")

RULES_JUDGED_ENV = "SMDEBUG_RULES_JUDGED"  # the launcher's file: the last step every live rule judged
WATCH_ENV = "SMDEBUG_NONFINITE_STEPS"  # steps saved in full after the first non-finite one (0: no watch)
VERDICT_WAIT_ENV = "SMDEBUG_VERDICT_WAIT"  # seconds the hook waits for the rules' verdict (default 60)
DEFAULT_AFTER = 3
ALL_JUDGED = 2**62  # what the launcher writes when no rule is left to judge


def _after_from_env() -> int:
    text = os.environ.get(WATCH_ENV, "").strip()
    if not text:
        return DEFAULT_AFTER
    try:
        n = int(text)
    except ValueError:
        logger.warning("smdebug: %s=%r is not a whole number; using %d", WATCH_ENV, text, DEFAULT_AFTER)
        return DEFAULT_AFTER
    return max(n, -1)


@dataclass
class NonFiniteWatch:
    """``after``: steps saved in full after the first non-finite one; -1 switches the watch off."""

    after: int = field(default_factory=_after_from_env)
    first_step: int | None = None  # the global step whose value was first non-finite
    first_name: str = ""
    seen_at: int | None = None  # the step the hook learnt it (later than first_step where read late)
    pending_verdict: int | None = None  # a step the live rules should judge before training goes on

    @property
    def on(self) -> bool:
        return self.after >= 0

    def see(self, name: str, finite: bool | None, step: int, seen_at: int | None = None) -> bool:
        """Whether ``name``'s value at ``step`` (None: not known yet) is the first non-finite one."""
        if finite is None or finite or self.first_step is not None or not self.on:
            return False
        self.first_step, self.first_name = step, name
        self.seen_at = step if seen_at is None else seen_at
        self.pending_verdict = step
        return True

    def forcing(self, step: int) -> bool:
        """Whether ``step`` is saved in full: from the step it was seen at, ``after`` more."""
        return self.seen_at is not None and self.seen_at <= step <= self.seen_at + self.after

    def window(self) -> str:
        if self.seen_at is None:
            return ""
        return steps_text(list(range(self.seen_at, self.seen_at + self.after + 1)))


class LateCheck(Protocol):
    """A framework's check of a device value's finiteness, queued without waiting for the device."""

    name: str
    step: int  # the global step the value was computed at

    def ready(self) -> bool:
        """Whether the device has computed the answer (never waits)."""
        ...

    def finite(self) -> bool:
        """The answer, once ready."""
        ...


class LateChecks:
    """The late checks a hook holds (at most ``limit``: the device may run that far behind),
    told to the watch at a step boundary once ready; none held after the watch's first
    non-finite value (it keeps quiet from then on)."""

    def __init__(self, watch: NonFiniteWatch, limit: int) -> None:
        self.watch = watch
        self.limit = limit
        self.pending: list[LateCheck] = []  # the hook looks at this first: nothing to do on most steps

    def has_room(self) -> bool:
        return len(self.pending) < self.limit

    def add(self, check: LateCheck) -> None:
        """Hold ``check`` (when :meth:`has_room`; else it is left unread)."""
        if len(self.pending) < self.limit:
            self.pending.append(check)

    def report(self, seen: Callable[[str, bool, int], None]) -> None:
        """``seen(name, False, step)`` (the hook's) for each check ready with a non-finite
        answer; the others ready are dropped, those not ready wait on."""
        waiting = []
        for late in self.pending:
            if not late.ready():
                waiting.append(late)
            elif not late.finite():
                seen(late.name, False, late.step)
        self.pending = waiting if self.watch.first_step is None else []


def is_finite_number(value: Any) -> bool:
    """Whether a Python or numpy number (or array) holds only finite values."""
    try:
        return math.isfinite(value)
    except TypeError:
        import numpy as np

        arr = np.asarray(value)
        return bool(arr.dtype.kind not in "fc" or np.isfinite(arr).all())


class VerdictWait:
    """Waits until the launcher's file says the live rules have judged a step."""

    def __init__(
        self,
        path: str | None,
        timeout: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.path = path
        if timeout is None:
            try:
                timeout = float(os.environ.get(VERDICT_WAIT_ENV, "60"))
            except ValueError:
                timeout = 60.0
        self.timeout = timeout if math.isfinite(timeout) and timeout >= 0 else 60.0
        self._clock, self._sleep = clock, sleep

    @classmethod
    def from_env(cls) -> VerdictWait:
        return cls(os.environ.get(RULES_JUDGED_ENV) or None)

    def judged(self) -> int:
        """The last step every live rule judged; -1 when unknown."""
        try:
            with open(self.path) as f:  # type: ignore[arg-type]
                return int(f.read().strip() or -1)
        except (OSError, ValueError, TypeError):
            return -1

    def wait(self, step: int, stopped: Callable[[], bool]) -> str:
        """Until the rules judged ``step`` or ``stopped()``; ``"judged"``, ``"stopped"``, ``"timeout"``
        or ``"no rules"`` (no file to wait on)."""
        if not self.path:
            return "no rules"
        deadline = self._clock() + self.timeout
        while True:
            if stopped():
                return "stopped"
            if self.judged() >= step:
                return "stopped" if stopped() else "judged"
            if self._clock() >= deadline:
                return "timeout"
            self._sleep(0.005)  # the rules run in the launcher's process: polling its file, bounded


def steps_text(steps: list[int]) -> str:
    """``[0, 33, 34, 35]`` -> ``0, 33-35`` (sorted, ranges joined)."""
    out: list[str] = []
    s = sorted(set(steps))
    i = 0
    while i < len(s):
        j = i
        while j + 1 < len(s) and s[j + 1] == s[j] + 1:
            j += 1
        out.append(str(s[i]) if i == j else f"{s[i]}-{s[j]}")
        i = j + 1
    return ", ".join(out)
