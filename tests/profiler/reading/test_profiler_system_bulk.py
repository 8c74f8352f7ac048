"""smdebug.profiler.reading.system_bulk: files written as a sampler writes them (one period of
metrics repeated) are read in bulk with numpy to the same columns as pyarrow's JSON reader gives,
numbers to the bit (long ones too: SageMaker's agent writes 17 digits); any other file gives None
and is read by the other paths, with their errors."""

from __future__ import annotations

import numpy as np
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from system_chunks import assert_same_chunks, json_path

from smdebug.profiler.reading import system_files as sf
from smdebug.profiler.reading.byte_columns import JoinedLines
from smdebug.profiler.reading.decimal_numbers import numbers
from smdebug.profiler.reading.system_bulk import bulk_system_columns
from smdebug.profiler.recording.system import format_rows

METRICS = [("cpu", f"cpu{i}", d) for i in range(3) for d in ("CPUUtilization", "I/OWaitPercentage")] + [
    ("gpu", "gpu0", "GPUUtilization"),
    ("memory", "MemoryUsedPercent", ""),
    ("network", "ReceiveBytesPerSecond", "Algorithm"),
]


def _file(samples=20, values=None, stamps=None, metrics=METRICS, node="algo-1") -> bytes:
    rng = np.random.default_rng(1)
    out = []
    for s in range(samples):
        t = stamps(s) if stamps else 1591748169.2323716 + 0.1 * s
        for j, (typ, name, dim) in enumerate(metrics):
            v = values(s, j) if values else round(float(rng.uniform(0, 100)), 2)
            out.append(
                orjson.dumps({"Type": typ, "Name": name, "Dimension": dim, "Value": v, "NodeId": node, "Timestamp": t})
            )
    return b"\n".join(out) + b"\n"


def _bulk(data: bytes):
    cols = bulk_system_columns(data, len(data.rstrip()))
    return None if cols is None else sf._group(cols)


@pytest.mark.parametrize(
    "case",
    [
        "agent: 17-digit times",
        "sampler",
        "integers and negatives",
        "one sample",
        "unicode names",
        "two nodes' files alike",
    ],
)
def test_sampler_files_are_read_in_bulk_as_the_json_reader_reads_them(case):
    data = {
        "agent: 17-digit times": lambda: _file(),
        "sampler": lambda: b"".join(
            format_rows(
                [(t, n, d, 100 * (i + 1) / 7) for i, (t, n, d) in enumerate(METRICS)],
                "algo-1",
                1795812746.2738712 + 0.5 * s,
            )
            for s in range(30)
        ),
        "integers and negatives": lambda: _file(values=lambda s, j: (-1) ** j * (s * 10 + j) if j % 2 else -0.5 * s),
        "one sample": lambda: _file(samples=1),
        "unicode names": lambda: _file(metrics=[("cpu", "c\u00e9\u4e2d", "d\u00e9"), ("gpu", "g", "")]),
        "two nodes' files alike": lambda: _file(node="algo-2"),
    }[case]()
    bulk = _bulk(data)
    assert bulk is not None
    assert_same_chunks(bulk, json_path(data))
    assert_same_chunks(sf.parse_system_file(data, "x"), json_path(data))


@pytest.mark.parametrize(
    "case",
    [
        "exponent",
        "metric out of turn",
        "another key order",
        "missing Name",
        "escape",
        "spaces",
        "crlf",
        "control character",
        "more than 18 digits",
    ],
)
def test_other_files_are_left_to_the_other_readers_with_the_same_result(case):
    lines = _file(samples=5).rstrip().split(b"\n")
    if case == "exponent":
        lines[7] = orjson.dumps({**orjson.loads(lines[7]), "Value": 1e-10})
        assert b"e-10" in lines[7]
    elif case == "metric out of turn":
        lines[12], lines[13] = lines[13], lines[12]
    elif case == "another key order":
        row = orjson.loads(lines[3])
        lines[3] = orjson.dumps({k: row[k] for k in ("Name", "Type", "Dimension", "Value", "NodeId", "Timestamp")})
    elif case == "missing Name":
        row = orjson.loads(lines[3])
        del row["Name"]
        lines[3] = orjson.dumps(row)
    elif case == "escape":
        lines = [line.replace(b'"cpu0"', b'"c\\"pu0"') for line in lines]
    elif case == "spaces":
        lines = [line.replace(b'","', b'", "') for line in lines]
    elif case == "crlf":
        lines = [line + b"\r" for line in lines]
    elif case == "control character":
        lines = [line.replace(b'"cpu0"', b'"cpu\x010"') for line in lines]
    elif case == "more than 18 digits":
        lines[4] = lines[4].replace(b'"Timestamp":1591748169.', b'"Timestamp":1591748169.123456789012')
    data = b"\n".join(lines) + b"\n"
    assert _bulk(data) is None
    if case == "control character":  # not JSON: named as before
        with pytest.raises(Exception, match="x"):
            sf.parse_system_file(data, "x")
        return
    assert_same_chunks(sf.parse_system_file(data, "x"), json_path(data))


def test_a_half_written_last_line_is_left_out_in_bulk_too():
    data = _file(samples=4)
    cut = data[:-25]  # the last line cut mid-number
    full = _bulk(data)
    part = _bulk(cut)
    assert part is not None and part.rows == full.rows - 1
    assert_same_chunks(part, sf.parse_system_file(cut, "x"))


