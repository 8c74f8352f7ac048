"""Hostile trials: every field of an index or collections file given a wrong type, a huge number, a
negative or out-of-file offset, duplicates, names with path separators or NUL bytes; event files
whose records claim terabytes.

Each case damages one step of a real trial written by FileWriter and asserts what the reader does:
the damaged step gives a clear error naming the file (at open or when read), or reads exactly when
the damage is harmless; every other step stays readable with its exact values; nothing is read from
outside the trial (a decoy event file beside it has other values); nothing allocates much more than
the files' size (tracemalloc peak). COUNTS records how many hostile inputs were tried.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from smdebug.codec.crc import masked_crc32c
from smdebug.core.locations import END_OF_JOB, event_key, index_key
from smdebug.core.writer import FileWriter
from smdebug.exceptions import (
    EventFileCorrupt,
    IndexReaderException,
    MissingCollectionFiles,
    SMDebugError,
    StepUnavailable,
    StorageError,
)
from smdebug.trials import create_trial

STEPS = (0, 1, 2)
BAD = 1  # the step every index case damages
COUNTS: dict[str, int] = {}
PEAK_LIMIT = 4 * 1024 * 1024  # bytes: the trial is a few kB; a read of a claimed length would be TBs


def _val(name: str, step: int) -> np.ndarray:
    base = {"a": 1.0, "b": 100.0, "c": 1000.0}[name]
    return (np.arange(6, dtype=np.float32).reshape(2, 3) + base + 10 * step).astype(np.float32)


def _write_trial(root: Path) -> None:
    for step in STEPS:
        with FileWriter(trial_dir=str(root), step=step, worker="worker_0") as fw:
            for n in ("a", "b", "c"):
                fw.write_tensor(tdata=_val(n, step), tname=n)
            fw.write_shape("a", (2, 3))
    from smdebug.core.collection_manager import CollectionManager

    cm = CollectionManager()
    cm.add("default")
    cm.set_num_workers(1)
    cm.export(str(root), "worker_0_collections.json")
    (root / END_OF_JOB).write_bytes(b"")


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("hostile")
    root = base / "pristine" / "trial"
    _write_trial(root)
    # a decoy outside the trial: an event file with other values, which must never be read
    decoy = base / "decoy.tfevents"
    with FileWriter(trial_dir=str(base / "decoytrial"), step=BAD, worker="worker_0") as fw:
        for n in ("a", "b", "c"):
            fw.write_tensor(tdata=np.full((2, 3), -7.0, np.float32), tname=n)
    shutil.copy(base / "decoytrial" / event_key(BAD, "worker_0"), decoy)
    return root


@pytest.fixture
def trial_copy(pristine, tmp_path) -> Path:
    # beside the copy lies the decoy too (at ../../decoy.tfevents from the trial's events folder)
    root = tmp_path / "case" / "trial"
    shutil.copytree(pristine, root)
    shutil.copy(pristine.parent.parent / "decoy.tfevents", tmp_path / "case" / "decoy.tfevents")
    return root


def _index(root: Path, step: int = BAD) -> Path:
    return root / index_key(step, "worker_0")


def _event(root: Path, step: int = BAD) -> Path:
    return root / event_key(step, "worker_0")


def _assert_others_readable(trial, skip=(BAD,)) -> None:
    for step in STEPS:
        if step in skip:
            continue
        for n in ("a", "b", "c"):
            np.testing.assert_array_equal(trial.tensor(n).value(step), _val(n, step))


def _open(root: Path):
    tracemalloc.start()
    try:
        trial = create_trial(str(root))
        return trial, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _read(trial, name, step):
    """(value or exception, peak bytes allocated while reading)."""
    tracemalloc.start()
    try:
        try:
            got = trial.tensor(name).value(step)
        except Exception as exc:  # noqa: BLE001 - classified by the caller
            got = exc
        return got, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# ----------------------------------------------------------------------------- index cases
# Each case: a function editing the index document of step BAD (a dict) in place, and the outcome:
#   "open": refused when the trial reads the index (IndexReaderException naming the index file,
#           given again by any read of that step; the step is not listed)
#   "read": the index is listed, reading "a" at that step raises IndexReaderException or
#           EventFileCorrupt naming the index or the event file
#   "ok":   harmless; "a" at that step reads exactly (the expected value given)


def _set(*path, value):
    def edit(d):
        target = d
        for p in path[:-1]:
            target = target[p]
        target[path[-1]] = value

    return edit


def _drop(*path):
    def edit(d):
        target = d
        for p in path[:-1]:
            target = target[p]
        del target[path[-1]]

    return edit


WRONG_TYPES = [None, True, 1.5, "x", [], {}, [1], {"a": 1}]
HUGE = [2**63, 2**64 - 1, 1e308, -(2**63) - 1]

INDEX_CASES: dict[str, tuple] = {}


def _case(name, edit, outcome):
    assert name not in INDEX_CASES
    INDEX_CASES[name] = (edit, outcome)


for v in WRONG_TYPES + HUGE + ["", "TRAINING", "global "]:
    _case(f"meta.mode={v!r}", _set("meta", "mode", value=v), "open")
for v in WRONG_TYPES + HUGE + ["1", 2.0, 1e300]:
    _case(f"meta.mode_step={v!r}", _set("meta", "mode_step", value=v), "open")
for v in [None, 1, [], {}, "", "x", [{"mode": "GLOBAL"}]]:
    _case(f"meta={v!r}", _set("meta", value=v), "open")
for v in [
    None,
    1,
    True,
    [],
    {},
    "",
    "../../decoy.tfevents",
    "/etc/passwd",
    "events/../../../decoy.tfevents",
    "..\\..\\decoy.tfevents",
    "gs://bucket/key",
    "file:///etc/passwd",
    "events/x\0y",
    "\0",
    "C:\\decoy.tfevents",
    "~/decoy.tfevents",
]:
    # ~ is no home folder here, just a name; "" keeps the step listed, as 1.0.34 does (reading fails)
    outcome = "read" if v in ("~/decoy.tfevents", "") else "open"
    _case(f"meta.event_file_name={v!r}", _set("meta", "event_file_name", value=v), outcome)
_case("meta.event_file_name=missing", _drop("meta", "event_file_name"), "open")
# our writer's payload CRC32C in the index tells another step's record from this one's
_case("meta.event_file_name=other step", _set("meta", "event_file_name", value=event_key(0, "worker_0")), "read")
_case("meta.event_file_name=not there", _set("meta", "event_file_name", value="events/nothere.tfevents"), "read")
_case("meta.event_file_name=a folder", _set("meta", "event_file_name", value="events"), "read")
for v in [None, 1, "x", {}, {"tensorname": "a"}, [1], [None], ["a"], [[]]]:
    outcome = "ok-gone" if v is None or v == {} else "open"  # null / {} lists nothing: "a" absent
    _case(f"tensor_payload={v!r}", _set("tensor_payload", value=v), outcome)
for v in [None, True, 1.5, [], {}, [1], {"a": 1}]:
    _case(f"tensorname={v!r}", _set("tensor_payload", 0, "tensorname", value=v), "open")
for v in ["x", "", "a\0b", "../../a", "/a", "a/../../b"]:  # names, never paths: harmless, "a" is just gone
    _case(f"tensorname={v!r}", _set("tensor_payload", 0, "tensorname", value=v), "ok-gone")
_case("tensorname=missing", _drop("tensor_payload", 0, "tensorname"), "open")
for field in ("start_idx", "length"):
    for v in WRONG_TYPES + HUGE + [-1, -(2**63), 2**63 - 1, 2**40, 2**62]:
        # a length past the end of the file is harmless: the record read is the one at start_idx,
        # its own header says how long it is, and no more than the file holds is read
        outcome = "ok" if field == "length" and isinstance(v, int) and 2**40 <= v < 2**63 else "read"
        _case(f"{field}={v!r}", _set("tensor_payload", 0, field, value=v), outcome)
    _case(f"{field}=missing", _drop("tensor_payload", 0, field), "open")
for v in (0, 15, 16, 17):
    _case(f"length={v}", _set("tensor_payload", 0, "length", value=v), "read")
_case("start_idx=mid record", _set("tensor_payload", 0, "start_idx", value=7), "read")
_case(
    "start_idx=second record",
    lambda d: d["tensor_payload"][0].update(
        start_idx=d["tensor_payload"][1]["start_idx"], length=d["tensor_payload"][1]["length"]
    ),
    "read",
)  # "b"'s record under "a"'s name: its payload CRC32C is not the one "a" was written with
_case("start_idx=end of file", _set("tensor_payload", 0, "start_idx", value=10_000), "read")
_case("start_idx=past end by 1 TB", _set("tensor_payload", 0, "start_idx", value=2**40), "read")
_case(
    "duplicate entry, last wins",
    lambda d: d["tensor_payload"].append(dict(d["tensor_payload"][1], tensorname="a")),
    "b",
)
_case("duplicate entries x1000", lambda d: d["tensor_payload"].extend([dict(d["tensor_payload"][0])] * 1000), "ok")
_case("duplicate shape entries", lambda d: d["shape_payload"].extend([{"tensorname": "a", "shape": [9]}]), "ok")
for v in [None, 1, "x", {}, [1], [None], [[]]]:
    outcome = "ok" if v is None or v == {} else "open"
    _case(f"shape_payload={v!r}", _set("shape_payload", value=v), outcome)
for v in [True, 1.5, "x", {}, {"a": 1}, [1.5], [-1], [2**63], [1e308], ["3"], [None], [True], [[1]]]:
    _case(f"shape={v!r}", _set("shape_payload", 0, "shape", value=v), "open")
for v in [[], [1], [0, 2**63 - 1]]:  # any shape: the value read is still the value saved
    _case(f"shape={v!r}", _set("shape_payload", 0, "shape", value=v), "ok")
for v in [None, 1, [], {}]:
    _case(f"shape tensorname={v!r}", _set("shape_payload", 0, "tensorname", value=v), "open")
    _case(f"shape originalname={v!r}", _set("shape_payload", 0, "originalname", value=v), "open")
_case("extra top-level key", _set("extra", value=[1] * 1000), "ok")


@pytest.mark.parametrize("case", list(INDEX_CASES))
def test_hostile_index_field(trial_copy, case):
    edit, outcome = INDEX_CASES[case]
    path = _index(trial_copy)
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))
    COUNTS["index fields"] = COUNTS.get("index fields", 0) + 1
    _check_outcome(trial_copy, path, outcome)


def _check_outcome(root: Path, index_path: Path, outcome: str, name: str = "a") -> None:
    trial, peak = _open(root)
    assert peak < PEAK_LIMIT + 16 * index_path.stat().st_size  # parsing costs a multiple of the file, no more
    if outcome == "open":
        assert trial.steps() == [s for s in STEPS if s != BAD]
        assert str(index_path) in trial.bad_index_files[index_path.relative_to(root).as_posix()]
        got, peak = _read(trial, name, BAD)
        assert isinstance(got, IndexReaderException), got
        assert str(index_path) in str(got)
    else:
        assert trial.steps() == list(STEPS)
        got, peak = _read(trial, name, BAD)
        if outcome == "read":
            assert isinstance(got, (IndexReaderException, EventFileCorrupt, StorageError)), repr(got)
            assert str(root) in str(got), str(got)  # names the index, or the file it points to
            assert len(str(got)) < 2000
        elif outcome == "ok-gone":
            assert isinstance(got, SMDebugError) and not isinstance(got, StepUnavailable), repr(got)
        else:
            assert not isinstance(got, Exception), repr(got)
            src = {"ok": (name, BAD), "ok0": (name, 0), "b": ("b", BAD)}[outcome]
            np.testing.assert_array_equal(got, _val(*src))
    if isinstance(got, np.ndarray):
        assert not (got == -7.0).any()  # never the decoy's values
    assert peak < PEAK_LIMIT, f"{peak} bytes allocated reading one small value"
    _assert_others_readable(trial)


@pytest.mark.parametrize(
    "junk",
    [
        b"",
        b"{",
        b"\x00" * 100,
        b"\xff\xfe",
        b"[]",
        b"null",
        b'{"meta": 1}',
        b"[" * 100_000,
        b'"' + b"x" * 1_000_000 + b'"',
    ],
)
def test_hostile_index_bytes(trial_copy, junk):
    path = _index(trial_copy)
    path.write_bytes(junk)
    COUNTS["index bytes"] = COUNTS.get("index bytes", 0) + 1
    _check_outcome(trial_copy, path, "open")


# ----------------------------------------------------------------------------- event files
def _frame_header(length: int) -> bytes:
    header = struct.pack("<Q", length)
    return header + struct.pack("<I", masked_crc32c(header))


EVENT_CASES = {
    # the first record's header claims 1 TB (with a valid length CRC, so the claim is believed)
    "record claims 1 TB": lambda data: _frame_header(2**40) + data[12:],
    "record claims 2**64-1 bytes": lambda data: _frame_header(2**64 - 1) + data[12:],
    "record claims 1 TB, file cut": lambda data: _frame_header(2**40) + data[12:40],
    "empty event file": lambda data: b"",
    "event file cut in a header": lambda data: data[:5],
    "event file cut in the payload": lambda data: data[:60],
    "payload bytes flipped": lambda data: data[:30] + bytes(b ^ 0xFF for b in data[30:40]) + data[40:],
    "length CRC broken": lambda data: data[:8] + b"\x00\x00\x00\x00" + data[12:],
}


@pytest.mark.parametrize("case", list(EVENT_CASES))
def test_hostile_event_file(trial_copy, case):
    path = _event(trial_copy)
    path.write_bytes(EVENT_CASES[case](path.read_bytes()))
    COUNTS["event files"] = COUNTS.get("event files", 0) + 1
    trial, _ = _open(trial_copy)
    assert trial.steps() == list(STEPS)
    got, peak = _read(trial, "a", BAD)
    assert isinstance(got, EventFileCorrupt), repr(got)
    assert str(path) in str(got)
    assert peak < PEAK_LIMIT
    _assert_others_readable(trial)


def test_event_file_a_terabyte_sparse_file(trial_copy):
    """An index pointing 1 TB into an event file that really is 1 TB long (sparse): one record's
    bytes are read, not the file."""
    path = _event(trial_copy)
    with open(path, "r+b") as f:
        f.truncate(2**40)
    doc = json.loads(_index(trial_copy).read_text())
    doc["tensor_payload"][0].update(start_idx=2**40 - 100, length=2**30)
    _index(trial_copy).write_text(json.dumps(doc))
    COUNTS["event files"] = COUNTS.get("event files", 0) + 1
    trial, _ = _open(trial_copy)
    got, peak = _read(trial, "a", BAD)
    assert isinstance(got, EventFileCorrupt) and str(path) in str(got), repr(got)
    assert peak < PEAK_LIMIT
    _assert_others_readable(trial)


# ----------------------------------------------------------------------------- index keys
@pytest.mark.parametrize(
    "key",
    [
        "index/000000000/000000000001_worker_0/x.json",  # a folder named like an index file
        "index/000000000/000000000001_a/../worker_0.json",
        "index/000000000/000000000001_.json",
        "index/000000000/x_worker_0.json",
        "index/000000000/000000000001_worker_0.json.tmp",
        "index/000000000/000000000001_worker_0.jsonx",
    ],
)
def test_stray_files_under_index(trial_copy, key):
    """Files that are not index files of this trial are not taken for one, whatever they hold."""
    COUNTS["index keys"] = COUNTS.get("index keys", 0) + 1
    evil = json.loads(_index(trial_copy).read_text())
    evil["meta"]["event_file_name"] = event_key(0, "worker_0")  # would give step 0's values for step 1
    target = trial_copy / key
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(evil))
    trial, _ = _open(trial_copy)
    assert trial.workers() == ["worker_0"]
    assert trial.steps() == list(STEPS)
    _assert_others_readable(trial, skip=())


def test_duplicate_index_for_a_step_in_another_bucket(trial_copy):
    """The same (step, worker) in the wrong index bucket is not a second copy of the step."""
    COUNTS["index keys"] = COUNTS.get("index keys", 0) + 1
    evil = json.loads(_index(trial_copy).read_text())
    evil["meta"]["event_file_name"] = event_key(0, "worker_0")
    target = trial_copy / "index" / "000000005" / "000000000001_worker_0.json"
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps(evil))
    trial, _ = _open(trial_copy)
    assert trial.steps() == list(STEPS)
    _assert_others_readable(trial, skip=())


# ----------------------------------------------------------------------------- collections
def _coll_path(root: Path) -> Path:
    return root / "collections" / "000000000" / "worker_0_collections.json"


def _cset(*path, value):
    return _set(*path, value=value)


COLL_CASES: dict[str, tuple] = {}
for v in [None, 1, "x", [], [1]]:
    COLL_CASES[f"top={v!r}"] = (lambda d, v=v: v, "refuse")
for v in [None, 1, "x", [], [1]]:
    COLL_CASES[f"collections={v!r}"] = (_cset("collections", value=v), "refuse")
for v in [None, 1, "x", [], [1]]:
    COLL_CASES[f"collection entry={v!r}"] = (_cset("collections", "default", value=v), "refuse")
for field, values in {
    "name": [None, 1, [], {}],
    "include_regex": [1, "x", [1], [None], ["("], [{}]],
    "tensor_names": [1, "x", [1], [None], [[]]],
    "reduction_config": [1, "x", [], {"reductions": 5}, {"reductions": ["nosuch"]}, {"save_raw_tensor": "x"}],
    "save_config": [1, "x", [], {"TRAIN": 5}, {"TRAIN": {"save_interval": "x"}}, {"TRAIN": {"save_interval": -1}}],
    "save_histogram": ["x", 1.5, []],
}.items():
    for v in values:
        COLL_CASES[f"{field}={v!r}"] = (_cset("collections", "default", field, value=v), "refuse")
for v in [None, 1, "x", [], [1]]:
    COLL_CASES[f"_meta={v!r}"] = (_cset("_meta", value=v), "refuse")
for v in [None, "x", "2", 1.5, 1e308, 2**63, 2**64 - 1, -1, 0, True, [], {}]:
    COLL_CASES[f"num_workers={v!r}"] = (_cset("_meta", "num_workers", value=v), "refuse")
COLL_CASES["extra key"] = (_cset("extra", value=1), "refuse")


@pytest.mark.parametrize("case", list(COLL_CASES))
def test_hostile_collections_field(trial_copy, case):
    edit, outcome = COLL_CASES[case]
    path = _coll_path(trial_copy)
    doc = json.loads(path.read_text())
    new = edit(doc)
    path.write_text(json.dumps(doc if new is None and not case.startswith("top=") else new))
    COUNTS["collections fields"] = COUNTS.get("collections fields", 0) + 1
    if outcome == "refuse":
        with pytest.raises(IndexReaderException) as ei:
            create_trial(str(trial_copy))
        assert str(path) in str(ei.value)
        assert len(str(ei.value)) < 2000
    else:
        trial = create_trial(str(trial_copy))
        _assert_others_readable(trial, skip=())


@pytest.mark.parametrize("junk", [b"", b"{", b"\xff", b"[" * 100_000])
def test_hostile_collections_bytes(trial_copy, junk):
    path = _coll_path(trial_copy)
    path.write_bytes(junk)
    COUNTS["collections bytes"] = COUNTS.get("collections bytes", 0) + 1
    with pytest.raises(IndexReaderException) as ei:
        create_trial(str(trial_copy))
    assert str(path) in str(ei.value)


def test_no_collections_file_names_the_folder(trial_copy):
    shutil.rmtree(trial_copy / "collections")
    with pytest.raises(MissingCollectionFiles) as ei:
        create_trial(str(trial_copy))
    assert str(trial_copy) in str(ei.value)


def test_count_of_hostile_inputs():
    """Runs last in this module: prints the count RELIABILITY.md quotes (when the module ran whole)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        pytest.skip("the count needs the whole module in one process (pytest -n splits it)")
    total = sum(COUNTS.values())
    print(f"\nhostile inputs tried: {total} {dict(sorted(COUNTS.items()))}")
    if len(COUNTS) == 6:  # every group ran
        assert total == len(INDEX_CASES) + 9 + len(EVENT_CASES) + 1 + 6 + 1 + len(COLL_CASES) + 4
