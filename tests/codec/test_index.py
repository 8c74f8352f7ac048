"""Index JSON: accepts what 1.0.34 writes, rejects defects with IndexReaderException naming the file."""

from __future__ import annotations

import json

import pytest

from smdebug.codec.index import ParsedIndex, decode_index, encode_index
from smdebug.core.modes import ModeKeys
from smdebug.exceptions import IndexReaderException
from smdtest import FIXTURES

INDEX_FILES = sorted(FIXTURES.glob("*/index/*/*.json"))
WHERE = "s3://bucket/trial/index/000000000/000000000042_worker_1.json"

EVENT_KEY = "events/000000000042/000000000042_worker_1.tfevents"


def _doc(**overrides) -> dict:
    d = {
        "meta": {"mode": "EVAL", "mode_step": 5, "event_file_name": EVENT_KEY},
        "tensor_payload": [
            {"tensorname": "fc1.weight", "start_idx": 0, "length": 138},
            {"tensorname": "smdebug/reductions/mean/fc1.weight", "start_idx": 138, "length": 120},
        ],
        "shape_payload": [{"tensorname": "fc1.weight", "originalname": "fc1.weight", "shape": [2, 3]}],
    }
    d.update(overrides)
    return d


def _raw(d) -> bytes:
    return json.dumps(d).encode()


def test_fixtures_present():
    assert len(INDEX_FILES) >= 10


