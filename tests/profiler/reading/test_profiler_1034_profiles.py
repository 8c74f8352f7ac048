"""Profiles written by smdebug 1.0.34's own PyTorch hook (tests/profiler/fixtures/smdebug-1.0.34, made by
tests/profiler/fixtures/make_1034_profiles.py), read by 1.0.34's readers and by ours: every event field
but the per-process ``tid`` hashes, step intervals, every PandasFrame column, the frame's time origin,
job and step statistics (the same script runs in both interpreters)."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pytest

from smdtest import run_json

FIXTURES = Path(__file__).parents[1] / "fixtures" / "smdebug-1.0.34"
QUERIES = Path(__file__).with_name("profile_queries.py")
# where 1.0.34's get_job_statistics() gives a one-row pandas Series, ours gives the number it holds
SERIES_IN_1034 = {"training_loop_duration", "training_loop_%"}


PROFILES = ("pt_1034", "pt_1034_rotation")


def test_our_readers_answer_as_1034_on_its_pytorch_profiles(peer):
    pytest.importorskip("pandas")
    roots = [FIXTURES / p for p in PROFILES]
    both = zip(PROFILES, roots, run_json(sys.executable, QUERIES, *roots), run_json(peer, QUERIES, *roots))
    for profile, root, ours, theirs in both:
        _same_answers(profile, root, ours, theirs)


def _same_answers(profile, root, ours, theirs):
    for key in ("events", "step_intervals", "start_time", "system", "framework", "step_statistics"):
        assert ours[key] == theirs[key], (profile, key)
    phases = Counter(e[0] for e in theirs["events"])
    steps = {int(e[8]["step_num"]) for e in theirs["events"]}
    if profile == "pt_1034":
        # 1.0.34 announces pid 0 twice (the file's header, then "Forward-SubModuleInternal"): the
        # second name counts, for 4 of every step's 6 events
        assert phases == {"Forward-SubModuleInternal": 80, "Forward": 20, "Step:ModeKeys.TRAIN": 20}
        assert steps == set(range(20))
    else:
        # 1.0.34's writer renamed rotated files onto names it had used: steps 17 and 18 are not on
        # disk, for either reader (our writer keeps every event: tests/profiler/test_timeline.py)
        assert "Unknown" not in phases and len(phases) == 3
        assert steps == set(range(20)) - {17, 18}
    # the frame's time origin is the first system file's minute (in its name), as in 1.0.34
    minute = int(next(root.glob("system/incremental/*/*.json")).name.split(".")[0])
    assert ours["start_time"] == minute * 10**6
    first_sample = min(r[1] for r in ours["system"]["rows"])
    assert 0 < first_sample < 60 * 10**6
    # job statistics: the same numbers; where 1.0.34 gives a one-row Series, ours the number in it
    mine, its = ours["job_statistics"], theirs["job_statistics"]
    assert set(mine) == set(its)
    assert {k for k, v in its.items() if isinstance(v, dict)} == SERIES_IN_1034
    for k in mine:
        assert mine[k] == (its[k]["series"][0] if k in SERIES_IN_1034 else its[k]), k
    c = {name: i for i, name in enumerate(ours["framework"]["columns"])}
    step0 = [
        r[c["start_time_us"]]
        for r in ours["framework"]["rows"]
        if r[c["step"]] == 0 and r[c["framework_metric"]] == "Step:ModeKeys.TRAIN"
    ]
    assert mine["initialization"] == min(step0) > first_sample  # from the minute, as 1.0.34


def test_the_general_reader_names_phases_as_the_bulk_reader():
    """The bulk path (trace_bulk) and the general one (trace_files, for files the bulk path leaves)
    both take the latest process_name of a pid before the event."""
    from smdebug.profiler.reading.trace_files import parse_trace_file
    from smdebug.profiler.trial import ProfilerTrial

    root = FIXTURES / "pt_1034"
    (f,) = root.glob("framework/pevents/*/*.json")
    general = parse_trace_file(f.read_bytes(), str(f), "n")
    bulk = ProfilerTrial(str(root)).framework_events()
    assert Counter(general.phase.tolist()) == Counter(bulk.phase.tolist())
    assert Counter(general.phase.tolist())["Forward-SubModuleInternal"] == 80
    # a name that comes later renames the pid from there on; before any name it is "Unknown"
    doc = [
        {"name": "process_name", "ph": "M", "pid": 0, "args": {"start_time_since_epoch_in_micros": 10**15}},
        {"name": "a", "ph": "X", "pid": 0, "ts": 1, "dur": 1, "args": {}},
        {"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "Forward"}},
        {"name": "b", "ph": "X", "pid": 0, "ts": 2, "dur": 1, "args": {}},
        {"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "Backward"}},
        {"name": "c", "ph": "X", "pid": 0, "ts": 3, "dur": 1, "args": {}},
    ]
    ev = parse_trace_file(json.dumps(doc).encode(), "doc", "n")
    assert ev.phase.tolist() == ["Unknown", "Forward", "Backward"]
