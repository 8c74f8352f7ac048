"""Every documented exception the reader and the decoders raise, pinned to its cause: the exact
type (never a confusable one: StepUnavailable for TensorUnavailableForStep, IndexReaderException
for EventFileCorrupt, ...) and what the message says. tools/mutate.py checks that each raise is
pinned by some test.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from smdebug.codec.event import decode_event, encode_summary_event, scalar_value
from smdebug.codec.record import decode_tensor_record
from smdebug.codec.tensor import dtype_code, to_numpy
from smdebug.codec.tfrecord import frame, unframe
from smdebug.codec.wire import I32, I64, LEN, VARINT, double, key, ld, varint
from smdebug.core.collection_manager import CollectionManager
from smdebug.core.locations import END_OF_JOB, event_key, index_key
from smdebug.core.modes import ModeKeys
from smdebug.core.writer import FileWriter
from smdebug.exceptions import (
    EventFileCorrupt,
    IndexReaderException,
    InvalidWorker,
    NoMoreData,
    ObjectNotFound,
    ShapeUnavailableForStep,
    SMDebugNotImplementedError,
    SMDebugTypeError,
    StepNotYetAvailable,
    StepUnavailable,
    StorageError,
    TensorUnavailableForStep,
)
from smdebug.trials import create_trial


def _exactly(exc_type, match: str):
    """pytest.raises that also refuses subclasses and the usual confusions."""
    return pytest.raises(exc_type, match=match)


# ----------------------------------------------------------------------------- protobuf wire
def _event_with(summary_value: bytes) -> bytes:
    return double(1, 1.0) + ld(5, ld(1, summary_value))


def _tensor(proto: bytes) -> bytes:
    return _event_with(ld(1, b"t") + ld(8, proto))


def _dims(*dims: int) -> bytes:
    return ld(2, b"".join(ld(2, key(1, VARINT) + varint(d)) for d in dims))


WIRE = {
    "truncated varint": b"\x08\x80",
    "varint longer than 10 bytes": b"\x08" + b"\xff" * 11,
    "length-delimited field runs past its message": key(1, LEN) + varint(10) + b"ab",
    "truncated fixed64 field": key(1, I64) + b"\x00" * 3,
    "truncated fixed32 field": key(1, I32) + b"\x00",
    "unsupported protobuf wire type 3": bytes([(1 << 3) | 3]),
    "protobuf field number 0": b"\x00\x00",
}


@pytest.mark.parametrize("message", list(WIRE))
def test_wire_defects(message):
    with _exactly(EventFileCorrupt, message):
        decode_event(WIRE[message])


# ----------------------------------------------------------------------------- TensorProto
TENSORS = {
    "unsupported TensorProto dtype code 99": key(1, VARINT) + varint(99) + _dims(1) + key(7, VARINT) + varint(5),
    "TensorProto with dtype 0 holds numeric values": _dims(1) + ld(5, b"\x00" * 4),
    "TensorProto has 2 strings for shape [3]": _dims(3) + ld(8, b"a") + ld(8, b"b"),
    "tensor_content holds 4 bytes, shape [2]": key(1, VARINT) + varint(1) + _dims(2) + ld(4, b"\x00" * 4),
    "TensorProto has 2 values for shape [5]": key(1, VARINT)
    + varint(3)
    + _dims(5)
    + key(7, VARINT)
    + varint(1)
    + key(7, VARINT)
    + varint(2),
    "TensorProto has 3 values for shape [2]": key(1, VARINT)
    + varint(3)
    + _dims(2)
    + b"".join(key(7, VARINT) + varint(v) for v in (1, 2, 3)),
    "packed float_val is not a whole number of values": key(1, VARINT) + varint(1) + _dims(1) + ld(5, b"\x00" * 3),
    "TensorProto has a negative dimension": key(1, VARINT) + varint(1) + _dims(2**64 - 1) + ld(4, b""),
    "bad TensorProto values": key(1, VARINT) + varint(19) + _dims(1) + key(13, VARINT) + varint(70000),
}


@pytest.mark.parametrize("message", list(TENSORS))
def test_tensor_proto_defects(message):
    with _exactly(EventFileCorrupt, message.replace("[", r"\[").replace("]", r"\]")):
        decode_tensor_record(_tensor(TENSORS[message]))


def test_bad_mode_metadata():
    meta = ld(1, ld(1, b"mode") + ld(2, b"seven"))
    with _exactly(EventFileCorrupt, "bad mode metadata"):
        decode_event(_event_with(ld(1, b"t") + ld(9, meta)))
    meta = ld(1, ld(1, b"mode_step") + ld(2, b"1.5"))
    with _exactly(EventFileCorrupt, "bad mode_step metadata"):
        decode_event(_event_with(ld(1, b"t") + ld(9, meta)))


def test_histogram_buckets_not_whole_doubles():
    with _exactly(EventFileCorrupt, "histogram buckets are not a whole number of doubles"):
        decode_event(_event_with(ld(1, b"h") + ld(5, ld(6, b"\x00" * 7))))


def test_record_without_a_tensor():
    with _exactly(EventFileCorrupt, "record holds no tensor"):
        decode_tensor_record(encode_summary_event([scalar_value("lr", 0.1)], 1, 1.0))


def test_values_that_cannot_be_saved():
    with _exactly(SMDebugTypeError, "numpy dtype datetime64\\[s\\] cannot be saved"):
        dtype_code(np.dtype("datetime64[s]"))
    with _exactly(SMDebugTypeError, "cannot save a value of type object"):
        to_numpy(object())


# ----------------------------------------------------------------------------- TFRecord framing
_REC = frame(b"payload")

FRAMES = {
    "truncated record at byte 0 \\(header needs 12 bytes": _REC[:5],
    "bad length CRC in record at byte 0": _REC[:8] + b"\x00\x00\x00\x00" + _REC[12:],
    "truncated record at byte 0 \\(declares 7 payload bytes": _REC[:-2],
    "bad payload CRC in record at byte 0": _REC[:-4] + b"\x00\x01\x02\x03",
}


@pytest.mark.parametrize("message", list(FRAMES))
def test_framing_defects(message):
    with _exactly(EventFileCorrupt, "f.tfevents: " + message):
        unframe(FRAMES[message], 0, "f.tfevents")


# ----------------------------------------------------------------------------- the reader
W = ["worker_0", "worker_1"]


def _val(step: int, worker: str) -> np.ndarray:
    return np.full((2,), 10 * step + W.index(worker), np.float32)


def _trial_dir(root, steps_by_worker: dict, ended: bool, extra=None) -> str:
    cm = CollectionManager()
    cm.add("default")
    cm.set_num_workers(len(W))
    for w in W:
        cm.export(str(root), f"{w}_collections.json")
    for w, steps in steps_by_worker.items():
        for s in steps:
            with FileWriter(trial_dir=str(root), step=s, worker=w) as fw:
                fw.write_tensor(tdata=_val(s, w), tname="t", mode=ModeKeys.TRAIN, mode_step=s)
                if extra:
                    extra(fw, s)
    if ended:
        (root / END_OF_JOB).write_bytes(b"")
    return str(root)


def test_worker_missing_while_the_step_is_incomplete(tmp_path):
    url = _trial_dir(tmp_path, {"worker_0": [0, 1], "worker_1": [0]}, ended=False)
    t = create_trial(url).tensor("t")
    with _exactly(StepNotYetAvailable, "1"):
        t.value(1, worker="worker_1")  # worker_1 may still write step 1
    with _exactly(InvalidWorker, "worker_7"):
        t.value(0, worker="worker_7")  # step 0 is complete: worker_7 never will


def test_values_and_shapes_of_a_tensor_without_raw_values(tmp_path):
    def extra(fw, s):
        if s == 1:
            fw.write_shape("u", (3,), mode=ModeKeys.TRAIN, mode_step=s)
        fw.write_tensor(
            tdata=np.array([1.5], np.float32), tname="smdebug/reductions/max/v", mode=ModeKeys.TRAIN, mode_step=s
        )
        fw.write_tensor(
            tdata=np.array([7.0], np.float32), tname="u" if s == 0 else "other", mode=ModeKeys.TRAIN, mode_step=s
        )

    url = _trial_dir(tmp_path, {w: [0, 1] for w in W}, ended=True, extra=extra)
    trial = create_trial(url)
    u = trial.tensor("u")
    np.testing.assert_array_equal(u.value(0), [7.0])
    with _exactly(TensorUnavailableForStep, "u"):
        u.values()  # step 1 holds only u's shape
    v = trial.tensor("v")
    assert v.reduction_value(0, "max") == pytest.approx(1.5)
    with _exactly(ShapeUnavailableForStep, "v"):
        v.shape(0)
    with _exactly(ShapeUnavailableForStep, "v"):
        v.shapes()
    with _exactly(TensorUnavailableForStep, "min"):
        v.reduction_value(0, "min")
    with _exactly(SMDebugNotImplementedError, "step method has been removed"):
        v.step(0)


def test_wait_for_steps(tmp_path):
    url = _trial_dir(tmp_path / "running", {w: [0, 2] for w in W}, ended=False)
    running = create_trial(url)
    with _exactly(StepUnavailable, "Step 1 of mode GLOBAL"):
        running.wait_for_steps([1])  # step 2 is complete: step 1 will never come
    with pytest.raises(TimeoutError, match="step 9"):
        running.wait_for_steps([9], timeout=0.05)
    running.wait_for_steps([0, 2])
    url = _trial_dir(tmp_path / "ended", {w: [0, 2] for w in W}, ended=True)
    ended = create_trial(url)
    with _exactly(StepUnavailable, "Step 1 of mode GLOBAL"):
        ended.wait_for_steps([1])
    with pytest.raises(NoMoreData) as ei:
        ended.wait_for_steps([5])
    assert not isinstance(ei.value, StepUnavailable)


def test_missing_event_file_names_both_files(tmp_path):
    url = _trial_dir(tmp_path, {w: [0, 1] for w in W}, ended=True)
    (tmp_path / event_key(1, "worker_0")).unlink()
    t = create_trial(url).tensor("t")
    with pytest.raises(EventFileCorrupt) as ei:
        t.value(1)
    assert not isinstance(ei.value, IndexReaderException)
    msg = str(ei.value)
    assert (
        f"{tmp_path / event_key(1, 'worker_0')} is missing" in msg and str(tmp_path / index_key(1, "worker_0")) in msg
    )
    np.testing.assert_array_equal(t.value(1, worker="worker_1"), _val(1, "worker_1"))


def test_corrupt_record_names_the_event_file(tmp_path):
    url = _trial_dir(tmp_path, {w: [0] for w in W}, ended=True)
    path = tmp_path / event_key(0, "worker_0")
    length = json.loads((tmp_path / index_key(0, "worker_0")).read_text())["tensor_payload"][0]["length"]
    data = bytearray(path.read_bytes())
    data[length - 4 : length] = b"\x00\x01\x02\x03"  # the record's footer: neither smdebug's nor the CRC
    path.write_bytes(bytes(data))
    with pytest.raises(EventFileCorrupt, match=f"{path}.*record at byte 0") as ei:
        create_trial(url).tensor("t").value(0)
    assert not isinstance(ei.value, IndexReaderException)


def test_bad_record_location_is_an_index_error(tmp_path):
    url = _trial_dir(tmp_path, {w: [0] for w in W}, ended=True)
    ipath = tmp_path / index_key(0, "worker_0")
    doc = json.loads(ipath.read_text())
    doc["tensor_payload"][0]["start_idx"] = -1
    ipath.write_text(json.dumps(doc))
    with pytest.raises(IndexReaderException, match=f"{ipath}: bad record location start_idx=-1") as ei:
        create_trial(url).tensor("t").value(0)
    assert not isinstance(ei.value, EventFileCorrupt)


def test_an_index_file_that_cannot_be_read_is_a_storage_error(tmp_path, monkeypatch):
    """Not a missing file (skipped: removed between listing and reading) but one the storage cannot
    read: the error reaches the user, naming the file, rather than the step silently missing."""
    import socket

    url = _trial_dir(tmp_path, {w: [0] for w in W}, ended=True)
    monkeypatch.chdir(tmp_path)  # a socket's path must be short: bind it relative to the trial
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(index_key(1, "worker_0"))  # listed like a file, but open() fails with ENXIO
        with pytest.raises(StorageError, match=f"cannot read {tmp_path / index_key(1, 'worker_0')}") as ei:
            create_trial(url)
    assert not isinstance(ei.value, ObjectNotFound)


def test_collection_argument_of_the_wrong_type(tmp_path):
    trial = create_trial(_trial_dir(tmp_path, {w: [0] for w in W}, ended=True))
    assert trial.tensor_names(collection="default") == []
    with pytest.raises(TypeError, match="Invalid argument type for collection int"):
        trial.tensor_names(collection=5)
