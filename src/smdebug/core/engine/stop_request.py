"""A rule's request that training stop, written into the trial, and the hooks' cheap check for it.

The StopTraining action (without a SageMaker job prefix) writes ``locations.STOP_REQUEST_KEY``;
every hook asks :class:`StopRequestWatcher` at step boundaries. On a local folder a check is a
``stat`` and runs at most every ``LOCAL_INTERVAL`` seconds; on object storage it is one request
at most every ``REMOTE_INTERVAL`` seconds, never one per step. smdebug 1.0.34 ignores the key.

Reading it never hangs nor takes much memory, whatever is at the key: at most
``MAX_REQUEST_BYTES`` are read (a ranged read on object storage); a local file is opened without
blocking and must be a regular file (a FIFO or a device there is not a request: logged, and
training goes on); a larger object is a malformed request (it stops training, as any malformed
request does). The rule's name and reason are cut to ``MAX_RULE_CHARS`` / ``MAX_REASON_CHARS``.
"""

from __future__ import annotations

import json
import logging
import math
import time
from dataclasses import dataclass

from smdebug.core.output.locations import STOP_REQUEST_KEY
from smdebug.exceptions import NotAFile, ObjectNotFound, StorageError

__all__ = ["StopRequest", "StopRequestWatcher", "write_stop_request", "read_stop_request"]

logger = logging.getLogger("smdebug")

LOCAL_INTERVAL = 0.2
REMOTE_INTERVAL = 5.0
MAX_REQUEST_BYTES = 64 * 1024
MAX_RULE_CHARS = 200
MAX_REASON_CHARS = 1000


class NotARequest(StorageError):
    """Something at the stop request's key that cannot be one (a FIFO, a device, a folder)."""


def _seconds(t) -> float:
    """A time stamp, 0.0 when it is not a finite number (an int too large for a float too)."""
    if isinstance(t, bool) or not isinstance(t, (int, float)):
        return 0.0
    try:
        t = float(t)
    except OverflowError:
        return 0.0
    return t if math.isfinite(t) else 0.0


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text) - limit} more characters)"


@dataclass(frozen=True)
class StopRequest:
    """Who asked training to stop, at which step of the trial, and why."""

    rule: str
    step: int
    reason: str = ""
    time: float = 0.0

    def to_json(self) -> bytes:
        return json.dumps({"rule": self.rule, "step": self.step, "reason": self.reason, "time": self.time}).encode()

    @classmethod
    def from_json(cls, data: bytes, where: str) -> StopRequest:
        """Parse a request; anything malformed still stops training, named as written by 'unknown'."""
        if len(data) > MAX_REQUEST_BYTES:
            logger.warning(
                "smdebug: the stop request %s is larger than %d bytes; stopping training anyway",
                where,
                MAX_REQUEST_BYTES,
            )
            return cls(rule="unknown", step=-1, reason=f"stop request {where} larger than {MAX_REQUEST_BYTES} bytes")
        try:
            obj = json.loads(data)
        except (ValueError, RecursionError):
            logger.warning("smdebug: the stop request %s is not JSON; stopping training anyway", where)
            return cls(rule="unknown", step=-1, reason=f"malformed stop request {where}")
        if not isinstance(obj, dict):
            obj = {}
        rule = obj.get("rule")
        step = obj.get("step")
        reason = obj.get("reason")
        t = obj.get("time")
        return cls(
            rule=_cut(rule, MAX_RULE_CHARS) if isinstance(rule, str) and rule else "unknown",
            step=step if isinstance(step, int) and not isinstance(step, bool) else -1,
            reason=_cut(reason, MAX_REASON_CHARS) if isinstance(reason, str) else "",
            time=_seconds(t),
        )


def write_stop_request(store, rule: str, step: int, reason: str = "") -> StopRequest:
    """Ask every hook writing into ``store`` to stop training (atomic write)."""
    req = StopRequest(rule=str(rule), step=int(step), reason=str(reason), time=time.time())
    store.write(STOP_REQUEST_KEY, req.to_json())
    return req


def read_stop_request(store) -> StopRequest | None:
    """The request in ``store``, or None when there is none (reads at most MAX_REQUEST_BYTES + 1
    bytes; NotARequest when a local one is not a regular file)."""
    try:
        data = store.read_ranges(STOP_REQUEST_KEY, [(0, MAX_REQUEST_BYTES + 1)])[0]
    except ObjectNotFound:
        return None
    except NotAFile as exc:  # a local FIFO or device at the key: refused by the store, never waited on
        raise NotARequest(str(exc)) from None
    return StopRequest.from_json(data, store.describe(STOP_REQUEST_KEY))


class StopRequestWatcher:
    """Rate-limited look for a stop request; once seen, it is remembered.

    ``check()`` is called by the training thread at step boundaries. A storage error while
    looking (NotARequest too) is logged once and treated as "no request" (it never stops
    training by itself).
    """

    def __init__(self, store, interval: float | None = None, clock=time.monotonic):
        self._store = store
        remote = bool(getattr(store, "remote", False))
        self.interval = (REMOTE_INTERVAL if remote else LOCAL_INTERVAL) if interval is None else float(interval)
        self._clock = clock
        self._next = 0.0
        self._seen: StopRequest | None = None
        self._taken = False
        self._warned = False
        self.checks = 0  # requests made, for tests and benchmarks

    @property
    def request(self) -> StopRequest | None:
        return self._seen

    def take(self) -> StopRequest | None:
        """The request the first time :meth:`check` sees one (logged then), None before and after."""
        if self._taken:
            return None
        req = self.check()
        if req is not None:
            self._taken = True
            logger.warning("smdebug: rule %s asked training to stop (step %s): %s", req.rule, req.step, req.reason)
        return req

    def check(self, force: bool = False) -> StopRequest | None:
        """The stop request if one has been written, looking at storage at most once per interval."""
        if self._seen is not None:
            return self._seen
        now = self._clock()
        if not force and now < self._next:
            return None
        self._next = now + self.interval
        self.checks += 1
        try:
            if not self._store.exists(STOP_REQUEST_KEY):
                return None
            self._seen = read_stop_request(self._store)
        except StorageError as exc:
            if not self._warned:
                self._warned = True
                logger.warning("smdebug: could not look for a stop request (%s); training goes on", exc)
            return None
        return self._seen
