"""A rule's request that training stop, written into the trial, and the hooks' cheap check for it.

The StopTraining action (without a SageMaker job prefix) writes ``locations.STOP_REQUEST_KEY``;
every hook asks :class:`StopRequestWatcher` at step boundaries. On a local folder a check is a
``stat`` and runs at most every ``LOCAL_INTERVAL`` seconds; on object storage it is one request
at most every ``REMOTE_INTERVAL`` seconds, never one per step. smdebug 1.0.34 ignores the key.
"""

from __future__ import annotations

import json
import logging
import math
import time
from dataclasses import dataclass

from smdebug.core.locations import STOP_REQUEST_KEY
from smdebug.exceptions import ObjectNotFound, StorageError

__all__ = ["StopRequest", "StopRequestWatcher", "write_stop_request", "read_stop_request"]

logger = logging.getLogger("smdebug")

LOCAL_INTERVAL = 0.2
REMOTE_INTERVAL = 5.0


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
        try:
            obj = json.loads(data)
        except ValueError:
            logger.warning("smdebug: the stop request %s is not JSON; stopping training anyway", where)
            return cls(rule="unknown", step=-1, reason=f"malformed stop request {where}")
        if not isinstance(obj, dict):
            obj = {}
        rule = obj.get("rule")
        step = obj.get("step")
        reason = obj.get("reason")
        t = obj.get("time")
        return cls(
            rule=rule if isinstance(rule, str) and rule else "unknown",
            step=step if isinstance(step, int) and not isinstance(step, bool) else -1,
            reason=reason if isinstance(reason, str) else "",
            time=float(t) if isinstance(t, (int, float)) and math.isfinite(t) else 0.0,
        )


def write_stop_request(store, rule: str, step: int, reason: str = "") -> StopRequest:
    """Ask every hook writing into ``store`` to stop training (atomic write)."""
    req = StopRequest(rule=str(rule), step=int(step), reason=str(reason), time=time.time())
    store.write(STOP_REQUEST_KEY, req.to_json())
    return req


def read_stop_request(store) -> StopRequest | None:
    """The request in ``store``, or None when there is none."""
    try:
        data = store.read(STOP_REQUEST_KEY)
    except ObjectNotFound:
        return None
    return StopRequest.from_json(data, store.describe(STOP_REQUEST_KEY))


class StopRequestWatcher:
    """Rate-limited look for a stop request; once seen, it is remembered.

    ``check()`` is called by the training thread at step boundaries. A storage error while
    looking is logged once and treated as "no request" (it never stops training by itself).
    """

    def __init__(self, store, interval: float | None = None, clock=time.monotonic):
        self._store = store
        remote = bool(getattr(store, "remote", False))
        self.interval = (REMOTE_INTERVAL if remote else LOCAL_INTERVAL) if interval is None else float(interval)
        self._clock = clock
        self._next = 0.0
        self._seen: StopRequest | None = None
        self._warned = False
        self.checks = 0  # requests made, for tests and benchmarks

    @property
    def request(self) -> StopRequest | None:
        return self._seen

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
