"""A KeyboardInterrupt on the training thread, wherever it lands in a hand-over to a background
thread, never keeps the writer from closing (the hook closes at exit: a hang there is a job that
never ends after Ctrl-C). Seen under load: the launcher's SIGINT landed inside queue.Queue.put,
right after its Condition's lock was taken, and the job hung at exit.

Each test interrupts the call at every point where Python runs a signal handler in the Python
code it runs, one point per run: a function's start and the return from a call (the interpreter
checks for signals there, not at every bytecode: a trace function's call and return events)."""

from __future__ import annotations

import sys
import threading

import numpy as np

from smdebug.core.modes import ModeKeys
from smdebug.core.output.handoff import BoundedHandoff, Gate
from smdebug.core.output.step_writer import StepRecords, StepWriter

DEADLINE_S = 30


class _Interrupt:
    """A trace function that raises KeyboardInterrupt at the ``n``-th call or return event."""

    def __init__(self, n: int):
        self.n, self.seen, self.fired = n, 0, False

    def __call__(self, frame, event, arg):
        if self.fired:
            return None
        if event not in ("call", "return"):
            return self
        self.seen += 1
        if self.seen == self.n:
            self.fired = True
            raise KeyboardInterrupt
        return self


def _interrupted(call, n: int) -> bool:
    """Run ``call()`` interrupted at trace event ``n``: whether the interrupt came (False: the
    call has fewer events, every point was tried)."""
    tracer = _Interrupt(n)
    sys.settrace(tracer)
    try:
        call()
    except KeyboardInterrupt:
        pass
    finally:
        sys.settrace(None)
    return tracer.fired


def _ends(fn) -> bool:
    """Whether ``fn()`` returns within the deadline (run on a thread: a hang fails, not hangs)."""
    t = threading.Thread(target=fn, daemon=True)
    t.start()
    t.join(DEADLINE_S)
    return not t.is_alive()


def _rec(step):
    return StepRecords(step, ModeKeys.TRAIN, step, tensors=[("x", np.full(2, step, dtype=np.float32), None)])


def test_a_step_writer_closes_whatever_hand_over_was_interrupted(tmp_path):
    n = 0
    while True:
        n += 1
        out = tmp_path / f"t{n}"
        w = StepWriter(str(out), "worker_0", max_pending=2)
        w.open_gate()
        for s in range(3):
            w.submit(_rec(s))
        came = _interrupted(lambda w=w: (w.open_gate(), w.submit(_rec(3)), w.flush()), n)
        assert _ends(w.close), f"interrupted at event {n}: the writer never closed"
        written = [s for s in range(4) if (out / "index" / "000000000" / f"{s:012d}_worker_0.json").exists()]
        assert written in ([0, 1, 2], [0, 1, 2, 3]), (n, written)
        if not came:
            break
    assert n > 10  # (the hand-over runs Python code: it was interrupted at each point of it)


def test_the_hand_off_keeps_order_bound_and_markers():
    h = BoundedHandoff(2)
    alive = threading.Event()
    alive.set()
    assert h.put("a", alive.is_set) and h.put("b", alive.is_set)
    alive.clear()  # no consumer: the third waits for a slot, then gives up
    assert not h.put("c", alive.is_set)
    got = []

    def consume():
        while (item := h.get()) is not None:
            got.append(item)
            h.done()

    t = threading.Thread(target=consume, daemon=True)
    t.start()
    assert h.wait_until_done(t.is_alive) and got == ["a", "b"]
    h.stop()
    t.join(DEADLINE_S)
    assert not t.is_alive() and not h.wait_until_done(t.is_alive)


def test_the_gate_opens_closes_and_stays_open_for_waiters():
    g = Gate()
    assert not g.is_set() and not g.wait(0.01)
    g.set()
    g.set()
    assert g.wait(0) and g.wait(0) and g.is_set()  # waiting leaves it open
    g.clear()
    assert not g.is_set()
