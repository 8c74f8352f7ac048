"""TimelineWriter: 1.0.34's file layout, rotation by size and age without losing or overwriting files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from timelines import read_events, steps_of

from smdebug.exceptions import SMDebugValueError
from smdebug.profiler import Profiler, ProfilerConfig, TimelineWriter
from smdebug.profiler.recording.timeline import now_us
from smdtest import run_json

PEER_READ = Path(__file__).with_name("peer_read.py")


def _write_steps(w: TimelineWriter, n: int, t0: int) -> None:
    for s in range(n):
        w.complete("Forward", "Net", t0 + 1000 * s + 10, t0 + 1000 * s + 500, {"pid": 1, "step_num": str(s)})
        w.complete(
            "Step:ModeKeys.TRAIN",
            "Step:ModeKeys.TRAIN",
            t0 + 1000 * s,
            t0 + 1000 * s + 900,
            {"pid": 1, "step_num": str(s)},
        )


def test_file_layout_and_names(tmp_path):
    w = TimelineWriter(str(tmp_path), "123-host")
    t0 = now_us()
    _write_steps(w, 3, t0)
    w.flush()
    assert (tmp_path / "framework" / "123-host_pythontimeline.json.tmp").exists()
    w.close()
    (f,) = w.files
    rel = Path(f).relative_to(tmp_path)
    last_end = t0 + 2000 + 900
    assert rel.parts[:2] == ("framework", "pevents") and rel.name == f"{last_end}_123-host_pythontimeline.json"
    doc = json.loads(Path(f).read_text())
    assert doc[0] == {
        "name": "process_name",
        "ph": "M",
        "pid": 0,
        "args": {"start_time_since_epoch_in_micros": w.base_us},
    }
    assert doc[1]["name"] == "process_sort_index"
    assert [e["ts"] + w.base_us for e in doc if e["ph"] == "X"][:2] == [t0 + 10, t0]
    assert not (tmp_path / "framework" / "123-host_pythontimeline.json.tmp").exists()


def test_size_rotation_keeps_every_event_and_never_overwrites(tmp_path, peer):
    w = TimelineWriter(str(tmp_path), "7-h", max_bytes=2048)
    t0 = now_us()
    _write_steps(w, 40, t0)
    # a second writer of the same node whose last event ends at the same microsecond
    w.close()
    w2 = TimelineWriter(str(tmp_path), "7-h")
    w2.complete("Forward", "Net", t0, t0 + 39 * 1000 + 900)
    w2.close()
    assert len(w.files) > 3 and len(set(w.files + w2.files)) == len(w.files) + 1
    events = read_events(tmp_path)
    assert len(events) == 81
    assert sorted(steps_of(events)) == list(range(40))
    for f in w.files:  # every file announces the phases it uses
        doc = json.loads(Path(f).read_text())
        assert {e["args"]["name"] for e in doc if e["name"] == "process_name" and "name" in e["args"]} == {
            "Forward",
            "Step:ModeKeys.TRAIN",
        }
    theirs = run_json(peer, PEER_READ, tmp_path, "framework")["events"]
    assert len(theirs) == 81 and sorted(int(e[6]["step_num"]) for e in theirs if e[0].startswith("Step")) == list(
        range(40)
    )


def test_age_rotation(tmp_path):
    clock = [0.0]
    w = TimelineWriter(str(tmp_path), "7-h", close_interval_s=60, clock=lambda: clock[0])
    t0 = now_us()
    for s in range(4):  # a step every 25 s: a file is closed once it is older than 60 s
        w.complete("Step:ModeKeys.TRAIN", "Step:ModeKeys.TRAIN", t0 + s, t0 + s + 1, {"step_num": str(s)})
        w.flush()
        clock[0] += 25.0
    w.close()
    assert len(w.files) == 2
    assert [len(json.loads(Path(f).read_text())) for f in w.files] == [2 + 2 + 3, 2 + 2 + 1]


def test_events_are_written_in_batches_and_at_the_flush_interval(tmp_path):
    clock = [0.0]
    w = TimelineWriter(str(tmp_path), "7-h", batch=4, flush_interval_s=1.0, clock=lambda: clock[0])
    tmp = tmp_path / "framework" / "7-h_pythontimeline.json.tmp"
    t0 = now_us()
    for s in range(3):
        w.complete("P", "e", t0 + s, t0 + s + 1)
    assert tmp.read_bytes().count(b'"ph":"X"') == 0 and w.events_written == 0  # queued (the file is open)
    w.complete("P", "e", t0 + 3, t0 + 4)  # the fourth fills the batch
    assert w.events_written == 4 and tmp.read_bytes().count(b'"ph":"X"') == 4
    w.complete("P", "e", t0 + 4, t0 + 5)
    assert w.events_written == 4
    clock[0] = 1.5  # more than a second since the last flush: the next event goes out with it
    w.complete("P", "e", t0 + 5, t0 + 6)
    assert w.events_written == 6 and tmp.read_bytes().count(b'"ph":"X"') == 6
    w.close()
    assert len(read_events(tmp_path)) == 6


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_writes_nothing_twice_and_leaves_the_file_to_its_parent(tmp_path):
    w = TimelineWriter(str(tmp_path), "7-h", batch=10_000)
    t0 = now_us()
    _write_steps(w, 3, t0)  # queued, not written: the fork writes them first
    pid = os.fork()
    if pid == 0:  # the child (a DataLoader worker, a user's subprocess): its atexit closing the writer
        code = 3
        try:
            w.close()
            code = 0 if not w.files else 4
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    w.complete("Forward", "Net", t0 + 5000, t0 + 5500, {"pid": 1, "step_num": "5"})
    w.close()
    assert len(w.files) == 1
    assert sorted(int(e["args"]["step_num"]) for e in read_events(tmp_path)) == [0, 0, 1, 1, 2, 2, 5]  # each once


def test_open_failures_mark_the_writer_unhealthy_and_count_what_is_dropped(tmp_path, caplog):
    blocker = tmp_path / "framework"
    blocker.write_text("a file where the folder should be")
    w = TimelineWriter(str(tmp_path), "7-h", open_fail_threshold=3)
    _write_steps(w, 3, now_us())
    w.close()
    assert not w.healthy and w.dropped == 6 and w.files == []
    assert "6 framework events could not be written" in caplog.text


def test_profiler_alone_steps_and_python_stats(tmp_path):
    cfg = ProfilerConfig(local_path=str(tmp_path), python=(1, 2), system_metrics=False)
    with Profiler(cfg, framework="pytorch") as p:
        for s in range(4):
            p.step_start("train", s)
            sum(range(1000))
    steps = steps_of(read_events(tmp_path))
    assert sorted(steps) == [0, 1, 2, 3]
    stats = sorted(Path(tmp_path, "framework", "pytorch", "cprofile").glob("*/*/python_stats"))
    names = [s.parent.name for s in stats]
    assert [n.split("_")[0].rsplit("-", 1)[0] for n in names] == ["train-1-stepstart", "train-2-stepstart"]
    assert [n.split("_")[1].rsplit("-", 1)[0] for n in names] == ["train-1-stepend", "train-2-stepend"]
    import pstats

    assert any("sum" in str(k) for k in pstats.Stats(str(stats[0])).stats)


def test_an_error_disables_the_profiler_not_training(tmp_path, caplog):
    with Profiler(ProfilerConfig(local_path=str(tmp_path), system_metrics=False)) as p:
        p.step_start("train", 0)

        def broken(*a, **k):
            raise OSError("disk full")

        p.timeline.complete = broken  # something breaks inside
        p.step_start("train", 1)
        assert p.disabled
        p.step_start("train", 2)  # a no-op from now on
    assert "disabled the hook" in caplog.text


def test_an_unsupported_url_is_refused_naming_it():
    with pytest.raises(SMDebugValueError, match="unsupported storage URL 'ftp://host/prof'"):
        Profiler(ProfilerConfig(local_path="ftp://host/prof"))


def test_a_profiler_left_open_is_closed_at_exit(tmp_path):
    import subprocess
    import sys

    script = (
        "from smdebug.profiler import Profiler, ProfilerConfig\n"
        f"p = Profiler(ProfilerConfig(local_path={str(tmp_path)!r}, interval_millis=100))\n"
        "for s in range(3):\n"
        "    p.step_start('train', s)\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    assert sorted(steps_of(read_events(tmp_path))) == [0, 1, 2]
    assert (tmp_path / "framework" / "training_job_end.ts").exists()
    assert not list((tmp_path / "framework").glob("*.tmp"))
