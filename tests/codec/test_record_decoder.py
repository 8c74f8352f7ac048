"""The one decoder of tensor records (codec/record.py): its short path and learnt templates agree
with the general Event decoder on every record, whatever the bytes; corruption is refused by name."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smdebug.codec import record as record_module
from smdebug.codec.event import decode_event, encode_tensor_event, mode_metadata
from smdebug.codec.record import RecordDecoder, decode_tensor_record
from smdebug.codec.tfrecord import frame, iter_records
from smdebug.exceptions import EventFileCorrupt
from smdebug.modes import ModeKeys
from smdtest import FIXTURES

WHERE = "fuzz/events.tfevents"
SRC = Path(record_module.__file__).resolve().parents[1]  # src/smdebug


def _general(payload: bytes) -> np.ndarray:
    for v in decode_event(payload).values:
        if v.tensor is not None:
            return v.tensor
    raise EventFileCorrupt("record holds no tensor")


def _records(tensors, step, mode=ModeKeys.TRAIN, mode_step=3) -> bytes:
    return b"".join(frame(encode_tensor_event(n, a, step, mode_metadata(mode, mode_step), 1.5)) for n, a in tensors)


TENSORS = [
    ("a/w", np.arange(12, dtype=np.float32).reshape(4, 3)),
    ("a/b", np.array([1.5, -2.0], dtype=np.float64)),
    ("scalar", np.array(7, dtype=np.int64)),
    ("empty", np.zeros((0, 3), dtype=np.float32)),
    ("flags", np.array([True, False])),
]


def _bump(a: np.ndarray) -> np.ndarray:
    return ~a if a.dtype == bool else (a + 1).astype(a.dtype)


def _decode_all(dec: RecordDecoder, buf: bytes) -> list:
    out, off = [], 0
    for i, (_o, payload) in enumerate(iter_records(buf, WHERE)):
        length = len(payload) + 16
        out.append(dec.decode(buf, off, length, ("layout", i), WHERE, off))
        off += length
    return out


@pytest.mark.parametrize("step", [0, 1, 300, 2**40])
def test_learnt_templates_decode_what_the_general_decoder_decodes(step):
    dec = RecordDecoder()
    first = _decode_all(dec, _records(TENSORS, 5))
    assert dec.learnt == len(TENSORS)  # one template per (layout, position)
    buf = _records([(n, _bump(a)) for n, a in TENSORS], step, mode_step=step)
    again = _decode_all(dec, buf)
    for (_n, a), got0, got in zip(TENSORS, first, again):
        np.testing.assert_array_equal(got0, a)
        np.testing.assert_array_equal(got, _bump(a))
        assert got.dtype == a.dtype.newbyteorder("<") and got.shape == a.shape
    for (_o, payload), got in zip(iter_records(buf), again):
        np.testing.assert_array_equal(got, _general(payload))


def test_a_template_of_another_shape_is_not_used():
    dec = RecordDecoder()
    _decode_all(dec, _records([("w", np.ones((2, 3), np.float32))], 1))
    (got,) = _decode_all(dec, _records([("w", np.ones((3, 2), np.float32))], 2))
    assert got.shape == (3, 2)
    (got,) = _decode_all(dec, _records([("w", np.ones(6, np.float16))], 3))
    assert got.dtype == np.float16 and got.shape == (6,)


def test_records_of_smdebug_1_0_34_named_dimensions_and_strings():
    data = (FIXTURES / "multi_worker_modes/events/000000000000/000000000000_worker_0.tfevents").read_bytes()
    dec, n = RecordDecoder(), 0
    for start, payload in iter_records(data, WHERE):
        got = dec.decode(data, start, len(payload) + 16, ("l", n), WHERE, start)
        np.testing.assert_array_equal(got, decode_tensor_record(payload))
        n += 1
    assert n and dec.learnt
    strings = frame(encode_tensor_event("s", np.array(["a", "bé"]), 1, b"", 1.0))
    assert RecordDecoder().decode(strings, 0, len(strings), "s", WHERE, 0).tolist() == ["a", "bé"]


def test_a_bad_header_is_refused_naming_the_file_and_the_offset_in_it():
    buf = bytearray(_records(TENSORS[:2], 1))
    dec = RecordDecoder()
    _decode_all(dec, bytes(buf))
    second = len(frame(encode_tensor_event(*TENSORS[0], 1, mode_metadata(ModeKeys.TRAIN, 3), 1.5)))
    buf[second + 9] ^= 0xFF  # the CRC of the second record's length
    with pytest.raises(EventFileCorrupt, match=rf"{WHERE}: bad length CRC in record at byte {1000 + second}"):
        dec.decode(bytes(buf[second:]), 0, len(buf) - second, ("layout", 1), WHERE, 1000 + second)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_records_decode_as_the_general_decoder_says_or_are_refused(data):
    name, arr = data.draw(st.sampled_from(TENSORS))
    good = frame(encode_tensor_event(name, arr, 5, mode_metadata(ModeKeys.TRAIN, 3), 1.5))
    dec = RecordDecoder()
    dec.decode(good, 0, len(good), "k", WHERE, 0)  # learns the template
    buf = bytearray(good)
    for _ in range(data.draw(st.integers(1, 3))):
        buf[data.draw(st.integers(12, len(buf) - 5))] = data.draw(st.integers(0, 255))  # the payload
    buf = bytes(buf)
    payload = buf[12:-4]
    try:
        want = _general(payload)
    except EventFileCorrupt:
        want = None
    try:
        got = dec.decode(buf, 0, len(buf), "k", WHERE, 0)
    except EventFileCorrupt as exc:
        assert want is None, f"refused what the general decoder reads: {exc}"
        return
    assert want is not None, "decoded what the general decoder refuses"
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()  # NaN payloads too


def _imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def test_one_decoder_of_records():
    """Outside codec/, nothing parses records: no module imports the framing or protobuf decoders
    (they are codec/record.py's to use), nor reads arrays out of bytes itself."""
    low_level = {
        "smdebug.codec.tfrecord.unframe",
        "smdebug.codec.tfrecord.iter_records",
        "smdebug.codec.event.decode_event",
        "smdebug.codec.tensor.decode_tensor",
        "smdebug.codec.wire",
    }
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith("codec/") or rel.startswith("profiler/"):
            continue  # the profiler's files are JSON, not records (its readers view pyarrow buffers)
        used = {i for i in _imports(path) if any(i == m or i.startswith(m + ".") for m in low_level)}
        if used or "frombuffer" in path.read_text():
            offenders.append((rel, sorted(used)))
    assert not offenders
    in_codec = [p.name for p in (SRC / "codec").glob("*.py") if "def decode_tensor_record" in p.read_text()]
    assert in_codec == ["record.py"]
