"""One system-metrics file (JSON Lines, 1.0.34's / SageMaker's agent's format) into columns.

A line is ``{"Type":"cpu","Name":"cpu0","Dimension":"CPUUtilization","Value":4.76,
"NodeId":"algo-1","Timestamp":1591160699.457}``. The file is decoded by pyarrow's JSON reader in
one call (no Python object per row) and split into one column pair per
``(NodeId, Type, Name, Dimension)``. As 1.0.34: a corrupt **last** line (a file still being
written) is skipped; a corrupt line elsewhere raises :class:`~smdebug.exceptions.EventFileCorrupt`
naming the file and the line. ``Name`` may be absent (kept as ``""``); the other keys are required.
"""

from __future__ import annotations

import io
import logging
import re
from dataclasses import dataclass

import numpy as np
import orjson

from smdebug.exceptions import EventFileCorrupt, MissingDependency

__all__ = ["SystemChunk", "parse_system_file", "system_file_info", "SYSTEM_FILE_RE"]

logger = logging.getLogger("smdebug")

# 1.0.34's filter (utils.validate_system_profiler_file): <root>/system/<anything>/<10 digits>.algo-<n>.json
SYSTEM_FILE_RE = re.compile(r"(?:^|/)system/(?:.+/)?(\d{10})\.(algo-\d+)\.json$")


def system_file_info(key: str) -> tuple[int, str] | None:
    """``(minute_us, node_id)`` of a system file's key, or None when the key is not one."""
    m = SYSTEM_FILE_RE.search(key)
    if m is None or "/system/" not in "/" + key:
        return None
    return int(m.group(1)) * 1_000_000, m.group(2)


@dataclass(frozen=True)
class SystemChunk:
    """The rows of one file, grouped: ``keys[i]`` = ``(node_id, type, name, dimension)`` with its
    ``timestamp_s[i]`` (float64 epoch seconds, file order) and ``value[i]`` (float64)."""

    keys: list
    timestamp_s: list
    value: list
    rows: int
    first_s: float | None  # the smallest timestamp in the file
    last_s: float | None  # the largest


_EMPTY = SystemChunk([], [], [], 0, None, None)


def _pyarrow():
    try:
        import pyarrow as pa
        import pyarrow.json as pj
    except ImportError:
        raise MissingDependency("pyarrow", "profiler", "to read system metrics") from None
    return pa, pj


def _schema(pa):
    return pa.schema([("Type", pa.string()), ("Name", pa.string()), ("Dimension", pa.string()),
                      ("Value", pa.float64()), ("NodeId", pa.string()), ("Timestamp", pa.float64())])


def _bad_line(data: bytes, where: str) -> EventFileCorrupt:
    lines = data.split(b"\n")
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            return EventFileCorrupt(f"{where}: line {i} of {len(lines)} is not valid JSON ({exc})")
        if not isinstance(row, dict):
            return EventFileCorrupt(f"{where}: line {i} is not a JSON object")
        for k in ("Type", "Dimension", "Value", "NodeId", "Timestamp"):
            if k not in row:
                return EventFileCorrupt(f"{where}: line {i} has no {k!r}")
        if not isinstance(row["Value"], (int, float)) or not isinstance(row["Timestamp"], (int, float)):
            return EventFileCorrupt(f"{where}: line {i}: Value and Timestamp must be numbers")
    return EventFileCorrupt(f"{where}: cannot be read as system metrics (JSON Lines)")


def _read_table(data: bytes, where: str):
    pa, pj = _pyarrow()
    opts = pj.ParseOptions(explicit_schema=_schema(pa), unexpected_field_behavior="ignore",
                           newlines_in_values=False)
    try:
        table = pj.read_json(io.BytesIO(data), read_options=pj.ReadOptions(use_threads=False, block_size=1 << 24),
                             parse_options=opts)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    for k in ("Type", "Dimension", "Value", "NodeId", "Timestamp"):
        if table.column(k).null_count:
            raise _bad_line(data, where)
    return table


def parse_system_file(data: bytes, where: str) -> SystemChunk:
    """The rows of one system file's bytes; ``where`` names the file in errors."""
    body = data.rstrip(b"\n\r\t ")
    if not body:
        return _EMPTY
    table = _read_table(body, where)
    if table is None:
        cut = body.rfind(b"\n")
        table = _read_table(body[:cut], where) if cut > 0 else None
        if table is None:
            raise _bad_line(body, where)
        logger.debug("smdebug: profiler: %s: the last line is incomplete (a file being written): skipped", where)
    return _group(table)


def _codes(column):
    enc = column.combine_chunks().dictionary_encode() if column.num_chunks else column.dictionary_encode()
    codes = enc.indices.to_numpy(zero_copy_only=False)
    return np.asarray(codes, dtype=np.int64), enc.dictionary.to_pylist()


def _group(table) -> SystemChunk:
    n = table.num_rows
    if n == 0:
        return _EMPTY
    ts = table.column("Timestamp").to_numpy()
    val = table.column("Value").to_numpy()
    name_col = table.column("Name").fill_null("")
    combined = np.zeros(n, dtype=np.int64)
    dicts = []
    for col in (table.column("NodeId"), table.column("Type"), name_col, table.column("Dimension")):
        codes, dictionary = _codes(col)
        combined = combined * (len(dictionary) + 1) + codes
        dicts.append(dictionary)
    order = np.argsort(combined, kind="stable")
    sorted_codes = combined[order]
    bounds = np.flatnonzero(np.diff(sorted_codes)) + 1
    starts = np.concatenate(([0], bounds))
    ends = np.concatenate((bounds, [n]))
    keys, times, values = [], [], []
    sizes = [len(d) + 1 for d in dicts]
    for lo, hi in zip(starts, ends):
        code = int(sorted_codes[lo])
        parts = []
        for size in reversed(sizes):
            parts.append(code % size)
            code //= size
        node, typ, name, dim = (d[i] for d, i in zip(dicts, reversed(parts)))
        idx = order[lo:hi]
        keys.append((node, typ, name, dim))
        times.append(ts[idx])
        values.append(val[idx])
    return SystemChunk(keys, times, values, n, float(ts.min()), float(ts.max()))
