"""smdebug.profiler.reading.file_list and the name parsers it is given: the listed files of a
stream as columns, sorted per node on demand, with a File only for the files queries read."""

from __future__ import annotations

import gc
import random

import pytest

from smdebug.profiler.reading import ProfileFolder
from smdebug.profiler.reading.file_list import File, FileList
from smdebug.profiler.reading.trace_files import FILE_TYPES, _node_id, trace_file_info


def _info(key: str):
    """Test names: ``<node>/<time>[.<anything>]``; others are not files of the stream."""
    node, _, name = key.partition("/")
    stamp = name.split(".")[0]
    return (int(stamp), node) if stamp.isdigit() else None


def test_update_adds_new_files_in_listed_order_and_forgets_deleted_ones():
    files = FileList(_info)
    files.update(["a/3", "a/1", "b/2", "a/x", "b/5"], None)
    assert list(files.time.items()) == [("a/3", 3), ("a/1", 1), ("b/2", 2), ("b/5", 5)]
    assert files.node == {"a/3": "a", "a/1": "a", "b/2": "b", "b/5": "b"}
    assert len(files) == 4
    f = files.file("a/1")
    f.parsed = "parsed"
    assert files.file("a/1") is f and files.opened == {"a/1": f}
    assert f == File("a/1", 1, "a", "", None, "parsed")
    files.update(["a/1", "b/5", "a/0"], {"a/1", "b/5", "a/0"})  # a/3 and b/2 were deleted
    assert list(files.time) == ["a/1", "b/5", "a/0"]
    assert files.file("a/1").parsed == "parsed"  # what was read of a file still listed is kept
    files.update(["b/5", "a/0"], {"b/5", "a/0"})
    assert "a/1" not in files.opened  # a deleted file is forgotten, with what was read of it
    files.update(["a/1", "b/5", "a/0"], {"a/1", "b/5", "a/0"})
    assert files.file("a/1").parsed is None


def test_each_nodes_files_sort_by_time_then_key():
    files = FileList(_info)
    files.update(["a/2.y", "a/10", "a/2.x", "b/7", "a/1"], None)
    assert files.by_node() == {"a": ([1, 2, 2, 10], ["a/1", "a/2.x", "a/2.y", "a/10"]), "b": ([7], ["b/7"])}
    assert [files.position(k) for k in ("a/1", "a/2.x", "a/2.y", "a/10", "b/7")] == [0, 1, 2, 3, 0]
    listed = FileList(_info)
    listed.update(["a/1", "a/2", "a/3"], None)  # already in order: kept as listed
    assert listed.by_node()["a"] == ([1, 2, 3], ["a/1", "a/2", "a/3"])
    listed.update(["a/1", "a/2", "a/3", "a/0"], None)  # a refresh sorts again
    assert listed.by_node()["a"] == ([0, 1, 2, 3], ["a/0", "a/1", "a/2", "a/3"])


def test_first_and_newest_per_node_take_the_first_listed_of_equal_times():
    files = FileList(_info)
    files.update(["a/5.y", "b/4", "a/2.y", "a/2.x", "a/5.x", "b/9"], None)
    assert files.first_per_node() == ["a/2.y", "b/4"]
    assert files.first_per_node(newest=True) == ["a/5.y", "b/9"]


def _reference_trace_file_info(key: str):  # the parser before names were cached
    if not key.endswith(tuple("_" + s for s in FILE_TYPES)) or "pevents" not in key or "/framework/" not in "/" + key:
        return None
    base = key[key.rfind("/") + 1 :]
    stamp, _, rest = base.partition("_")
    node, _, tail = rest.partition("_")
    if not tail or not stamp.isdigit():
        return None
    for suffix in FILE_TYPES:
        if base.endswith("_" + suffix):
            return int(stamp), _node_id(node), suffix
    return None


def test_framework_names_are_parsed_as_before_they_were_cached():
    folders = [
        "framework/pevents/2026092114/",
        "x/framework/pevents/",
        "framework/",
        "pevents/",
        "framework/x/",
        "frameworks/pevents/",
        "",
        "a/framework/b/pevents/c/",
    ]
    stamps = ["123", "", "12a", "0", "99999999999999999999", "1_2"]
    nodes = ["1-algo-1", "algo-1", "pevents", "a_b", "", "x-algo-2-algo-3", "a\nb-algo-1", "model"]
    rnd = random.Random(0)
    keys = [
        f + s + sep1 + n + sep2 + suffix
        for f in folders
        for s in stamps
        for n in nodes
        for sep1, sep2 in (("_", "_"), ("_", ""), ("", "_"))
        for suffix in [*FILE_TYPES, "timeline.json", "pythontimeline.json.tmp", "_model_timeline.json"]
        if rnd.random() < 0.5
    ]
    keys += ["framework/pevents/1_model_timeline.json", "framework/pevents/1_x_pythontimeline.json"]
    parsed = [trace_file_info(k) for k in keys * 2]  # the second time from the cache
    assert parsed == [_reference_trace_file_info(k) for k in keys * 2]
    assert sum(p is not None for p in parsed) > 100


def test_opening_a_trial_makes_no_tracked_object_per_file(tmp_path):
    """A 24-hour profile lists thousands of files: opening keeps them in dicts of strings and ints,
    so that the garbage collector has nothing more to walk (and is not set off)."""
    for minute in range(600):
        path = (
            tmp_path
            / "framework"
            / "pevents"
            / f"{minute // 60:02d}"
            / f"{1_800_000_000 + minute}_1-algo-1_pythontimeline.json"
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"[]")
    ProfileFolder(tmp_path)  # (imports, caches)
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        before = len(gc.get_objects())
        trial = ProfileFolder(tmp_path)
        made = len(gc.get_objects()) - before
    finally:
        if was:
            gc.enable()
    assert len(trial.file_timestamps("framework")) == 600
    assert made < 60


@pytest.mark.parametrize("stream", ["system", "framework"])
def test_a_trial_reads_files_listed_out_of_time_order(tmp_path, stream):
    """Keys sort as strings, not as times: a later minute in an earlier folder still comes in time order."""
    if stream == "system":
        for minute, folder in ((1_800_000_060, "b"), (1_800_000_000, "c"), (1_800_000_120, "a")):
            path = tmp_path / "system" / folder / f"{minute}.algo-1.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(
                b'{"Type":"cpu","Name":"cpu0","Dimension":"U","Value":%d,"NodeId":"algo-1","Timestamp":%d}\n'
                % (minute, minute)
            )
        series = ProfileFolder(tmp_path).system_series()
        assert series[0].value.tolist() == [1_800_000_000, 1_800_000_060, 1_800_000_120]
        return
    for end, folder in ((2_000_000, "b"), (1_000_000, "c"), (3_000_000, "a")):
        path = tmp_path / "framework" / "pevents" / folder / f"{end}_1-algo-1_pythontimeline.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            '[{"name":"process_name","ph":"M","pid":0,"args":{"start_time_since_epoch_in_micros":0}},'
            f'{{"name":"e{end}","pid":0,"ph":"X","ts":{end - 10},"dur":10}}]'
        )
    trial = ProfileFolder(tmp_path)
    assert trial.file_timestamps("framework") == [1_000_000, 2_000_000, 3_000_000]
    assert list(trial.framework_events(1_500_000, 2_000_000).name) == ["e2000000"]
    assert list(trial.framework_events().name) == ["e1000000", "e2000000", "e3000000"]