def test_numbers_halfway_between_two_doubles_are_read_to_the_bit():
    # 2**53 + 1 (a 16-digit integer) and decimals whose long-double quotient may round twice
    texts = [
        b"9007199254740993",
        b"9007199254740993.0",
        b"1591748169.2323716",
        b"0.30000000000000004",
        b"-123456789012345.67",
        b"1.5",
        b"0",
        b"-0.0",
        b"7",
    ]
    texts += [f"{1591748169 + k * 0.0000001:.7f}".encode() for k in range(3000)]
    lines = JoinedLines([b"\n".join(texts)], [len(b"\n".join(texts))])
    starts = np.array([0] + [i + 1 for i, c in enumerate(lines.big[: lines.size]) if c == 10][:-1], dtype=np.int64)
    value, length, ok = numbers(lines, starts)
    assert ok.all()
    assert [v for v in value.tolist()] == [float(t) for t in texts]
    assert (length == [len(t) for t in texts]).all()


_names = st.text(st.characters(min_codepoint=32, max_codepoint=0x2FF, blacklist_characters='"\\'), max_size=12)
_numbers = st.one_of(
    st.integers(-(10**15), 10**15),
    st.floats(-1e15, 1e15, allow_nan=False).map(lambda v: round(v, 3)),
    st.floats(1e9, 2e9).map(lambda v: round(v, 7)),
)


@settings(max_examples=150, deadline=None)
@given(
    metrics=st.lists(st.tuples(_names, _names, _names), min_size=1, max_size=6, unique=True),
    samples=st.integers(1, 5),
    data=st.data(),
)
def test_bulk_reads_what_the_json_reader_reads(metrics, samples, data):
    rows = []
    for _ in range(samples):
        for typ, name, dim in metrics:
            rows.append(
                orjson.dumps(
                    {
                        "Type": typ,
                        "Name": name,
                        "Dimension": dim,
                        "Value": data.draw(_numbers),
                        "NodeId": "algo-1",
                        "Timestamp": data.draw(_numbers),
                    }
                )
            )
    text = b"\n".join(rows) + b"\n"
    bulk = _bulk(text)
    if bulk is not None:  # None: an exponent or 17+ digits orjson wrote; read by the other paths
        assert_same_chunks(bulk, json_path(text))
    assert_same_chunks(sf.parse_system_file(text, "x"), json_path(text))


@pytest.mark.parametrize(
    "case",
    [
        "two nodes in a file",
        "a name longer than a row",
        "a metric twice in a sample",
        "a sample cut short",
        "one line",
        "a sample of 100 metrics",
        "one sample of 100 metrics",
        "different time lengths",
    ],
)
def test_layouts_the_bulk_reader_reads_in_other_ways_give_the_json_readers_columns(case):
    data = {
        # the texts between the numbers differ in length: compared apart from the times
        "two nodes in a file": lambda: b"".join(
            a + b for a, b in zip(_file().splitlines(True), _file(node="algo-10").splitlines(True))
        ),
        # a template wider than the 128 bytes read from a line at a time
        "a name longer than a row": lambda: _file(metrics=[("cpu", "c" * 150, "d"), ("gpu", "g", "")]),
        # two templates with one key: grouped by sorting, not by slicing
        "a metric twice in a sample": lambda: _file(metrics=METRICS[:3] + METRICS[1:2]),
        "a sample cut short": lambda: _file().rsplit(b"\n", 4)[0] + b"\n",
        "one line": lambda: _file(samples=1, metrics=METRICS[:1]),
        "a sample of 100 metrics": lambda: _file(samples=3, metrics=[("cpu", f"cpu{i}", "d") for i in range(100)]),
        "one sample of 100 metrics": lambda: _file(samples=1, metrics=[("cpu", f"cpu{i}", "d") for i in range(100)]),
        "different time lengths": lambda: _file(stamps=lambda s: [1591748169.5, 1591748169.25, 1591748170, 15][s % 4]),
    }[case]()
    bulk = _bulk(data)
    assert bulk is not None
    assert_same_chunks(bulk, json_path(data))


def test_a_nodes_next_files_reuse_its_layout_and_are_still_checked_line_by_line(monkeypatch):
    from smdebug.profiler.reading import system_bulk as sb

    monkeypatch.setattr(sb, "_LAYOUTS", {})
    first, second = _file(), _file(values=lambda s, j: s * 100 + j)
    assert_same_chunks(_bulk(first), json_path(first))
    layout = next(iter(sb._LAYOUTS.values()))
    assert_same_chunks(_bulk(second), json_path(second))
    assert list(sb._LAYOUTS.values()) == [layout]  # the same templates: one layout
    # the first sample of a file whose templates were seen is checked as the others are
    lines = second.split(b"\n")
    lines[2] = lines[2].replace(b'"Value":', b'"Value":true,"x":')
    assert _bulk(b"\n".join(lines)) is None
    # a file whose first sample does not decode as a layout leaves no layout behind
    monkeypatch.setattr(sb, "_LAYOUTS", {})
    bad = first.replace(b'"Value":', b'"Value":"1",', 1)
    assert _bulk(bad) is None and sb._LAYOUTS == {}
    assert _bulk(first) is not None and len(sb._LAYOUTS) == 1


def test_the_rows_near_the_end_of_a_file_are_read_from_a_padded_copy():
    from smdebug.profiler.reading import system_bulk as sb

    data = b"0123456789" * 30 + b"tail"
    text = sb._Text(data, len(data) - 2)
    at = np.array([0, 250, 290, 296, len(data) - 2])
    rows = text.rows(at, 24)
    for a, row in zip(at.tolist(), rows):  # up to the end of the lines, a newline, then zeros
        expected = (data[: len(data) - 2] + b"\n" + bytes(64))[a : a + 24]
        assert row.tobytes() == expected
    short = sb._Text(b'{"a":1}', 7)  # shorter than a row
    assert short.rows(np.array([0, 3]), 16).tobytes() == b'{"a":1}\n' + bytes(8) + b'":1}\n' + bytes(11)
