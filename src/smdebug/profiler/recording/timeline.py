"""TimelineWriter: framework events as Chrome trace-event JSON in 1.0.34's timeline files.

A file is a JSON array, one event a line::

    [
    {"name":"process_name","ph":"M","pid":0,"args":{"start_time_since_epoch_in_micros":1795561150455438}},
    {"name":"process_sort_index","ph":"M","pid":0,"args":{"sort_index":0}},
    {"name":"process_name","ph":"M","pid":1,"args":{"name":"Step:ModeKeys.TRAIN"}},
    {"name":"process_sort_index","ph":"M","pid":1,"args":{"sort_index":1}},
    {"name":"Step:ModeKeys.TRAIN","ph":"X","pid":1,"ts":2985965,"dur":95972,"args":{"pid":22481,"step_num":"0"}}
    ]

``ts`` is microseconds after the base (the first line, the writer's creation time, the same in all
its files); ``pid`` is the index of the event's phase ("process" row of a trace viewer), announced
once per file. The file is written as ``<root>/framework/<node>_pythontimeline.json.tmp`` (the first one
from the writer's creation, so that a live reader knows events are coming and from when: it
bounds what a live rule takes from the finished files; one that gets no event is removed, not
finished) and, when it is rotated (larger than ``max_bytes`` or open longer than ``close_interval_s``) or closed, renamed to
``<root>/framework/pevents/<YYYYMMDDHH>/<last_end_us>_<node>_pythontimeline.json`` where
``last_end_us`` is the largest event end in the file. Unlike 1.0.34, a name already taken is never
overwritten (the time is moved on by a microsecond) and no event is dropped at rotation. ``on_file``
is told each finished file (the profiler uploads it when its root is remote).
"""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any, BinaryIO

import orjson

from smdebug.profiler.locations import TIMELINE_SUFFIX, timeline_file, timeline_tmp_file

__all__ = ["TimelineWriter", "now_us"]

logger = logging.getLogger("smdebug")
_live: weakref.WeakSet[TimelineWriter] = weakref.WeakSet()


def _flush_before_fork() -> None:
    """A forked child (a DataLoader worker) inherits the open files: nothing may be left in their
    buffers, or the child could write it a second time."""
    for w in list(_live):
        try:
            w.flush()
        except Exception:  # noqa: BLE001 - never stop a fork
            logger.debug("smdebug: profiler: flush before fork failed", exc_info=True)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_flush_before_fork)


def now_us() -> int:
    return time.time_ns() // 1000


