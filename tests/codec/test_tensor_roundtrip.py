"""ndarray -> Event record -> ndarray, for every dtype smdebug writes, plus a 1.0.34 golden record."""

from __future__ import annotations

import hashlib
import json

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from smdebug.codec.event import decode_event, encode_tensor_event, mode_metadata
from smdebug.codec.record import decode_tensor_record
from smdebug.codec.tensor import encode_tensor
from smdebug.codec.tfrecord import frame, iter_records, unframe
from smdebug.codec.wire import LEN, VARINT, double, iter_fields, key, ld, varint
from smdebug.core.modes import ModeKeys
from smdtest import FIXTURES

FIXTURE = FIXTURES / "multi_worker_modes"
EVENT_FILE = FIXTURE / "events/000000000000/000000000000_worker_0.tfevents"
INDEX_FILE = FIXTURE / "index/000000000/000000000000_worker_0.json"
EXPECTED = FIXTURE.parent / "multi_worker_modes.expected.json"

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = ["float16", "float32", "float64"]
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
COMPLEX = ["complex64", "complex128"]
ALL_NUMERIC = [np.dtype(n) for n in FLOATS + INTS + COMPLEX + ["bool"]] + [BF16]

SHAPES = hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4)
STEPS = st.integers(min_value=-(2**63), max_value=2**63 - 1)


def _round_trip(arr: np.ndarray, tag: str = "t", step: int = 3, mode=ModeKeys.TRAIN, mode_step: int = 1):
    rec = frame(encode_tensor_event(tag, arr, step, mode_metadata(mode, mode_step), wall_time=1.5))
    payload, nxt = unframe(rec)
    assert nxt == len(rec)
    return decode_tensor_record(payload)


def _assert_same(out: np.ndarray, arr: np.ndarray):
    assert isinstance(out, np.ndarray)
    assert out.dtype == arr.dtype
    assert out.dtype.byteorder in "<=|"
    assert out.shape == arr.shape
    assert out.tobytes() == np.ascontiguousarray(arr).tobytes()


@st.composite
def float_like_arrays(draw):
    """Floats and complexes with nan/inf/subnormals; bfloat16 via float32 values."""
    name = draw(st.sampled_from(FLOATS + COMPLEX + ["bfloat16"]))
    shape = draw(SHAPES)
    if name == "bfloat16":
        a = draw(hnp.arrays(np.float32, shape, elements=st.floats(width=32)))
        return a.astype(BF16)
    return draw(hnp.arrays(np.dtype(name), shape))


@st.composite
def raw_arrays(draw):
    """Any bit pattern of any numeric dtype (NaN payloads, -0.0, ...); bool stays 0/1."""
    dt = draw(st.sampled_from(ALL_NUMERIC))
    shape = draw(SHAPES)
    n = int(np.prod(shape)) if shape else 1
    if dt == np.bool_:
        return draw(hnp.arrays(np.bool_, shape))
    data = draw(st.binary(min_size=n * dt.itemsize, max_size=n * dt.itemsize))
    return np.frombuffer(data, dtype=dt).reshape(shape)


@settings(max_examples=150, deadline=None)
@given(hnp.arrays(st.sampled_from([np.dtype(n) for n in INTS + ["bool"]]), SHAPES))
def test_int_and_bool_round_trip(arr):
    _assert_same(_round_trip(arr), arr)


@settings(max_examples=150, deadline=None)
@given(float_like_arrays())
def test_float_round_trip(arr):
    out = _round_trip(arr)
    _assert_same(out, arr)
    assert np.array_equal(out, arr, equal_nan=True) or arr.dtype == BF16


@settings(max_examples=150, deadline=None)
@given(raw_arrays())
def test_any_bit_pattern_round_trip(arr):
    _assert_same(_round_trip(arr), arr)


@pytest.mark.parametrize("dt", ALL_NUMERIC, ids=str)
def test_every_dtype_special_values(dt):
    if dt.kind in "fcV" or dt == BF16:
        vals = [0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, np.nan]
        arr = np.array(vals, dtype=np.float32 if dt == BF16 else dt).astype(dt)
    elif dt == np.bool_:
        arr = np.array([True, False, True])
    else:
        info = np.iinfo(dt)
        arr = np.array([info.min, info.max, 0, 1], dtype=dt)
    for shaped in (arr, arr.reshape(1, -1, 1), arr[::-1], np.asfortranarray(np.stack([arr, arr]))):
        _assert_same(_round_trip(shaped), shaped)


@pytest.mark.parametrize("dt", ALL_NUMERIC, ids=str)
@pytest.mark.parametrize("shape", [(), (0,), (3, 0), (0, 2, 0, 1), (1, 1, 1, 1)])
def test_every_dtype_edge_shapes(dt, shape):
    arr = np.ones(shape, dtype=dt)
    _assert_same(_round_trip(arr), arr)


def test_zero_d_array_has_no_dims():
    out = _round_trip(np.array(7.5, dtype=np.float32))
    assert out.shape == () and out.item() == 7.5


