"""Fuzzing the decoders: any input either decodes or raises the one documented exception type.

Record and protobuf parsers may raise only EventFileCorrupt; the index parser only
IndexReaderException. Anything else (IndexError, numpy errors, OverflowError, ...) is a bug.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smdebug.codec.event import (
    decode_event,
    encode_summary_event,
    encode_tensor_event,
    histogram_value,
    mode_metadata,
    scalar_value,
)
from smdebug.codec.index import decode_index
from smdebug.codec.record import decode_tensor_record
from smdebug.codec.tensor import encode_tensor
from smdebug.codec.tfrecord import frame, iter_records, unframe
from smdebug.codec.wire import I32, I64, LEN, VARINT, double, key, ld, varint
from smdebug.core.modes import ModeKeys
from smdebug.exceptions import EventFileCorrupt, IndexReaderException
from smdtest import FIXTURES

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

WHERE = "fuzz/events/000000000000/000000000000_worker_0.tfevents"

_PAYLOADS = [
    encode_tensor_event(
        "grad/w0", np.arange(12, dtype=np.float32).reshape(4, 3), 7, mode_metadata(ModeKeys.TRAIN, 3), 1.0
    ),
    encode_tensor_event("s", np.array(["a", "bé"]), 1, mode_metadata(ModeKeys.EVAL, 0), 1.0),
    encode_tensor_event("b", np.array([True, False]), 1, b"", 1.0),
    encode_summary_event(
        [scalar_value("lr", 0.1), histogram_value("h", np.arange(5.0), [1.0, 2.0], [3.0, 4.0])], 4, 1.0
    ),
]
_GOLDEN = (FIXTURES / "multi_worker_modes/events/000000000000/000000000000_worker_0.tfevents").read_bytes()
_RECORDS = [frame(p) for p in _PAYLOADS] + [_GOLDEN[:153]]
_FILE = b"".join(_RECORDS)
_INDEX = (FIXTURES / "multi_worker_modes/index/000000000/000000000000_worker_0.json").read_bytes()


def _decode_record_bytes(data: bytes) -> None:
    """Everything a reader does with the bytes of an event file."""
    try:
        records = list(iter_records(data, where=WHERE))
    except EventFileCorrupt as exc:
        assert WHERE in str(exc)  # framing errors name the file
        records = []
    for _, payload in records:
        _decode_payload(payload)
    try:
        unframe(data, 0, WHERE)
    except EventFileCorrupt as exc:
        assert WHERE in str(exc)


def _decode_payload(payload: bytes) -> None:
    try:
        event = decode_event(payload)
    except EventFileCorrupt:
        pass
    else:  # what is accepted is well formed
        for v in event.values:
            assert isinstance(v.tag, str)
            assert v.tensor is None or isinstance(v.tensor, np.ndarray)
    try:
        arr = decode_tensor_record(payload)
    except EventFileCorrupt:
        pass
    else:
        assert isinstance(arr, np.ndarray) and all(type(d) is int and d >= 0 for d in arr.shape)


def _decode_index(data: bytes):
    """The parsed index, checked to be well formed, or None when refused (naming the file)."""
    try:
        parsed = decode_index(data, "fuzz/index.json")
    except IndexReaderException as exc:
        assert "fuzz/index.json" in str(exc)
        assert len(str(exc)) < 1000  # a hostile file cannot make the message huge
        return None
    assert isinstance(parsed.mode, ModeKeys)
    assert type(parsed.mode_step) is int and -(2**63) <= parsed.mode_step < 2**63
    assert parsed.event_file_name is None or (
        isinstance(parsed.event_file_name, str)
        and not parsed.event_file_name.startswith(("/", "../"))
        and "\0" not in parsed.event_file_name
    )
    for name, (shape, original) in parsed.shapes.items():
        assert isinstance(name, str) and isinstance(original, str)
        assert all(type(d) is int and 0 <= d < 2**63 for d in shape)
    return parsed


@st.composite
def mutated(draw, base: bytes):
    """A valid buffer with a few byte flips, insertions, deletions, and maybe truncated."""
    buf = bytearray(base)
    for _ in range(draw(st.integers(0, 6))):
        op = draw(st.sampled_from(["flip", "set", "insert", "delete"]))
        pos = draw(st.integers(0, max(len(buf) - 1, 0)))
        if op == "flip" and buf:
            buf[pos] ^= 1 << draw(st.integers(0, 7))
        elif op == "set" and buf:
            buf[pos] = draw(st.sampled_from([0x00, 0x7F, 0x80, 0xFF, draw(st.integers(0, 255))]))
        elif op == "insert":
            buf[pos:pos] = draw(st.binary(min_size=1, max_size=4))
        elif op == "delete" and buf:
            del buf[pos : pos + draw(st.integers(1, 4))]
    if draw(st.booleans()):
        buf = buf[: draw(st.integers(0, len(buf)))]
    return bytes(buf)


# ---------------------------------------------------------------- protobuf structure generators

_FIELD_NUMBERS = st.sampled_from([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 16, 17, 99])
_VARINTS = st.one_of(
    st.integers(0, 30),
    st.sampled_from([0, 1, 2**31, 2**32, 2**63 - 1, 2**63, 2**64 - 1, -1, -(2**63)]),
    st.integers(-(2**63), 2**64 - 1),
)


def _raw_varint_field(field: int, n: int) -> bytes:
    return key(field, VARINT) + varint(n)


@st.composite
def proto_fields(draw, depth: int = 0):
    """A random protobuf message: random field numbers and wire types, nested submessages."""
    parts = []
    for _ in range(draw(st.integers(0, 5))):
        f = draw(_FIELD_NUMBERS)
        wt = draw(st.sampled_from([VARINT, I64, LEN, I32]))
        if wt == VARINT:
            parts.append(_raw_varint_field(f, draw(_VARINTS)))
        elif wt == I64:
            parts.append(key(f, I64) + draw(st.binary(min_size=8, max_size=8)))
        elif wt == I32:
            parts.append(key(f, I32) + draw(st.binary(min_size=4, max_size=4)))
        elif depth < 3 and draw(st.booleans()):
            parts.append(ld(f, draw(proto_fields(depth + 1))))
        else:
            parts.append(ld(f, draw(st.binary(max_size=24))))
    return b"".join(parts)


@st.composite
def tensor_protos(draw):
    """TensorProto-shaped messages with hostile dtypes, dims, contents and typed value lists."""
    parts = []
    if draw(st.booleans()):
        parts.append(
            _raw_varint_field(
                1,
                draw(st.one_of(st.sampled_from([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 14, 17, 18, 19, 22, 23]), _VARINTS)),
            )
        )
    # dims stay small or are absurdly large: a mid-sized one would make a correct decoder
    # allocate gigabytes, which is not what this test is about
    big = st.sampled_from([2**40, 2**62, 2**63 - 1, 2**63, 2**64 - 1, -(2**63)])
    dims = draw(st.lists(st.one_of(st.integers(-3, 5), big), max_size=4))
    if dims or draw(st.booleans()):
        parts.append(ld(2, b"".join(ld(2, _raw_varint_field(1, d)) for d in dims)))
    if draw(st.booleans()):
        parts.append(ld(4, draw(st.binary(max_size=40))))
    for _ in range(draw(st.integers(0, 3))):
        f = draw(st.sampled_from([5, 6, 7, 8, 10, 11, 13, 16, 17]))
        kind = draw(st.sampled_from(["packed_bytes", "packed_varints", "varint", "i32", "i64"]))
        if kind == "packed_bytes":
            parts.append(ld(f, draw(st.binary(max_size=20))))
        elif kind == "packed_varints":
            parts.append(ld(f, b"".join(varint(v) for v in draw(st.lists(_VARINTS, max_size=4)))))
        elif kind == "varint":
            parts.append(_raw_varint_field(f, draw(_VARINTS)))
        elif kind == "i32":
            parts.append(key(f, I32) + draw(st.binary(min_size=4, max_size=4)))
        else:
            parts.append(key(f, I64) + draw(st.binary(min_size=8, max_size=8)))
    parts = draw(st.permutations(parts))
    return b"".join(parts)


@st.composite
def hostile_events(draw):
    """Event payloads whose Summary.Value holds a hostile tensor, metadata or histogram."""
    value = ld(1, draw(st.binary(max_size=8)))
    choice = draw(st.sampled_from(["tensor", "metadata", "histogram", "random"]))
    if choice == "tensor":
        value += ld(8, draw(tensor_protos()))
    elif choice == "metadata":
        entries = draw(
            st.lists(
                st.tuples(
                    st.sampled_from([b"mode", b"mode_step", b"other"]),
                    st.one_of(st.binary(max_size=6), st.sampled_from([b"1", b"5", b"-1", b"99", b"\xff", b"1" * 5000])),
                ),
                max_size=3,
            )
        )
        value += ld(9, b"".join(ld(1, ld(1, n) + ld(2, c)) for n, c in entries))
        value += ld(8, encode_tensor(np.zeros(1, np.float32)))
    elif choice == "histogram":
        value += ld(5, draw(tensor_protos()))
    else:
        value += draw(proto_fields())
    return double(1, 1.0) + _raw_varint_field(2, draw(_VARINTS)) + ld(5, ld(1, value))


# ------------------------------------------------------------------------------------ records


def test_seeds_are_valid():
    """The inputs mutated below decode cleanly, so the mutations start from real records."""
    got = [p for _, p in iter_records(_FILE + _GOLDEN, where=WHERE)]
    assert got[: len(_PAYLOADS)] == _PAYLOADS
    assert len(got) == len(_RECORDS) + 12
    assert decode_event(got[0]).values[0].tag == "grad/w0"
    assert decode_event(got[3]).values[1].histogram["num"] == 5.0
    assert decode_tensor_record(got[len(_PAYLOADS)]).shape == (4, 3)
    assert got[len(_RECORDS)] == got[len(_PAYLOADS)]
    assert decode_index(_INDEX, "x").mode is ModeKeys.TRAIN


@FUZZ
@given(st.binary(max_size=200))
def test_random_bytes_as_event_file(data):
    _decode_record_bytes(data)


@FUZZ
@given(st.binary(max_size=200))
def test_random_bytes_as_payload(data):
    _decode_payload(data)


@FUZZ
@given(st.sampled_from(_RECORDS + [_FILE]).flatmap(mutated))
def test_mutated_records(data):
    _decode_record_bytes(data)


@FUZZ
@given(st.sampled_from(_PAYLOADS).flatmap(mutated))
def test_mutated_payloads(data):
    _decode_payload(data)
    # a mutated payload that is re-framed passes the CRC checks and reaches the decoders
    _decode_record_bytes(frame(data))


@FUZZ
@given(proto_fields())
def test_random_protobuf_messages(payload):
    _decode_payload(payload)
    _decode_payload(double(1, 0.0) + ld(5, ld(1, payload)))
    _decode_payload(ld(5, payload))


@FUZZ
@given(hostile_events())
def test_hostile_tensor_protos(payload):
    _decode_payload(payload)


# Deterministic cases for the defects the generators above look for, so that each one fails
# with a readable name rather than only through a shrunk hypothesis example.
def _tensor_event(tensor_proto: bytes) -> bytes:
    return double(1, 1.0) + ld(5, ld(1, ld(1, b"t") + ld(8, tensor_proto)))


def _shape(*dims: int) -> bytes:
    return ld(2, b"".join(ld(2, _raw_varint_field(1, d)) for d in dims))


# name: (TensorProto bytes, what the EventFileCorrupt message says)
HOSTILE_TENSORS = {
    "no-dtype-no-values-but-dims": (_shape(3), "0 strings for shape [3]"),
    "float_val-packed-not-multiple-of-4": (
        _raw_varint_field(1, 1) + _shape(1) + ld(5, b"\x00\x00\x00"),
        "packed float_val is not a whole number of values",
    ),
    "double_val-packed-not-multiple-of-8": (
        _raw_varint_field(1, 2) + _shape(1) + ld(6, b"\x00" * 5),
        "packed double_val is not a whole number of values",
    ),
    "half_val-out-of-uint16-range": (
        _raw_varint_field(1, 19) + _shape(1) + _raw_varint_field(13, 70000),
        "70000 out of bounds for uint16",
    ),
    "half_val-negative": (_raw_varint_field(1, 19) + _shape(1) + _raw_varint_field(13, -1), "out of bounds for uint16"),
    "int_val-one-value-huge-shape": (
        _raw_varint_field(1, 3) + _shape(2**40) + _raw_varint_field(7, 5),
        "1 values for shape [1099511627776]",
    ),
    "int_val-negative-dims": (
        _raw_varint_field(1, 3) + _shape(-1, -2) + _raw_varint_field(7, 1) + _raw_varint_field(7, 2),
        "negative dimension",
    ),
    "int_val-70-bit-varint": (
        _raw_varint_field(1, 3) + _shape(1) + key(7, VARINT) + b"\xff" * 9 + b"\x7f",
        "bad TensorProto values",
    ),
    "strings-negative-dims": (_shape(-1, -2) + ld(8, b"a") + ld(8, b"b"), "negative dimension"),
    "dim-70-bit-varint": (
        _raw_varint_field(1, 1) + ld(2, ld(2, key(1, VARINT) + b"\xff" * 9 + b"\x7f")) + ld(4, b""),
        "tensor_content holds 0 bytes",
    ),
    "dims-product-wraps-int64-to-zero": (
        _raw_varint_field(1, 1) + _shape(2**62, 4) + ld(4, b""),
        "needs 73786976294838206464",
    ),
    "content-with-negative-dims": (_raw_varint_field(1, 1) + _shape(-1, -1) + ld(4, b"\x00" * 4), "negative dimension"),
    # 0 values, but numpy cannot make the shape (found by test_hostile_tensor_protos)
    "content-empty-zero-dim-beside-a-huge-one": (
        _raw_varint_field(1, 1) + _shape(0, 2**62) + ld(4, b""),
        "cannot shape 0 values as [0, 4611686018427387904]",
    ),
}


@pytest.mark.parametrize("name", list(HOSTILE_TENSORS))
def test_hostile_tensor_proto_examples(name):
    proto, message = HOSTILE_TENSORS[name]
    payload = _tensor_event(proto)
    with pytest.raises(EventFileCorrupt, match=re.escape(message)):
        decode_event(payload)
    with pytest.raises(EventFileCorrupt, match=re.escape(message)):
        decode_tensor_record(payload)
    # framed, the record itself is intact: only the tensor inside it is refused
    assert [p for _, p in iter_records(frame(payload) + frame(_PAYLOADS[0]), WHERE)] == [payload, _PAYLOADS[0]]


def test_hostile_histogram_example():
    payload = double(1, 1.0) + ld(5, ld(1, ld(1, b"h") + ld(5, ld(6, b"\x00" * 7))))
    with pytest.raises(EventFileCorrupt, match="histogram buckets are not a whole number of doubles"):
        decode_event(payload)


# -------------------------------------------------------------------------------------- index


@FUZZ
@given(st.binary(max_size=300))
def test_random_bytes_as_index(data):
    _decode_index(data)


@FUZZ
@given(mutated(_INDEX))
def test_mutated_index_bytes(data):
    _decode_index(data)


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)


def _index_variants(draw, base: dict) -> dict:
    d = json.loads(json.dumps(base))
    for _ in range(draw(st.integers(1, 4))):
        path = draw(
            st.sampled_from(
                [
                    ("meta",),
                    ("meta", "mode"),
                    ("meta", "mode_step"),
                    ("meta", "event_file_name"),
                    ("tensor_payload",),
                    ("tensor_payload", 0),
                    ("tensor_payload", 0, "tensorname"),
                    ("tensor_payload", 0, "start_idx"),
                    ("tensor_payload", 0, "length"),
                    ("shape_payload",),
                    ("shape_payload", 0),
                    ("shape_payload", 0, "tensorname"),
                    ("shape_payload", 0, "shape"),
                    ("shape_payload", 0, "originalname"),
                ]
            )
        )
        target = d
        try:
            for p in path[:-1]:
                target = target[p]
            if draw(st.booleans()):
                target[path[-1]] = draw(_JSON)
            else:
                del target[path[-1]]
        except (KeyError, IndexError, TypeError):
            pass
    return d


_BASE_INDEX = {
    "meta": {"mode": "TRAIN", "mode_step": 0, "event_file_name": "events/000000000000/000000000000_worker_0.tfevents"},
    "tensor_payload": [{"tensorname": "a", "start_idx": 0, "length": 138}],
    "shape_payload": [{"tensorname": "a", "originalname": "a", "shape": [2, 3]}],
}


@FUZZ
@given(st.data())
def test_structurally_mutated_index(data):
    _decode_index(json.dumps(_index_variants(data.draw, _BASE_INDEX)).encode())


@FUZZ
@given(_JSON)
def test_random_json_as_index(value):
    _decode_index(json.dumps(value).encode())
    _decode_index(json.dumps({"meta": value, "tensor_payload": value, "shape_payload": value}).encode())
    _decode_index(
        json.dumps(
            {"meta": {"mode": "EVAL", "mode_step": 1}, "shape_payload": [{"tensorname": "x", "shape": value}]}
        ).encode()
    )


_T = b'"tensor_payload": [{"tensorname": "a", "start_idx": 0, "length": 20}]'
_E = b'"event_file_name": "events/000000000000/000000000000_worker_0.tfevents"'


def _meta(mode_step: bytes, extra: bytes = b"") -> bytes:
    return b'{"meta": {"mode": "TRAIN", "mode_step": ' + mode_step + extra + b"}, "


def _with_shape(shape: bytes, name: bytes = b'"a"') -> bytes:
    return (
        b'{"meta": {"mode": "TRAIN", "mode_step": 0}, "shape_payload": [{"tensorname": '
        + name
        + b', "shape": '
        + shape
        + b"}]}"
    )


# (document, what the IndexReaderException message says besides the file name)
HOSTILE_INDEXES = {
    "mode_step-1e308": (_meta(b"1e308") + b'"shape_payload": []}', "meta.mode_step 1e+308 is not a whole number"),
    "mode_step-2.5": (_meta(b"2.5") + b'"shape_payload": []}', "meta.mode_step 2.5 is not a whole number"),
    "mode_step-2.0": (_meta(b"2.0") + b'"shape_payload": []}', "meta.mode_step 2.0 is not a whole number"),
    "mode_step-string": (_meta(b'"5"') + b'"shape_payload": []}', "meta.mode_step '5' is not a whole number"),
    "mode_step-bool": (_meta(b"true") + b'"shape_payload": []}', "meta.mode_step True is not a whole number"),
    "mode_step-2**64-1": (_meta(b"18446744073709551615") + b'"shape_payload": []}', "is not a whole number"),
    "mode_step-null": (_meta(b"null") + b'"shape_payload": []}', "meta.mode_step None is not a whole number"),
    "mode_step-5000-digits": (_meta(b'"' + b"9" * 5000 + b'"') + b'"tensor_payload": []}', "characters)"),
    "mode-null-mode_step-x": (b'{"meta": {"mode": null, "mode_step": "x"}, "tensor_payload": []}', "valid mode"),
    "mode-unknown": (b'{"meta": {"mode": "TRAINING", "mode_step": 1}, "tensor_payload": []}', "valid mode"),
    "mode-int": (b'{"meta": {"mode": 1, "mode_step": 1}, "tensor_payload": []}', "valid mode"),
    "mode_step-missing": (b'{"meta": {"mode": "EVAL"}, "tensor_payload": []}', "valid mode and mode_step"),
    "shape-1e308": (_with_shape(b"[1e308]"), "dimension 1e+308 is not a whole number"),
    "shape-2.5": (_with_shape(b"[2, 2.5]"), "dimension 2.5 is not a whole number"),
    "shape-negative": (_with_shape(b"[-1]"), "dimension -1 is not a whole number"),
    "shape-string": (_with_shape(b'"12"'), "bad shape_payload entry"),
    "shape-null": (_with_shape(b"null"), "bad shape_payload entry"),
    "shape-tensorname-list": (_with_shape(b"[1]", b'["a"]'), "bad shape_payload entry"),
    "shape-entry-list": (b'{"meta": {"mode": "TRAIN", "mode_step": 0}, "shape_payload": [["a"]]}', "bad shape_payload"),
    "tensor_payload-entry-int": (
        b'{"meta": {"mode": "TRAIN", "mode_step": 0}, "tensor_payload": [1]}',
        "lacks tensorname",
    ),
    "event_file_name-int": (_meta(b"0", b', "event_file_name": 5') + _T + b"}", "event_file_name 5 is not"),
    "event_file_name-missing": (_meta(b"0") + _T + b"}", "event_file_name None is not"),
    "event_file_name-absolute": (_meta(b"0", b', "event_file_name": "/etc/passwd"') + _T + b"}", "outside the trial"),
    "event_file_name-parent": (_meta(b"0", b', "event_file_name": "events/../../x"') + _T + b"}", "outside the trial"),
    "event_file_name-backslash": (_meta(b"0", b', "event_file_name": "..\\\\x"') + _T + b"}", "outside the trial"),
    "event_file_name-url": (_meta(b"0", b', "event_file_name": "s3://b/x"') + _T + b"}", "outside the trial"),
    "event_file_name-NUL": (_meta(b"0", b', "event_file_name": "events/a\\u0000b"') + _T + b"}", "without NUL"),
    "nested-lists": (b"[" * 5000 + b"]" * 5000, "not valid JSON"),
    "nested-objects": (b'{"meta": ' * 3000 + b"1" + b"}" * 3000, "not valid JSON"),
    "not-utf8": (b"\xff\xfe{}", "not valid JSON"),
    "empty": (b"", "not valid JSON"),
    "top-level-list": (b"[]", "not a JSON object"),
    "no-payloads": (b'{"meta": {"mode": "TRAIN", "mode_step": 0}}', "neither tensor_payload nor shape_payload"),
    "payload-not-list": (b'{"meta": {"mode": "TRAIN", "mode_step": 0}, "tensor_payload": {"a": 1}}', "must be lists"),
}


@pytest.mark.parametrize("name", list(HOSTILE_INDEXES))
def test_hostile_index_examples(name):
    doc, message = HOSTILE_INDEXES[name]
    with pytest.raises(IndexReaderException) as ei:
        decode_index(doc, "fuzz/index.json")
    assert str(ei.value).startswith("fuzz/index.json: ")
    assert message in str(ei.value)
    assert len(str(ei.value)) < 1000


def test_accepted_index_edge_values():
    """The values at the edges of what is allowed are kept exactly."""
    big = 2**63 - 1
    doc = _meta(str(big).encode(), b", " + _E) + _T + b', "shape_payload": [{"tensorname": "a", "shape": [0, 3]}]}'
    got = decode_index(doc, "x")
    assert (got.mode, got.mode_step, got.tags, got.starts, got.lengths) == (ModeKeys.TRAIN, big, ("a",), [0], [20])
    assert got.shapes == {"a": ((0, 3), "a")}
    assert decode_index(_meta(b"-1") + b'"shape_payload": []}', "x").mode_step == -1
