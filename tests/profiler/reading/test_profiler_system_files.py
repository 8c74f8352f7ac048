"""smdebug.profiler.reading.system_files: the bulk path (CSV split) and the JSON path read every
variant of a system file to the same columns; lines that do not fit the bulk path go to the JSON
reader, which reports what is wrong."""

from __future__ import annotations

import orjson
import pytest
from system_chunks import assert_same_chunks, json_path

from smdebug.exceptions import EventFileCorrupt
from smdebug.profiler.reading import system_files as sf


def _lines(n=40, order=("Type", "Name", "Dimension", "Value", "NodeId", "Timestamp"), sep=b",", colon=b":", **over):
    out = []
    for i in range(n):
        row = {
            "Type": "cpu",
            "Name": f"cpu{i % 4}",
            "Dimension": "CPUUtilization",
            "Value": round(i * 1.37 % 100, 2),
            "NodeId": "algo-1",
            "Timestamp": 1591160699.4570894 + i * 0.1,
        }
        row.update({k: (v(i) if callable(v) else v) for k, v in over.items()})
        parts = [orjson.dumps(k) + colon + orjson.dumps(row[k]) for k in order if k in row]
        out.append(b"{" + sep.join(parts) + b"}")
    return out


VARIANTS = {
    "compact": _lines(),
    "spaces as 1.0.34's resources": _lines(sep=b", ", colon=b": "),
    "another key order": _lines(order=("Timestamp", "NodeId", "Value", "Dimension", "Name", "Type")),
    "integer values": _lines(Value=lambda i: i),
    "two nodes and escapes": _lines(NodeId=lambda i: f"algo-{1 + i % 2}", Name=lambda i: f"n\u00e9{i % 3}"),
    "crlf": [line + b"\r" for line in _lines()],
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_the_bulk_path_reads_as_the_json_path(variant):
    data = b"\n".join(VARIANTS[variant]) + b"\n"
    fast = sf._fast_columns(data, len(data.rstrip()))
    assert fast is not None  # these all fit the bulk path
    assert_same_chunks(sf._group(fast), json_path(data))
    assert_same_chunks(sf.parse_system_file(data, "x"), json_path(data))


@pytest.mark.parametrize("variant", ["a name with a colon", "a missing Name", "a comma in a name", "mixed key orders"])
def test_lines_that_do_not_fit_the_bulk_path_are_read_by_the_json_path(variant):
    lines = {
        "a name with a colon": _lines(Name=lambda i: f"gpu:{i % 2}"),
        "a missing Name": _lines()[:5] + _lines(order=("Type", "Dimension", "Value", "NodeId", "Timestamp"))[5:],
        "a comma in a name": _lines(Dimension=lambda i: "a,b"),
        "mixed key orders": _lines()[:5]
        + _lines(order=("Type", "Name", "Dimension", "Timestamp", "NodeId", "Value"))[5:],
    }[variant]
    data = b"\n".join(lines) + b"\n"
    assert sf._fast_columns(data, len(data.rstrip())) is None
    chunk = sf.parse_system_file(data, "x")
    assert chunk.rows == len(lines)
    assert_same_chunks(chunk, json_path(data))


def test_a_half_written_last_line_is_skipped_on_both_paths_and_a_bad_middle_line_is_named():
    lines = _lines()
    data = b"\n".join(lines) + b"\n" + lines[0][:30]
    assert sf.parse_system_file(data, "x").rows == len(lines)
    bad = b"\n".join(lines[:7] + [b'{"Type": "cpu", "Value": nul'] + lines[7:]) + b"\n"
    with pytest.raises(EventFileCorrupt, match=r"^f\.json: line 8 "):
        sf.parse_system_file(bad, "f.json")
    missing = (
        b"\n".join(lines[:3] + [b'{"Type":"cpu","Name":"cpu0","Value":1,"NodeId":"algo-1","Timestamp":2}']) + b"\n"
    )
    with pytest.raises(EventFileCorrupt, match=r"line 4 has no 'Dimension'"):
        sf.parse_system_file(missing, "f.json")