@pytest.mark.parametrize("dt", [">f2", ">f4", ">f8", ">i2", ">i4", ">i8", ">u2", ">u4", ">u8", ">c8", ">c16"])
def test_big_endian_written_little_endian(dt):
    arr = (np.arange(12).reshape(3, 4) * 3 - 7).astype(dt)
    if arr.dtype.kind == "u":
        arr = np.arange(12, dtype=dt).reshape(3, 4)
    assert arr.dtype.byteorder == ">"
    proto = encode_tensor(arr)
    little = arr.astype(arr.dtype.newbyteorder("<")).tobytes()
    assert little in proto
    if arr.dtype.itemsize > 1 and arr.any():
        assert arr.tobytes() not in proto
    out = _round_trip(arr)
    assert out.dtype == arr.dtype.newbyteorder("<")
    assert out.dtype.byteorder in "<="
    assert out.shape == arr.shape
    assert np.array_equal(out, arr)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=12),
        min_size=1,
        max_size=8,
    )
)
def test_strings_round_trip(strings):
    arr = np.array(strings)
    assert arr.dtype.kind == "U"
    out = _round_trip(arr)
    assert out.dtype.kind == "U"
    assert out.shape == arr.shape
    assert out.tolist() == arr.tolist()


@pytest.mark.parametrize(
    "strings",
    [["", ""], ["héllo", "wörld", "日本語", "🙂"], ["a", "", "ß" * 50], ["single"]],
)
def test_strings_examples(strings):
    arr = np.array(strings)
    out = _round_trip(arr)
    assert out.dtype.kind == "U"
    assert out.tolist() == arr.tolist()


def test_string_record_layout():
    """Strings: dtype left 0, rank-1 shape, one UTF-8 string_val (field 8) per element."""
    proto = encode_tensor(np.array(["ab", "é"]))
    fields = list(iter_fields(proto))
    assert [f for f, _, _ in fields] == [2, 8, 8]
    assert [proto[v[0] : v[1]] for f, _, v in fields if f == 8] == [b"ab", "é".encode()]


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(list(ModeKeys)), st.integers(0, 2**62), STEPS, st.text(min_size=1, max_size=30))
def test_mode_metadata_round_trip(mode, mode_step, step, tag):
    payload = encode_tensor_event(tag, np.zeros(2, np.float32), step, mode_metadata(mode, mode_step), wall_time=2.0)
    ev = decode_event(unframe(frame(payload))[0])
    assert ev.step == step
    assert ev.wall_time == 2.0
    assert len(ev.values) == 1
    sv = ev.values[0]
    assert sv.tag == tag
    assert sv.mode is mode
    assert sv.mode_step == mode_step
    assert sv.tensor is not None and sv.tensor.shape == (2,)


@pytest.mark.parametrize("mode", list(ModeKeys), ids=lambda m: m.name)
def test_mode_metadata_layout(mode):
    md = mode_metadata(mode, 17)
    entries = []
    for f, wt, v in iter_fields(md):
        assert (f, wt) == (1, LEN)
        d = {f2: md[v2[0] : v2[1]] for f2, _, v2 in iter_fields(md, v[0], v[1])}
        entries.append((d[1], d[2]))
    assert entries == [(b"mode_step", b"17"), (b"mode", str(mode.value).encode())]


def _event_without_metadata(tag: str, arr: np.ndarray, step: int, metadata: bytes | None) -> bytes:
    value = ld(1, tag.encode()) + ld(8, encode_tensor(arr))
    if metadata is not None:
        value += ld(9, metadata)
    return double(1, 3.0) + key(2, VARINT) + varint(step) + ld(5, ld(1, value))


@pytest.mark.parametrize("metadata", [None, b""], ids=["no-metadata-field", "empty-metadata"])
@pytest.mark.parametrize("step", [0, 5, 123456789])
def test_record_without_metadata_is_global(metadata, step):
    arr = np.arange(6, dtype=np.int32).reshape(2, 3)
    ev = decode_event(_event_without_metadata("w", arr, step, metadata))
    sv = ev.values[0]
    assert ev.step == step
    assert sv.mode is ModeKeys.GLOBAL
    assert sv.mode_step == step
    assert np.array_equal(sv.tensor, arr)


def test_step_zero_omitted_like_proto3():
    """1.0.34 omits step=0 (proto3 default): such a record is step 0."""
    value = ld(1, b"w") + ld(8, encode_tensor(np.zeros(1, np.float32)))
    ev = decode_event(double(1, 3.0) + ld(5, ld(1, value)))
    assert ev.step == 0
    assert ev.values[0].mode_step == 0


# ----------------------------------------------------------------------------- golden: 1.0.34


def _index_entries():
    return json.loads(INDEX_FILE.read_text())


def _golden_record(tag: str) -> bytes:
    idx = _index_entries()
    (entry,) = [e for e in idx["tensor_payload"] if e["tensorname"] == tag]
    data = EVENT_FILE.read_bytes()
    return data[entry["start_idx"] : entry["start_idx"] + entry["length"]]


