"""The trial's decoder of index files (codec.index.IndexDecoder): decode_index's results and errors,
parsing only the meta section of a file whose payload sections it decoded before; and the index
state's shared columns (a layout's files share their starts and lengths while they are equal)."""

from __future__ import annotations

import json

import orjson
import pytest

from smdebug.codec.index import IndexDecoder, ParsedIndex, decode_index
from smdebug.core.modes import ModeKeys
from smdebug.exceptions import IndexReaderException
from smdebug.trials.index_state import IndexState

PAYLOAD = {
    "tensor_payload": [{"tensorname": f"t{i}", "start_idx": 100 * i, "length": 100} for i in range(3)],
    "shape_payload": [],
}
# the payload's bytes as 1.0.34 writes them (json.dumps: ", " and ": "), after the meta's comma
TAIL = json.dumps(PAYLOAD)[1:]


def _meta(step: int, mode: str = "TRAIN") -> dict:
    return {"mode": mode, "mode_step": step, "event_file_name": f"events/{step:012d}/{step:012d}_worker_0.tfevents"}


def _file(head: str, tail: str = TAIL) -> bytes:
    """``head`` + "," + ``tail``: head is '{"meta": ...' (no closing brace)."""
    return f"{head},{tail}".encode()


def _good(step: int) -> bytes:
    return _file('{"meta": ' + json.dumps(_meta(step)))


def _outcome(decode, data: bytes):
    try:
        return decode(data, "idx.json")
    except IndexReaderException as exc:
        return f"IndexReaderException: {exc}"


def _decoder_outcome(data: bytes, primed: list[bytes]):
    dec = IndexDecoder()
    for p in primed:  # twice: the second match makes the payload usable
        _outcome(dec.decode, p)
        _outcome(dec.decode, p)
    return _outcome(dec.decode, data)


@pytest.mark.parametrize("compact", [False, True], ids=["1.0.34 layout", "orjson layout"])
def test_files_of_one_payload_parse_only_their_meta(compact):
    if compact:
        files = [orjson.dumps({"meta": _meta(s, "EVAL" if s % 2 else "TRAIN"), **PAYLOAD}) for s in range(6)]
    else:
        files = [_file('{"meta": ' + json.dumps(_meta(s, "EVAL" if s % 2 else "TRAIN"))) for s in range(6)]
    dec = IndexDecoder()
    parsed = [dec.decode(f, "idx.json") for f in files]
    assert parsed == [decode_index(f, "idx.json") for f in files]
    assert [p.mode_step for p in parsed] == list(range(6))
    assert [p.mode for p in parsed] == [ModeKeys.EVAL if s % 2 else ModeKeys.TRAIN for s in range(6)]
    # the later files took the first one's payload: its lists, not parsed again
    assert all(p.tags is parsed[0].tags and p.starts is parsed[0].starts for p in parsed[2:])


HEADS = {
    "meta empty": '{"meta": {}',
    "meta null": '{"meta": null',
    "meta a list": '{"meta": [1]',
    "bad mode": '{"meta": {"mode": "NOPE", "mode_step": 0, "event_file_name": "events/a.tfevents"}',
    "no mode_step": '{"meta": {"mode": "TRAIN", "event_file_name": "events/a.tfevents"}',
    "mode_step float": '{"meta": {"mode": "TRAIN", "mode_step": 1.5, "event_file_name": "events/a.tfevents"}',
    "mode_step true": '{"meta": {"mode": "TRAIN", "mode_step": true, "event_file_name": "events/a.tfevents"}',
    "event file outside": '{"meta": {"mode": "TRAIN", "mode_step": 2, "event_file_name": "../../a.tfevents"}',
    "event file empty": '{"meta": {"mode": "TRAIN", "mode_step": 2, "event_file_name": ""}',
    "event file missing": '{"meta": {"mode": "TRAIN", "mode_step": 2}',
    "another member first": '{"x": 1, "meta": ' + json.dumps(_meta(7)),
    "payload before meta": '{"shape_payload": [{"tensorname": "s", "shape": [2]}], "meta": ' + json.dumps(_meta(7)),
    "meta twice": '{"meta": ' + json.dumps(_meta(7)) + ', "meta": ' + json.dumps(_meta(8, "EVAL")),
    "tensor_payload inside meta": '{"meta": {"mode": "TRAIN", "mode_step": 2, "tensor_payload": []}',
    "not JSON": '{"meta": {"mode": "TRAIN", "mode_step": 2,,}',
    "top level array": '[{"meta": ' + json.dumps(_meta(7)),
    "escaped quote": '{"meta": {"mode": "TRAIN", "mode_step": 2, "x": "\\"tensor_payload\\", ", '
    '"event_file_name": "events/a.tfevents"}',
}