class TimelineWriter:
    def __init__(
        self,
        root: str,
        node_id: str,
        max_bytes: int = 10 * 1024 * 1024,
        close_interval_s: float = 60.0,
        open_fail_threshold: int = 50,
        suffix: str = TIMELINE_SUFFIX,
        flush_interval_s: float = 1.0,
        batch: int = 512,
        clock: Callable[[], float] = time.monotonic,
        on_file: Callable[[str], None] | None = None,
    ):
        self.root = root
        self.on_file = on_file  # called with each finished file's path (the profiler uploads it)
        self.node_id = node_id
        self.suffix = suffix
        self.max_bytes = max_bytes
        self.close_interval_s = close_interval_s
        self.open_fail_threshold = open_fail_threshold
        self.flush_interval_s = flush_interval_s
        self.batch = batch
        self.clock = clock
        # events queued by the training thread(s): (phase, name, start_us, end_us or None: instant, args)
        self._pending: deque[tuple[str, str, int, int | None, dict[str, Any] | None]] = deque()
        self.base_us = now_us()
        self._phases: dict[str, int] = {}  # phase -> pid, the same in every file of this writer
        self._lock = threading.Lock()
        self._f: BinaryIO | None = None
        self._tmp = timeline_tmp_file(root, node_id, suffix)
        self._announced: set[int] = set()
        self._size = 0
        self._opened_at = 0.0
        self._flushed_at = clock()
        self._last_end_us = 0
        self._open_failures = 0
        self.healthy = True
        self.dropped = 0
        self.events_written = 0
        self.files: list[str] = []  # final paths, in order
        self._pid = os.getpid()  # the process that finishes the files
        self._file_events = 0  # events in the file open now
        _live.add(self)
        with self._lock:  # open at once: a live reader knows from now on that events are coming
            self._open(self.clock())

    # ------------------------------------------------------------------ public
    def complete(self, phase: str, name: str, start_us: int, end_us: int, args: dict[str, Any] | None = None) -> None:
        """A duration event (``ph: "X"``) from ``start_us`` to ``end_us`` (µs since the epoch).

        The training thread only queues the event; events are encoded and written in batches
        (every ``batch`` events, every ``flush_interval_s`` and at close)."""
        self._pending.append((phase, name, start_us, end_us, args))
        if len(self._pending) >= self.batch or self.clock() - self._flushed_at > self.flush_interval_s:
            self.flush()

    def instant(self, phase: str, name: str, ts_us: int, args: dict[str, Any] | None = None) -> None:
        """A point event (``ph: "i"``, thread scope)."""
        self._pending.append((phase, name, ts_us, None, args))
        if len(self._pending) >= self.batch:
            self.flush()

    def flush(self) -> None:
        """Write the queued events and hand them to the operating system."""
        with self._lock:
            self._drain()
            now = self.clock()
            if self._f is not None and self._file_events and now - self._opened_at > self.close_interval_s:
                self._finish()  # old enough: its events are seen now, not after the next flush
            if self._f is not None:
                self._f.flush()
            self._flushed_at = now

    def close(self) -> None:
        if self._pid != os.getpid():
            return  # a forked child (its atexit): the file is its parent's to finish
        with self._lock:
            self._drain()
            self._finish()
        if self.dropped:
            logger.error("smdebug: profiler: %d framework events could not be written to %s", self.dropped, self.root)

    # ------------------------------------------------------------------ file handling
    def _drain(self) -> None:
        pending = self._pending
        now = self.clock()
        base = self.base_us
        while pending:
            phase, name, start, end, args = pending.popleft()
            if not self.healthy:
                self.dropped += 1
                continue
            if (
                self._f is not None
                and self._file_events
                and (self._size > self.max_bytes or now - self._opened_at > self.close_interval_s)
            ):
                self._finish()
            f = self._f
            if f is None:
                f = self._open(now)
                if f is None:
                    self.dropped += 1
                    continue
            pid = self._phases.get(phase)
            if pid is None:
                pid = self._phases[phase] = len(self._phases) + 1
            if end is None:
                ev = {"name": name, "ph": "i", "pid": pid, "ts": int(start) - base, "s": "t"}
                end = start
            else:
                ev = {
                    "name": name,
                    "ph": "X",
                    "pid": pid,
                    "ts": int(start) - base,
                    "dur": max(0, int(end) - int(start)),
                }
            if args:
                ev["args"] = args
            out = b",\n" + orjson.dumps(ev)
            if pid not in self._announced:
                self._announced.add(pid)
                out = self._meta(pid, {"name": phase}) + self._meta_sort(pid) + out
            f.write(out)
            self._size += len(out)
            self.events_written += 1
            self._file_events += 1
            if end > self._last_end_us:
                self._last_end_us = int(end)

    @staticmethod
    def _meta(pid: int, args: dict[str, str]) -> bytes:
        return b",\n" + orjson.dumps({"name": "process_name", "ph": "M", "pid": pid, "args": args})

    @staticmethod
    def _meta_sort(pid: int) -> bytes:
        return b",\n" + orjson.dumps({"name": "process_sort_index", "ph": "M", "pid": pid, "args": {"sort_index": pid}})

    def _open(self, now: float) -> BinaryIO | None:
        """The new file (its head written), or None when it cannot be opened."""
        try:
            os.makedirs(os.path.dirname(self._tmp), exist_ok=True)
            f = open(self._tmp, "wb")  # noqa: SIM115 - kept open across events
        except OSError as exc:
            self._open_failures += 1
            if self._open_failures >= self.open_fail_threshold:
                self.healthy = False
                logger.error(
                    "smdebug: profiler: cannot open %s (%s) %d times: framework events are dropped from now on",
                    self._tmp,
                    exc,
                    self._open_failures,
                )
            return None
        self._open_failures = 0
        head = b"[\n" + orjson.dumps(
            {"name": "process_name", "ph": "M", "pid": 0, "args": {"start_time_since_epoch_in_micros": self.base_us}}
        )
        head += b",\n" + orjson.dumps({"name": "process_sort_index", "ph": "M", "pid": 0, "args": {"sort_index": 0}})
        f.write(head)
        f.flush()  # the time base, for a reader that looks before the first events
        self._f = f
        self._file_events = 0
        self._size = len(head)
        self._opened_at = now
        self._announced = set()
        self._last_end_us = 0
        return f

    def _finish(self) -> None:
        f, self._f = self._f, None
        if f is None:
            return
        if not self._file_events:  # opened ahead and never written to: no empty file
            f.close()
            try:
                os.remove(self._tmp)
            except OSError:
                pass
            return
        f.write(b"\n]\n")
        f.close()
        stamp = self._last_end_us or now_us()
        final = timeline_file(self.root, stamp, self.node_id, self.suffix)
        while os.path.exists(final):  # never overwrite a file written before
            stamp += 1
            final = timeline_file(self.root, stamp, self.node_id, self.suffix)
        os.makedirs(os.path.dirname(final), exist_ok=True)
        os.replace(self._tmp, final)
        self.files.append(final)
        if self.on_file is not None:
            self.on_file(final)
