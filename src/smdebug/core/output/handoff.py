"""Hand-offs from the training thread to a background thread that an interrupt cannot break.

Python raises KeyboardInterrupt (Ctrl-C, or the launcher stopping a job with SIGINT) in the main
thread, the training thread of most scripts, between any two of its bytecodes. ``queue.Queue``
and ``threading.Event`` enter their ``Condition`` in Python code: an interrupt that lands right
after the Condition's lock was taken leaves it taken, and the next put, join or wait (the hook
closing at exit) waits forever, so the job never ends. Here the training thread's side is single
C calls (``queue.SimpleQueue``'s put, get and get_nowait; a ``Lock``'s acquire), each either done
or not done when an interrupt comes; an interrupted hand-over loses at most that one item, never
the hand-off.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable

__all__ = ["Gate", "BoundedHandoff", "STOP"]

STOP = None  # the item that tells the consumer to end
_POLL_S = 1.0  # how often a waiting producer checks that the consumer is still there


class Gate:
    """``threading.Event``'s set, clear, is_set and wait, with set and clear as C calls: open
    while it holds a token. (A set racing a waiter's put-back may leave two tokens; clear takes
    them all.)"""

    __slots__ = ("_open",)

    def __init__(self):
        self._open: queue.SimpleQueue = queue.SimpleQueue()

    def set(self) -> None:
        if self._open.empty():
            self._open.put(True)

    def clear(self) -> None:
        try:
            while True:
                self._open.get_nowait()
        except queue.Empty:
            pass

    def is_set(self) -> bool:
        return not self._open.empty()

    def wait(self, timeout: float | None = None) -> bool:
        """Until the gate is open (it stays open): True, or False after ``timeout`` seconds."""
        try:
            token = self._open.get(timeout=timeout)
        except queue.Empty:
            return False
        self._open.put(token)
        return True


class _Marker:
    """Put behind the items handed over: released by the consumer when it gets there."""

    __slots__ = ("reached",)

    def __init__(self):
        self.reached = threading.Lock()
        self.reached.acquire()


class BoundedHandoff:
    """Items, in order, from producers to one consumer thread, at most ``capacity`` of them handed
    over and not yet done: :meth:`put` waits then (a slow consumer slows the producer instead of
    filling memory). The consumer calls :meth:`get`, then :meth:`done` after each item (not after
    :data:`STOP` or a marker, which :meth:`get` answers itself)."""

    def __init__(self, capacity: int):
        self._items: queue.SimpleQueue = queue.SimpleQueue()
        self._slots: queue.SimpleQueue = queue.SimpleQueue()
        for _ in range(max(1, capacity)):
            self._slots.put(None)

    # ---------------------------------------------------------------- producers
    def put(self, item, alive: Callable[[], bool]) -> bool:
        """Hand ``item`` over once a slot is free; False (not handed over) when ``alive()`` says
        the consumer is gone."""
        while True:
            try:
                self._slots.get(timeout=_POLL_S)
                break
            except queue.Empty:
                if not alive():
                    return False
        self._items.put(item)
        return True

    def stop(self) -> None:
        """Tell the consumer to end once it has done what was handed over before."""
        self._items.put(STOP)

    def wait_until_done(self, alive: Callable[[], bool]) -> bool:
        """Wait until the consumer has reached everything handed over so far; False when it is gone."""
        marker = _Marker()
        self._items.put(marker)
        while not marker.reached.acquire(timeout=_POLL_S):
            if not alive():
                return False
        return True

    # ---------------------------------------------------------------- the consumer
    def get(self):
        """The next item (or :data:`STOP`); markers on the way are released here."""
        while True:
            item = self._items.get()
            if type(item) is _Marker:
                item.reached.release()
                continue
            return item

    def empty(self) -> bool:
        """Whether nothing is waiting for the consumer now."""
        return self._items.empty()

    def done(self) -> None:
        """The consumer has done an item: its slot is free."""
        self._slots.put(None)