@pytest.mark.parametrize("head", list(HEADS.values()), ids=list(HEADS))
def test_a_known_payload_under_any_head_decodes_as_decode_index_does(head):
    data = _file(head)
    assert _decoder_outcome(data, [_good(0), _good(1)]) == _outcome(decode_index, data)


TAILS = {
    "meta again at the end": TAIL[:-1] + ', "meta": ' + json.dumps(_meta(9, "EVAL")) + "}",
    "meta again, escaped": TAIL[:-1] + ', "m\\u0065ta": ' + json.dumps(_meta(9, "EVAL")) + "}",
    "an entry without length": TAIL.replace(', "length": 100}', "}", 1),
    "a tensorname not a string": TAIL.replace('"t1"', "1", 1),
    "trailing bytes": TAIL + " x",
    "a bad shape": TAIL.replace('"shape_payload": []', '"shape_payload": [{"tensorname": "s", "shape": [-1]}]'),
    "no tensor entries": ' "tensor_payload": [], "shape_payload": []}',
    "no shape_payload": TAIL.replace(', "shape_payload": []', ""),
}


@pytest.mark.parametrize("tail", list(TAILS.values()), ids=list(TAILS))
def test_any_payload_decodes_as_decode_index_does(tail):
    heads = ['{"meta": ' + json.dumps(_meta(s)) for s in range(3)] + list(HEADS.values())
    for head in heads:  # each file with this payload, after files with the same payload and other heads
        data = _file(head, tail)
        primed = [_file('{"meta": ' + json.dumps(_meta(s)), tail) for s in (10, 11)]
        assert _decoder_outcome(data, primed) == _outcome(decode_index, data), head


def test_limits_keep_results_equal():
    payloads = [TAIL.replace('"t0"', f'"x{i}"') for i in range(4)]
    files = [_file('{"meta": ' + json.dumps(_meta(s)), payloads[s % 4]) for s in range(12)]
    small = len(_file("", payloads[0])) + 10  # one payload's bytes
    for dec in (IndexDecoder(keep=2), IndexDecoder(keep_bytes=small), IndexDecoder(give_up=3), IndexDecoder()):
        assert [dec.decode(f, "idx.json") for f in files] == [decode_index(f, "idx.json") for f in files]
    dec = IndexDecoder(give_up=3)  # three different payloads in a row: it no longer looks
    parsed = [dec.decode(f, "idx.json") for f in files]
    assert parsed[4].tags is not parsed[0].tags
    dec = IndexDecoder(keep=3)  # four payloads in turn: each is gone when it comes again
    parsed = [dec.decode(f, "idx.json") for f in files]
    assert parsed[8].tags is not parsed[4].tags
    dec = IndexDecoder()
    parsed = [dec.decode(f, "idx.json") for f in files]
    assert parsed[8].tags is parsed[4].tags


def _parsed(starts: list, lengths: list) -> ParsedIndex:
    tags = tuple(f"t{i}" for i in range(len(starts)))
    return ParsedIndex(ModeKeys.TRAIN, 0, "events/a.tfevents", tags, starts, lengths, {})


def test_a_layouts_files_share_equal_columns_of_whole_numbers_only():
    state = IndexState()
    first = state.add("index/a.json", 0, "worker_0", _parsed([0, 100], [100, 100]), "a.json")
    same = state.add("index/b.json", 1, "worker_0", _parsed([0, 100], [100, 100]), "b.json")
    assert same.starts is first.starts and same.lengths is first.lengths
    assert same.location(1, "b.json") == (100, 100)
    other = state.add("index/c.json", 2, "worker_0", _parsed([0, 120], [120, 100]), "c.json")
    assert other.location(1, "c.json") == (120, 100)
    # false == 0 and 0.0 == 0: equal as numbers to the shared column, but not whole numbers
    for bad_start in (False, 0.0):
        f = state.add("index/d.json", 3, "worker_0", _parsed([bad_start, 120], [120, 100]), "d.json")
        with pytest.raises(IndexReaderException, match="bad record location"):
            f.location(0, "d.json")
        assert f.location(1, "d.json") == (120, 100)
    f = state.add("index/e.json", 4, "worker_0", _parsed([0, 120], [True, 100]), "e.json")
    with pytest.raises(IndexReaderException, match="bad record location"):
        f.location(0, "e.json")