@pytest.mark.parametrize("path", INDEX_FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_accepts_1034_index_files(path):
    data = path.read_bytes()
    raw = json.loads(data)
    parsed = decode_index(data, str(path))
    assert isinstance(parsed, ParsedIndex)
    assert parsed.mode is ModeKeys[raw["meta"]["mode"]]
    assert parsed.mode_step == raw["meta"]["mode_step"]
    tp = raw.get("tensor_payload", [])
    assert list(parsed.tags) == [e["tensorname"] for e in tp]
    assert list(parsed.starts) == [e["start_idx"] for e in tp]
    assert list(parsed.lengths) == [e["length"] for e in tp]
    if tp:
        assert parsed.event_file_name == raw["meta"]["event_file_name"]
        # the event file it names exists next to it in the trial
        trial = path.parents[2]
        assert (trial / parsed.event_file_name).is_file()
    sp = raw.get("shape_payload", [])
    assert set(parsed.shapes) == {e["tensorname"] for e in sp}


def test_decodes_fields():
    p = decode_index(_raw(_doc()), WHERE)
    assert p.mode is ModeKeys.EVAL
    assert p.mode_step == 5
    assert p.event_file_name == EVENT_KEY
    assert tuple(p.tags) == ("fc1.weight", "smdebug/reductions/mean/fc1.weight")
    assert list(p.starts) == [0, 138]
    assert list(p.lengths) == [138, 120]
    assert p.shapes == {"fc1.weight": ((2, 3), "fc1.weight")}


@pytest.mark.parametrize("mode", list(ModeKeys), ids=lambda m: m.name)
def test_every_mode_name(mode):
    d = _doc()
    d["meta"]["mode"] = mode.name
    assert decode_index(_raw(d), WHERE).mode is mode


def test_shapes_only_index_accepted():
    d = {
        "meta": {"mode": "TRAIN", "mode_step": 3},
        "tensor_payload": [],
        "shape_payload": [{"tensorname": "a", "originalname": "model/a:0", "shape": [4, 0, 2]}],
    }
    p = decode_index(_raw(d), WHERE)
    assert p.event_file_name is None
    assert tuple(p.tags) == ()
    assert p.shapes == {"a": ((4, 0, 2), "model/a:0")}


def test_shape_payload_only_key_accepted():
    d = {"meta": {"mode": "TRAIN", "mode_step": 3}, "shape_payload": [{"tensorname": "s", "shape": []}]}
    p = decode_index(_raw(d), WHERE)
    assert p.shapes == {"s": ((), "s")}  # originalname defaults to the tensor name


def test_tensor_payload_only_key_accepted():
    d = _doc()
    del d["shape_payload"]
    p = decode_index(_raw(d), WHERE)
    assert len(p.tags) == 2 and p.shapes == {}


def test_event_file_name_normalised():
    d = _doc()
    d["meta"]["event_file_name"] = "events/./000000000042/000000000042_worker_1.tfevents"
    assert decode_index(_raw(d), WHERE).event_file_name == EVENT_KEY


def _bad_cases():
    no_meta = _doc()
    del no_meta["meta"]
    no_payloads = _doc()
    del no_payloads["tensor_payload"], no_payloads["shape_payload"]
    bad_mode = _doc()
    bad_mode["meta"]["mode"] = "TRAINING"
    no_mode = _doc()
    del no_mode["meta"]["mode"]
    no_mode_step = _doc()
    del no_mode_step["meta"]["mode_step"]
    bad_mode_step = _doc()
    bad_mode_step["meta"]["mode_step"] = "five"
    absolute = _doc()
    absolute["meta"]["event_file_name"] = "/etc/passwd"
    escaping = _doc()
    escaping["meta"]["event_file_name"] = "../../x"
    escaping_inner = _doc()
    escaping_inner["meta"]["event_file_name"] = "events/../../../x"
    url = _doc()
    url["meta"]["event_file_name"] = "s3://other-bucket/x.tfevents"
    missing_efn = _doc()
    del missing_efn["meta"]["event_file_name"]
    non_str_efn = _doc()
    non_str_efn["meta"]["event_file_name"] = 7
    no_tensorname = _doc()
    del no_tensorname["tensor_payload"][1]["tensorname"]
    no_start = _doc()
    del no_start["tensor_payload"][0]["start_idx"]
    no_length = _doc()
    del no_length["tensor_payload"][0]["length"]
    payload_not_list = _doc(tensor_payload={"tensorname": "a"})
    shapes_not_list = _doc(shape_payload="abc")
    bad_shape_entry = _doc(shape_payload=[{"tensorname": "a"}])
    bad_shape_value = _doc(shape_payload=[{"tensorname": "a", "shape": ["x"]}])
    return {
        "not-json": b"{not json",
        "not-utf8": b"\xff\xfe\x00",
        "empty-file": b"",
        "truncated": _raw(_doc())[:-5],
        "top-level-list": b"[1, 2]",
        "top-level-string": b'"meta"',
        "top-level-null": b"null",
        "missing-meta": _raw(no_meta),
        "empty-meta": _raw(_doc(meta={})),
        "meta-not-object": _raw(_doc(meta=["TRAIN", 0])),
        "no-payload-keys": _raw(no_payloads),
        "bad-mode-name": _raw(bad_mode),
        "no-mode": _raw(no_mode),
        "no-mode-step": _raw(no_mode_step),
        "bad-mode-step": _raw(bad_mode_step),
        "event-file-absolute": _raw(absolute),
        "event-file-dotdot": _raw(escaping),
        "event-file-dotdot-inner": _raw(escaping_inner),
        "event-file-url": _raw(url),
        "event-file-missing": _raw(missing_efn),
        "event-file-not-string": _raw(non_str_efn),
        "tensorname-missing": _raw(no_tensorname),
        "start-idx-missing": _raw(no_start),
        "length-missing": _raw(no_length),
        "tensor-payload-not-list": _raw(payload_not_list),
        "shape-payload-not-list": _raw(shapes_not_list),
        "shape-entry-without-shape": _raw(bad_shape_entry),
        "shape-not-integers": _raw(bad_shape_value),
    }


BAD = _bad_cases()


@pytest.mark.parametrize("data", list(BAD.values()), ids=list(BAD))
def test_rejects_with_where(data):
    with pytest.raises(IndexReaderException) as ei:
        decode_index(data, WHERE)
    assert WHERE in str(ei.value)
    assert WHERE in ei.value.message


def test_empty_event_file_name_keeps_the_entries():
    """1.0.34 lists such a step and its tensors; only reading a value fails (in the trial)."""
    d = _doc()
    d["meta"]["event_file_name"] = ""
    p = decode_index(_raw(d), WHERE)
    assert p.event_file_name is None
    assert p.tags == ("fc1.weight", "smdebug/reductions/mean/fc1.weight")
    assert (p.mode, p.mode_step) == (ModeKeys.EVAL, 5)


def test_escaping_message_names_the_path():
    with pytest.raises(IndexReaderException, match="outside") as ei:
        decode_index(BAD["event-file-absolute"], WHERE)
    assert "/etc/passwd" in str(ei.value)


def test_round_trip_encode_decode():
    meta = {"mode": "PREDICT", "mode_step": 12, "event_file_name": EVENT_KEY}
    tp = [{"tensorname": f"t{i}", "start_idx": 100 * i, "length": 100} for i in range(5)]
    sp = [{"tensorname": "t0", "originalname": "orig/t0", "shape": [5, 1]}]
    data = encode_index(meta, tp, sp)
    assert isinstance(data, bytes)
    assert json.loads(data) == {"meta": meta, "tensor_payload": tp, "shape_payload": sp}
    p = decode_index(data, WHERE)
    assert p.mode is ModeKeys.PREDICT
    assert p.mode_step == 12
    assert p.event_file_name == EVENT_KEY
    assert tuple(p.tags) == tuple(f"t{i}" for i in range(5))
    assert list(p.starts) == [0, 100, 200, 300, 400]
    assert list(p.lengths) == [100] * 5
    assert p.shapes == {"t0": ((5, 1), "orig/t0")}


def test_round_trip_matches_1034_bytes_layout():
    """encode_index of a 1.0.34 index's content decodes to the same ParsedIndex."""
    path = FIXTURES / "multi_worker_modes/index/000000000/000000000000_worker_0.json"
    raw = json.loads(path.read_bytes())
    ours = encode_index(raw["meta"], raw["tensor_payload"], raw["shape_payload"])
    assert json.loads(ours) == raw
    assert decode_index(ours, "ours") == decode_index(path.read_bytes(), "theirs")


def test_index_builder_writes_what_decode_index_reads_back_and_what_1_0_34_wrote():
    from smdebug.codec.index import IndexBuilder

    b = IndexBuilder()
    assert b.empty
    b.shapes_of(ModeKeys.TRAIN, 9)  # a shape before any record: the record's mode wins
    b.add_shape("fc1.weight", "fc1.weight", (2, 3))
    b.records_in(EVENT_KEY, ModeKeys.EVAL, 5)
    b.records_in("events/other.tfevents", ModeKeys.TRAIN, 6)  # the first record's file and mode stay
    b.add("fc1.weight", 0, 138)
    b.add("smdebug/reductions/mean/fc1.weight", 138, 120)
    assert json.loads(b.encode()) == _doc()  # the JSON 1.0.34 writes, key for key
    b.crcs = [7, 2**32 - 1]
    got = decode_index(b.encode(), WHERE)
    assert got == b.parsed()
    assert got.crcs == [7, 2**32 - 1] and got.shapes == {"fc1.weight": ((2, 3), "fc1.weight")}
    shapes_only = IndexBuilder()
    shapes_only.shapes_of(ModeKeys.TRAIN, 3)
    shapes_only.add_shape("w", "w:0", [4])
    assert json.loads(shapes_only.encode())["meta"] == {"mode": "TRAIN", "mode_step": 3}
    assert decode_index(shapes_only.encode(), WHERE) == shapes_only.parsed()


def test_only_codec_index_knows_the_index_json_keys():
    """The per-step index JSON has one owner: no module outside codec/index.py spells its keys."""
    from pathlib import Path

    import smdebug

    src = Path(smdebug.__file__).parent
    keys = ('"tensor_payload"', '"shape_payload"', '"start_idx"', '"tensorname"', '"originalname"')
    spelled = sorted(
        p.relative_to(src).as_posix()
        for p in src.rglob("*.py")
        if p.relative_to(src).as_posix() != "codec/index.py" and any(k in p.read_text() for k in keys)
    )
    assert spelled == []
