"""The profiler's TimelineWriter writes on its own thread: a write the operating system holds up
never stalls the training thread, an error there reaches the profiler's error policy, a forked
child neither writes the parent's queued events again nor finishes the parent's file, and a file
left idle is rotated for live readers."""

from __future__ import annotations

import os
import threading
import time

import pytest
from timelines import read_events, steps_of

from smdebug.profiler import Profiler, ProfilerConfig, TimelineWriter
from smdebug.profiler.timeline import now_us


def _step(w: TimelineWriter, s: int, t0: int) -> None:
    w.complete("Step:ModeKeys.TRAIN", "Step:ModeKeys.TRAIN", t0 + 1000 * s, t0 + 1000 * s + 900,
               {"pid": 1, "step_num": str(s)})


def _until(cond, timeout=30.0) -> bool:
    """Poll ``cond`` until it holds (the writer's thread works on its own time), at most ``timeout`` s."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        threading.Event().wait(0.01)
    return cond()


def test_a_held_up_write_does_not_stall_the_training_thread(tmp_path):
    w = TimelineWriter(str(tmp_path), "7-h", batch=4, background=True)
    gate, entered = threading.Event(), threading.Event()
    drain = w._drain

    def held_up_drain():  # the disk is behind: the write blocks until the gate opens
        entered.set()
        assert gate.wait(60)
        drain()

    w._drain = held_up_drain
    t0 = now_us()
    for s in range(4):  # the fourth fills the batch: the writer's thread is woken
        _step(w, s, t0)
    assert entered.wait(30)  # the thread is inside the write, holding the writer's lock
    for s in range(4, 40):  # the training thread goes on queueing, never blocked
        _step(w, s, t0)
    assert w.events_written == 0 and w._thread.name == "smdebug-timeline"
    gate.set()
    w.close()
    assert sorted(int(e["args"]["step_num"]) for e in read_events(tmp_path)) == list(range(40))  # each once
    assert not list((tmp_path / "framework").glob("*.tmp"))


def test_an_error_of_the_writers_thread_is_raised_by_the_next_call(tmp_path):
    w = TimelineWriter(str(tmp_path), "7-h", batch=2, background=True)

    def broken():
        raise OSError("disk full")

    w._drain = broken
    t0 = now_us()
    _step(w, 0, t0)
    _step(w, 1, t0)  # due: the thread fails and stops
    thread = w._thread
    thread.join(30)
    assert not thread.is_alive()
    with pytest.raises(OSError, match="disk full"):
        _step(w, 2, t0)
    assert not w.background  # inline from now on


def test_the_profiler_disables_itself_when_its_writer_thread_fails(tmp_path, caplog):
    with Profiler(ProfilerConfig(local_path=str(tmp_path), system_metrics=False)) as p:
        assert p.timeline.background
        p.timeline.batch = 1

        def broken():
            raise OSError("disk full")

        p.timeline._drain = broken
        p.step_start("train", 0)
        p.step_start("train", 1)  # ends step 0: due
        p.timeline._thread.join(30)
        p.step_start("train", 2)  # the error reaches the profiler here
        assert p.disabled
        p.step_start("train", 3)  # a no-op from now on
    assert "disk full" in caplog.text


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_writes_nothing_twice_and_leaves_the_file_to_its_parent(tmp_path):
    w = TimelineWriter(str(tmp_path), "7-h", batch=10_000, background=True)
    t0 = now_us()
    for s in range(5):
        _step(w, s, t0)
    w._due()  # the thread is running and may be writing while the process forks
    pid = os.fork()
    if pid == 0:  # the child: what it inherited is written; closing there must not finish the file
        code = 0
        try:
            w.close()
            code = 0 if not w._pending and not w.files else 3
        except BaseException:  # noqa: BLE001
            code = 4
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    for s in range(5, 8):
        _step(w, s, t0)
    w.close()
    steps = sorted(int(e["args"]["step_num"]) for e in read_events(tmp_path))
    assert steps == list(range(8))  # each once
    assert len(w.files) == 1


def test_a_file_left_idle_is_rotated_for_live_readers(tmp_path):
    w = TimelineWriter(str(tmp_path), "7-h", close_interval_s=0.2, flush_interval_s=0.05, background=True)
    t0 = now_us()
    for s in range(3):
        _step(w, s, t0)
    w._due()
    # no more events: the thread writes them and then finishes the file once it is 0.2 s old
    assert _until(lambda: len(w.files) == 1)
    assert sorted(steps_of(read_events(tmp_path))) == [0, 1, 2]
    _step(w, 3, t0)
    w.close()
    assert len(w.files) == 2 and sorted(steps_of(read_events(tmp_path))) == [0, 1, 2, 3]
