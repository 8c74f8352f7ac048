"""smdebug.profiler.reading.trace_bulk: the bulk path reads framework timeline files to the same
columns and args as the general (orjson) reader, on 1.0.34's own files, on files our writer
writes and on odd files; a file it does not take is left to the general reader, which reports
what is wrong."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from smdebug.exceptions import EventFileCorrupt
from smdebug.profiler.reading.trace_bulk import parse_trace_batch
from smdebug.profiler.reading.trace_files import parse_trace_file
from smdebug.profiler.recording.timeline import TimelineWriter

FIXTURES = Path(__file__).parents[1] / "fixtures" / "sagemaker-debugger"
COLUMNS = ("phase", "name", "start_us", "end_us", "step", "node_id", "pid", "tid", "phase_pid", "file_suffix")
BASE = 1_790_000_040_000_000


def _same(bulk, general) -> None:
    assert len(bulk) == len(general)
    for c in COLUMNS:
        a, b = getattr(bulk, c), getattr(general, c)
        assert (a is None and b is None) or (a.dtype == b.dtype and a.tolist() == b.tolist()), c
    assert list(bulk.args) == list(general.args)
    assert [bulk.args[i] for i in range(len(bulk))] == list(general.args)  # one at a time too


def _both(data: bytes, suffix="pythontimeline.json"):
    bulk = parse_trace_batch([data], ["algo-1"], [suffix])[0]
    return bulk, parse_trace_file(data, "f.json", "algo-1", suffix)


def _meta(spaced=False) -> list[dict]:
    return [
        {"name": "process_name", "ph": "M", "pid": 0, "args": {"start_time_since_epoch_in_micros": BASE}},
        {"name": "process_sort_index", "ph": "M", "pid": 0, "args": {"sort_index": 0}},
        {"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "Step:ModeKeys.TRAIN"}},
        {"name": "process_name", "ph": "M", "pid": 2, "args": {"name": "Forward"}},
    ]


def _event(i: int, **over) -> dict:
    ev = {
        "name": "Net" if i % 2 else "Step:ModeKeys.TRAIN",
        "ph": "X",
        "pid": 1 + i % 2,
        "ts": 1000 * i + 7,
        "dur": 500 + (i * 37) % 400,
        "args": {"pid": 4242, "step_num": str(i // 2)},
    }
    ev.update(over)
    return {k: v for k, v in ev.items() if v is not None}


def _file(events: list[dict], spaced=False, meta=True) -> bytes:
    dump = (lambda e: json.dumps(e).encode()) if spaced else orjson.dumps
    return b"[\n" + b",\n".join(dump(e) for e in (_meta() if meta else []) + events) + b"\n]\n"


@pytest.mark.parametrize("path", sorted((FIXTURES).glob("*/framework/pevents/*/*.json")), ids=lambda p: p.name)
def test_1034s_own_files_read_the_same_in_bulk(path):
    data = path.read_bytes()
    bulk, general = _both(data, path.name.split("_", 2)[-1])
    if "horovod" in path.name:  # B/E pairs and instant events: the general reader's
        assert bulk is None
    else:
        assert bulk is not None and len(general) > 0
        _same(bulk, general)


def test_files_our_writer_writes_read_the_same_in_bulk(tmp_path):
    w = TimelineWriter(str(tmp_path), "algo-1", max_bytes=4000)
    t0 = w.base_us + 10
    for i in range(120):
        args = [
            {"pid": 7, "step_num": str(i)},
            {"pid": 7},
            None,
            {"pid": 7, "step_num": str(i), "worker": i % 3, "layer": "conv:1"},
        ][i % 4]
        w.complete(
            ["Step:ModeKeys.TRAIN", "DataLoaderIter", "Forward"][i % 3],
            f"event é,{i % 5}",
            t0 + 100 * i,
            t0 + 100 * i + 150 - i % 7,
            args,
        )
    w.close()
    assert len(w.files) > 3
    datas = [Path(f).read_bytes() for f in w.files]
    got = parse_trace_batch(datas, ["algo-1"] * len(datas), ["pythontimeline.json"] * len(datas))
    assert all(ev is not None for ev in got)
    for ev, data in zip(got, datas):
        _same(ev, parse_trace_file(data, "f.json", "algo-1", "pythontimeline.json"))


ODD = {  # (events, spaced, taken by the bulk path)
    "1.0.34's separators": ([_event(i) for i in range(9)], True, True),
    "another key order": (
        [{"ts": 10 * i, "dur": 3, "ph": "X", "pid": 1, "name": f"n{i}", "args": {"step_num": i}} for i in range(9)],
        False,
        True,
    ),
    "no args at all": ([_event(i, args=None) for i in range(9)], False, True),
    "args of several shapes": (
        [
            _event(
                i,
                args=[
                    {"pid": 1},
                    None,
                    {},
                    {"step_num": "007"},
                    {"step_num": " 5"},
                    {"step_num": "x"},
                    {"step_num": 5.5},
                    {"a": {"b": [1, 2]}},
                    {"pid": "12"},
                ][i % 9],
            )
            for i in range(27)
        ],
        False,
        True,
    ),
    "nested args in the first event": ([_event(i, args={"a": [i]}) for i in range(5)], True, True),
    "names with separators and unicode": (
        [_event(i, name=["a:b", "c,d", "{e}", "[f]", "g h", "ü∂", ""][i % 7]) for i in range(14)],
        False,
        True,
    ),
    "a tid and another key": (
        [
            {
                "name": "n",
                "cat": "python",
                "ph": "X",
                "pid": 1,
                "tid": i % 3,
                "ts": i,
                "dur": 2,
                "args": {"thread_id": 9},
            }
            for i in range(6)
        ],
        False,
        True,
    ),
    "args before other keys": ([_event(i, tid=i % 3) for i in range(3)], False, False),
    "metadata after events": (
        [_event(0, pid=3), {"name": "process_name", "ph": "M", "pid": 3, "args": {"name": "Late"}}, _event(1, pid=3)],
        False,
        True,
    ),
    "a pid announced again under another name": (
        [_event(0), {"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "Again"}}, _event(1), _event(2)],
        False,
        True,
    ),
    "the time base changes": (
        [
            _event(0),
            {"name": "process_name", "ph": "M", "pid": 0, "args": {"start_time_since_epoch_in_micros": 5}},
            _event(1),
        ],
        False,
        True,
    ),
    "events out of order": ([_event(i, ts=(7 - i) * 10) for i in range(8)], False, True),
    "many names": ([_event(i, name=f"op/{i % 150}") for i in range(400)], False, True),
    "escaped names": ([_event(i, name='say "hi"') for i in range(3)], False, False),
    "a float time": ([_event(0), _event(1, ts=12.5)], False, False),
    "a negative duration": ([_event(0), _event(1, dur=-3)], False, False),
    "a leading zero step": ([_event(i, args={"step_num": "0" + str(i)}) for i in range(3)], False, True),
    "B and E events": (
        [_event(0), {"name": "b", "ph": "B", "pid": 1, "ts": 5}, {"name": "b", "ph": "E", "pid": 1, "ts": 9}],
        False,
        False,
    ),
    "an instant event": ([_event(0), {"name": "i", "ph": "i", "pid": 1, "ts": 5, "s": "t"}], False, False),
    "mixed key orders": ([_event(0), {"ph": "X", "name": "a", "pid": 1, "ts": 1, "dur": 2}], False, False),
    "a pid named by a string": ([_event(0, pid="main")], False, False),
    # read from both ends, the name of this line would hold '","cat":"x': its quotes reject it
    "a key between the name and the others": (
        [_event(0), {"name": "n", "cat": "x", **_event(1, name=None)}],
        False,
        False,
    ),
    "long and short names and numbers": (
        [
            _event(
                i,
                name="x" * (i * 7 % 45),
                ts=10 ** (i % 18),
                dur=i * 99991 % 10**9,
                args={"pid": 10 ** (i % 17), "step_num": str(10 ** (i % 18))},
            )
            for i in range(40)
        ],
        True,
        True,
    ),
}


@pytest.mark.parametrize("case", sorted(ODD))
def test_odd_files_read_the_same_or_go_to_the_general_reader(case):
    events, spaced, bulk_reads = ODD[case]
    bulk, general = _both(_file(events, spaced))
    assert (bulk is not None) == bulk_reads
    if bulk is not None:
        _same(bulk, general)


@pytest.mark.parametrize(
    "layout",
    [
        "truncated",
        "leading zero",
        "crlf",
        "object form",
        "one line",
        "empty",
        "control character",
        "bad utf-8",
        "a huge time",
    ],
)
def test_layouts_the_bulk_path_leaves_to_the_general_reader(layout):
    data = _file([_event(i) for i in range(4)])
    data = {
        "truncated": data[:-30],
        "leading zero": data.replace(b'"ts":7,', b'"ts":07,'),
        "a huge time": data.replace(b'"ts":7,', b'"ts":12345678901234567890,'),
        "crlf": data.replace(b"\n", b"\r\n"),
        "object form": b'{"traceEvents": ' + data + b"}",
        "one line": data.replace(b",\n", b","),
        "empty": b"[\n]\n",
        "control character": data.replace(b"Net", b"N\tt"),
        "bad utf-8": data.replace(b"Net", b"N\xfft"),
    }[layout]
    assert parse_trace_batch([data], ["algo-1"], ["pythontimeline.json"])[0] is None
    if layout in ("truncated", "leading zero", "control character", "bad utf-8", "a huge time"):
        with pytest.raises(EventFileCorrupt, match=r"^f\.json: "):
            parse_trace_file(data, "f.json", "algo-1", "pythontimeline.json")


def test_events_whose_args_differ_from_the_first_events_are_read_in_bulk_too(monkeypatch):
    from smdebug.profiler.reading import trace_bulk

    decoded = []
    monkeypatch.setattr(
        trace_bulk,
        "orjson",
        SimpleNamespace(
            loads=lambda raw: decoded.append(raw) or orjson.loads(raw), JSONDecodeError=orjson.JSONDecodeError
        ),
    )
    events = (
        [_event(0, args={"pid": 1})]
        + [_event(i) for i in range(1, 120)]
        + [_event(i, args={"x": "y"}) for i in range(3)]
    )
    bulk, general = _both(_file(events))
    _same(bulk, general)
    assert len(decoded) == 3  # only the few of a third shape, one by one


def test_a_batch_of_files_of_several_styles_reads_each_as_alone():
    files = [
        _file([_event(i) for i in range(5)]),
        _file([_event(i) for i in range(4)], spaced=True),
        _file([_event(0), _event(1, ts=1.5)]),
        b"[\n{",
        _file([_event(i, args=None) for i in range(3)]),
        _file([], meta=True),
        _file([_event(i, ts=i) for i in range(70)]),
    ]
    got = parse_trace_batch(files, [f"algo-{i}" for i in range(len(files))], ["pythontimeline.json"] * len(files))
    assert [ev is None for ev in got] == [False, False, True, True, False, False, False]
    for i, (ev, data) in enumerate(zip(got, files)):
        if ev is not None:
            _same(ev, parse_trace_file(data, "f.json", f"algo-{i}", "pythontimeline.json"))
    assert len(got[5]) == 0


_names = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
_args = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {"pid": st.integers(0, 99999)},
        optional={"step_num": st.integers(0, 10**6).map(str), "thread_id": st.integers(0, 99), "tag": _names},
    ),
)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(_names, st.integers(1, 3), st.integers(0, 10**12), st.integers(0, 10**7), _args),
        min_size=1,
        max_size=12,
    ),
    st.booleans(),
)
def test_any_file_of_complete_events_reads_the_same(rows, spaced):
    events = [
        {"name": n, "ph": "X", "pid": p, "ts": ts, "dur": d, **({"args": a} if a is not None else {})}
        for n, p, ts, d, a in rows
    ]
    data = _file(events, spaced)
    bulk, general = _both(data)
    plain = all('"' not in n and "\\" not in n and n.isprintable() for n, *_ in rows) and not spaced
    plain &= all(
        a is None or '"' not in a.get("tag", "") and "\\" not in a.get("tag", "") and a.get("tag", "").isprintable()
        for *_, a in rows
    )
    if plain:  # nothing to escape: the bulk path reads what our writer writes
        assert bulk is not None
    if bulk is not None:
        _same(bulk, general)


def test_a_short_odd_line_first_in_a_batch_stays_in_the_buffer():
    """Lines are read back from their end: an odd line at the very start of the joined bytes
    does not read outside them, and its file goes to the general reader."""
    good = _file([_event(i) for i in range(5)])
    got = parse_trace_batch([b"[\n{}\n]", b"[\n1\n]", good], ["algo-1"] * 3, ["pythontimeline.json"] * 3)
    assert got[0] is None and got[1] is None
    _same(got[2], parse_trace_file(good, "f.json", "algo-1", "pythontimeline.json"))


@pytest.mark.parametrize("span", [10, 2**61])
def test_events_are_sorted_by_file_then_start_as_by_lexsort(span):
    from smdebug.profiler.reading.trace_bulk import _by_file_then_start

    rng = np.random.default_rng(5)
    fx = np.sort(rng.integers(0, 7, 500))
    ts = rng.integers(-span, span, 500)
    assert _by_file_then_start(fx, ts).tolist() == np.lexsort((ts, fx)).tolist()


def test_digits_are_read_eight_at_a_time_up_to_18():
    from smdebug.profiler.reading.byte_columns import JoinedLines

    texts = [
        b"0",
        b"7",
        b"42,",
        b"12345678",
        b"123456789",
        b"1234567890123456",
        b"12345678901234567",
        b"999999999999999999",
        b"3.5",
        b"1234567890123456789",
        b"007",
        b"",
        b"-5",
        b"x1",
    ]
    data = b"\n".join(texts)
    b = JoinedLines([data], [len(data)])
    pos = np.cumsum([0] + [len(t) + 1 for t in texts[:-1]])
    value, n, ok = b.digits(pos)
    assert ok.tolist() == [True] * 9 + [False] * 5
    assert value[:9].tolist() == [
        0,
        7,
        42,
        12345678,
        123456789,
        1234567890123456,
        12345678901234567,
        999999999999999999,
        3,
    ]
    assert n[:9].tolist() == [1, 1, 2, 8, 9, 16, 17, 18, 1]
    value, n, ok = b.digits(pos[10:11], strict=False)  # "007" as a step_num string
    assert ok.tolist() == [True] and n.tolist() == [3] and value.tolist() == [7]


@pytest.mark.parametrize(
    ("name", "node"),
    [
        ("1_1-algo-1_pythontimeline.json", "algo-1-1"),
        ("1_a-algo-b-algo-c_model_timeline.json", "algo-c-a-algo-b"),
        ("1_4487_0000_pythontimeline.json", "4487"),
        ("1_-algo_x.json", "algo-"),
        ("1_algo-2_x.json", "algo-2"),
        ("1_x\n-algo-1_x.json", "x\n-algo-1"),
    ],
)
def test_node_ids_from_file_names_as_1034_reads_them(name, node):
    from smdebug.profiler.reading.trace_files import node_id_from_trace_name

    assert node_id_from_trace_name(name) == node  # 1.0.34: re.match(r"(.*)-(algo.*)", node)