def test_golden_record_decodes():
    idx = _index_entries()
    assert idx["meta"]["event_file_name"] == str(EVENT_FILE.relative_to(FIXTURE))
    rec = _golden_record("grad/w0")
    payload, nxt = unframe(rec, where=str(EVENT_FILE))
    assert nxt == len(rec)
    ev = decode_event(payload)
    assert ev.step == 0
    assert len(ev.values) == 1
    sv = ev.values[0]
    assert sv.tag == "grad/w0"
    assert sv.mode is ModeKeys.TRAIN
    assert sv.mode_step == 0
    t = sv.tensor
    assert t.dtype == np.float32
    assert t.shape == (4, 3)
    # the value 1.0.34's own reader returned for it
    expected = json.loads(EXPECTED.read_text())["tensors"]["grad/w0"]["per_step"]["0"]["value@worker_0"]
    assert expected["shape"] == [4, 3] and expected["dtype"] == "float32"
    assert hashlib.sha1(np.ascontiguousarray(t).tobytes()).hexdigest()[:16] == expected["sha"]
    assert np.array_equal(decode_tensor_record(payload), t)


def test_golden_file_records_match_index():
    idx = _index_entries()
    data = EVENT_FILE.read_bytes()
    records = list(iter_records(data, where=str(EVENT_FILE)))
    assert [o for o, _ in records] == [e["start_idx"] for e in idx["tensor_payload"]]
    for (_, payload), e in zip(records, idx["tensor_payload"]):
        assert len(payload) + 16 == e["length"]
        sv = decode_event(payload).values[0]
        assert sv.tag == e["tensorname"]
        assert sv.mode is ModeKeys.TRAIN and sv.mode_step == 0
        if e["tensorname"].startswith("smdebug/reductions/"):
            assert sv.tensor.shape == (1,)
        else:
            assert sv.tensor.shape == (4, 3)


def _value_fields(payload: bytes) -> dict:
    """Summary.Value sub-fields of an Event payload: field number -> raw bytes."""
    (summary,) = [v for f, wt, v in iter_fields(payload) if f == 5 and wt == LEN]
    (value,) = [v for f, wt, v in iter_fields(payload, *summary) if f == 1 and wt == LEN]
    out = {}
    for f, wt, v in iter_fields(payload, *value):
        assert wt == LEN
        out[f] = payload[v[0] : v[1]]
    return out


def _tensor_fields(proto: bytes) -> dict:
    out = {}
    for f, _, v in iter_fields(proto):
        out[f] = proto[v[0] : v[1]] if isinstance(v, tuple) else v
    return out


def test_our_record_matches_1034_structure():
    golden_payload = unframe(_golden_record("grad/w0"))[0]
    golden = decode_event(golden_payload)
    arr = golden.values[0].tensor
    ours_rec = frame(encode_tensor_event("grad/w0", arr, 0, mode_metadata(ModeKeys.TRAIN, 0)))
    ours_payload, _ = unframe(ours_rec)
    ours = decode_event(ours_payload)

    assert ours_rec[-4:] == _golden_record("grad/w0")[-4:]  # the constant footer
    assert ours.step == golden.step
    assert ours.file_version == golden.file_version
    assert len(ours.values) == len(golden.values) == 1
    a, b = ours.values[0], golden.values[0]
    assert (a.tag, a.mode, a.mode_step, a.simple_value, a.histogram) == (
        b.tag,
        b.mode,
        b.mode_step,
        b.simple_value,
        b.histogram,
    )
    assert a.tensor.dtype == b.tensor.dtype and a.tensor.shape == b.tensor.shape
    assert a.tensor.tobytes() == b.tensor.tobytes()

    # field by field: tag, tensor, metadata present in both; metadata bytes identical
    fo, fg = _value_fields(ours_payload), _value_fields(golden_payload)
    assert set(fo) == set(fg) == {1, 8, 9}
    assert fo[1] == fg[1] == b"grad/w0"
    assert fo[9] == fg[9]
    to, tg = _tensor_fields(fo[8]), _tensor_fields(fg[8])
    assert to[1] == tg[1] == 1  # DT_FLOAT
    assert to[4] == tg[4]  # tensor_content


def test_our_record_for_every_golden_tag_decodes_equal():
    data = EVENT_FILE.read_bytes()
    for _, payload in iter_records(data):
        g = decode_event(payload)
        sv = g.values[0]
        mine = decode_event(encode_tensor_event(sv.tag, sv.tensor, g.step, mode_metadata(sv.mode, sv.mode_step)))
        m = mine.values[0]
        assert (m.tag, m.mode, m.mode_step, mine.step) == (sv.tag, sv.mode, sv.mode_step, g.step)
        assert m.tensor.dtype == sv.tensor.dtype
        assert m.tensor.shape == sv.tensor.shape
        assert m.tensor.tobytes() == sv.tensor.tobytes()
