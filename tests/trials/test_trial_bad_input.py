"""Damaged or odd trial folders (local, and the same damage to objects on S3): clear exceptions
naming the file or object, every other step still readable."""

import json
import os

import numpy as np
import pytest

import trialgen as tg
from smdebug.core.locations import event_key, index_key
from smdebug.exceptions import EventFileCorrupt, IndexReaderException, MissingCollectionFiles, ObjectNotFound
from smdebug.trials import create_trial

STEPS = [0, 1, 2, 3, 4]
BAD = 2


def _job(root, steps=STEPS, end=True):
    tg.write_collections(root, ["worker_0"])
    for s in steps:
        tg.write_step(root, s, "worker_0", ["a", "b"])
    if end:
        tg.end_job(root)
    return root.url


def _records(root, step):
    """[(start, length)] of the records of a step's event file, from its index."""
    idx = json.loads(root.read(index_key(step, "worker_0")))
    return {e["tensorname"]: (e["start_idx"], e["length"]) for e in idx["tensor_payload"]}


def _check_others(trial, bad_step, names=("a", "b")):
    for s in STEPS:
        if s == bad_step:
            continue
        for n in names:
            np.testing.assert_array_equal(trial.tensor(n).value(s), tg.value(n, s, "worker_0"))


# ---------------------------------------------------------------------------- event files
@pytest.mark.parametrize("damage", ["truncate_b", "truncate_a", "length_crc_b", "footer_b", "length_crc_a", "footer_a"])
def test_corrupt_event_file(root, damage):
    path = _job(root)
    ev_key = event_key(BAD, "worker_0")
    ev = tg.event_file(root, BAD)
    recs = _records(root, BAD)
    which = damage[-1]
    start, length = recs[which]
    if damage.startswith("truncate"):
        root.truncate(ev_key, start + length // 2)
    elif damage.startswith("length_crc"):
        root.flip_byte(ev_key, start + 9)
    else:
        root.flip_byte(ev_key, start + length - 1)
    trial = create_trial(path)
    assert trial.steps() == STEPS
    assert trial.tensor_names(step=BAD) == ["a", "b"]
    with pytest.raises(EventFileCorrupt) as ei:
        trial.tensor(which).value(BAD)
    assert ev in str(ei.value)
    assert isinstance(ei.value, ValueError)
    with pytest.raises(EventFileCorrupt):
        trial.tensor(which).reduction_value(BAD, "mean")
    other = "a" if which == "b" else "b"
    if which == "b":  # the record before the damage is intact
        np.testing.assert_array_equal(trial.tensor(other).value(BAD), tg.value(other, BAD, "worker_0"))
    elif damage != "truncate_a":  # damage confined to record a
        np.testing.assert_array_equal(trial.tensor(other).value(BAD), tg.value(other, BAD, "worker_0"))
    _check_others(trial, BAD)
    with pytest.raises(EventFileCorrupt):  # values() over all steps reports the damage too
        trial.tensor(which).values()


def test_event_file_deleted_after_index(root):
    path = _job(root)
    ev = tg.event_file(root, BAD)
    root.delete(event_key(BAD, "worker_0"))
    assert not root.exists(event_key(BAD, "worker_0"))
    trial = create_trial(path)
    assert trial.steps() == STEPS
    with pytest.raises(EventFileCorrupt) as ei:
        trial.tensor("a").value(BAD)
    msg = str(ei.value)
    assert ev in msg
    assert "missing" in msg
    _check_others(trial, BAD)


# ---------------------------------------------------------------------------- index files
def _rewrite_index(root, step, edit):
    """Replace the index of (step, worker_0) by ``edit(old bytes)``; its name as messages print it."""
    return root.rewrite(index_key(step, "worker_0"), edit)


def _set_event_name(name):
    def edit(data):
        d = json.loads(data)
        d["meta"]["event_file_name"] = name
        return json.dumps(d).encode()

    return edit


def _drop_meta(data):
    d = json.loads(data)
    del d["meta"]
    return json.dumps(d).encode()


def _drop_payloads(data):
    d = json.loads(data)
    del d["tensor_payload"], d["shape_payload"]
    return json.dumps(d).encode()


INDEX_DAMAGE = {
    "not_json": lambda data: b"{not json at all",
    "truncated_json": lambda data: data[: len(data) // 2],
    "empty": lambda data: b"",
    "json_list": lambda data: b"[1, 2, 3]",
    "no_meta": _drop_meta,
    "no_payloads": _drop_payloads,
    "parent_path": _set_event_name("../../../etc/passwd"),
    "absolute_path": _set_event_name("/etc/passwd"),
    "sneaky_parent": _set_event_name("events/../../outside.tfevents"),
}


@pytest.mark.parametrize("end", [True, False])
@pytest.mark.parametrize("damage", sorted(INDEX_DAMAGE))
def test_bad_index_file(root, damage, end):
    path = _job(root, end=end)
    bad_file = _rewrite_index(root, BAD, INDEX_DAMAGE[damage])
    trial = create_trial(path)
    key = index_key(BAD, "worker_0")
    assert list(trial.bad_index_files) == [key]
    assert bad_file in trial.bad_index_files[key]
    assert trial.steps(show_incomplete_steps=True) == [s for s in STEPS if s != BAD]
    assert trial.steps() == [s for s in STEPS if s != BAD]
    assert trial.tensor_names() == ["a", "b"]
    assert trial.tensor("a").steps() == [s for s in STEPS if s != BAD]
    with pytest.raises(IndexReaderException) as ei:
        trial.tensor("a").value(BAD)
    assert bad_file in str(ei.value)
    _check_others(trial, BAD)
    assert list(trial.bad_index_files) == [key]


def test_bad_index_file_fixed_later_is_read(root):
    """An index seen half-written is read again on the next refresh."""
    path = _job(root, end=False)
    key = index_key(BAD, "worker_0")
    good = root.read(key)
    root.write(key, good[:10])
    trial = create_trial(path)
    assert trial.steps(show_incomplete_steps=True) == [0, 1, 3, 4]
    root.write(key, good)
    assert trial.steps() == STEPS
    assert trial.bad_index_files == {}
    np.testing.assert_array_equal(trial.tensor("b").value(BAD), tg.value("b", BAD, "worker_0"))


# ---------------------------------------------------------------------------- stray files
def test_stray_tmp_files_ignored(root):
    """Half-written ``.tmp`` files (local) or ``.tmp`` objects (S3) are not index or event files."""
    path = _job(root, steps=[0, 1, 2], end=False)
    root.write(
        "index/000000000/000000000003_worker_0.json.tmp",
        '{"meta": {"mode": "GLOBAL", "mode_step": 3, "event_file_name": "x"}, "tensor_payload": [',
    )
    root.write("events/000000000003/x.tfevents.tmp", b"\x00garbage")
    root.write("events/000000000003/000000000003_worker_0.tfevents.tmp", b"\x00garbage")
    # a stray temp file next to a real step does not disturb it
    root.write(index_key(1, "worker_0") + ".tmp", "{")
    assert root.exists("index/000000000/000000000003_worker_0.json.tmp")
    trial = create_trial(path)
    assert trial.steps() == [0, 1, 2]
    assert trial.steps(show_incomplete_steps=True) == [0, 1, 2]
    assert trial.bad_index_files == {}
    assert trial.workers() == ["worker_0"]
    np.testing.assert_array_equal(trial.tensor("a").value(1), tg.value("a", 1, "worker_0"))
    # once the real files of step 3 arrive, the step is listed
    tg.write_step(path, 3, "worker_0", ["a"])
    assert trial.steps() == [0, 1, 2, 3]
    np.testing.assert_array_equal(trial.tensor("a").value(3), tg.value("a", 3, "worker_0"))
    assert trial.bad_index_files == {}


# ---------------------------------------------------------------------------- no trial there
def test_empty_folder(root):
    """An empty folder; on S3 a prefix with no objects under it."""
    empty = root / "empty_job"
    empty.mkdir()
    (root / "empty_job_sibling").write("collections/000000000/worker_0_collections.json", b"{}")
    assert empty.keys() == []
    with pytest.raises(MissingCollectionFiles) as ei:
        create_trial(empty.url)
    assert empty.url in str(ei.value)


def test_folder_without_collections(root):
    path = root / "no_coll"
    tg.write_step(path, 0, "worker_0", ["a"])
    with pytest.raises(MissingCollectionFiles) as ei:
        create_trial(path.url)
    assert path.url in str(ei.value)


def test_missing_path(root):
    """A folder that does not exist; on S3 a prefix no object has ever been written under."""
    missing = root / "does" / "not" / "exist"
    with pytest.raises(MissingCollectionFiles) as ei:
        create_trial(missing.url)
    assert missing.url in str(ei.value)
    with pytest.raises(MissingCollectionFiles) as ei:
        create_trial(out_dir=missing.url)
    assert missing.url in str(ei.value)
    if root.is_s3:  # and under a bucket that does not exist at all: said so, not "no collections file"
        no_bucket = f"s3://smd-no-such-bucket-{os.getpid()}/does/not/exist"
        with pytest.raises(ObjectNotFound) as ei:
            create_trial(no_bucket)
        assert no_bucket in str(ei.value)
        assert f"the bucket 'smd-no-such-bucket-{os.getpid()}' does not exist" in str(ei.value)


def test_bad_index_file_of_one_worker(root):
    """Two workers, worker_0's index of step 2 is not JSON: worker_1's data of that step stays
    readable, and asking for worker_0's value at that step names the bad index file."""
    workers = tg.workers(2)
    tg.write_collections(root, workers)
    for s in STEPS:
        for w in workers:
            tg.write_step(root, s, w, ["a"])
    tg.end_job(root)
    bad_file = _rewrite_index(root, BAD, INDEX_DAMAGE["not_json"])
    trial = create_trial(root.url)
    assert list(trial.bad_index_files) == [index_key(BAD, "worker_0")]
    assert trial.steps() == STEPS
    a = trial.tensor("a")
    assert a.workers(BAD) == ["worker_1"]
    np.testing.assert_array_equal(a.value(BAD, worker="worker_1"), tg.value("a", BAD, "worker_1"))
    for s in STEPS:
        if s != BAD:
            for w in workers:
                np.testing.assert_array_equal(a.value(s, worker=w), tg.value("a", s, w))
    with pytest.raises(IndexReaderException) as ei:
        a.value(BAD, worker="worker_0")
    assert bad_file in str(ei.value)


def test_unreadable_step_of_a_mode_and_in_show_is_named_not_unsaved(root, capsys):
    """A TRAIN job whose index file of step 2 is not JSON: asking for TRAIN step 2 (the trial
    cannot map it: its mode step is in that file) or `smdebug show` at step 2 names the unreadable
    file instead of saying the step "was not saved"; a step past the end is still "not saved"."""
    from smdebug.cli import main
    from smdebug.core.modes import ModeKeys
    from smdebug.exceptions import StepUnavailable

    tg.write_collections(root, ["worker_0"])
    for s in STEPS:
        tg.write_step(root, s, "worker_0", ["a"], mode=ModeKeys.TRAIN, mode_step=s)
    tg.end_job(root)
    bad_file = _rewrite_index(root, BAD, INDEX_DAMAGE["truncated_json"])
    trial = create_trial(root.url)
    with pytest.raises(IndexReaderException) as ei:
        trial.tensor("a").value(BAD, mode=ModeKeys.TRAIN)
    assert bad_file in str(ei.value) and "cannot be read" in str(ei.value)
    with pytest.raises(StepUnavailable):  # after the last TRAIN step: that file cannot hold it
        trial.tensor("a").value(9, mode=ModeKeys.TRAIN)
    for args in ([], ["--mode", "train"]):
        assert main(["show", root.url, "a", "--step", str(BAD), *args]) == 2
        err = capsys.readouterr().err
        assert "cannot be read (an index file is unreadable)" in err and bad_file in err and "not saved" not in err
    assert main(["show", root.url, "a", "--step", "9"]) == 2
    assert "was not saved at GLOBAL step 9" in capsys.readouterr().err


def test_reduction_not_saved_names_reduction_and_tensor(root):
    """reduction_value of a reduction that was not saved, of a tensor saved without its raw value:
    the message names the reduction and the tensor (not 'Value for tensor mean')."""
    from smdebug.exceptions import TensorUnavailableForStep

    tg.write_collections(root, ["worker_0"])
    for s in STEPS:
        tg.write_step(root, s, "worker_0", ["b"], reductions={("a", "max", False): float(s)})
    tg.end_job(root)
    t = create_trial(root.url).tensor("a")
    assert t.reduction_value(3, "max") == 3.0
    for abs_, shown in ((False, "mean"), (True, "abs_mean")):
        with pytest.raises(TensorUnavailableForStep) as ei:
            t.reduction_value(3, "mean", abs=abs_)
        msg = str(ei.value)
        assert f"Reduction {shown} of tensor a is not available for step 3" in msg, msg
        assert ei.value.tname == "a" and ei.value.reduction == "mean" and ei.value.abs is abs_
