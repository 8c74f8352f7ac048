"""One system-metrics file (JSON Lines, 1.0.34's / SageMaker's agent's format) into columns.

A line is ``{"Type":"cpu","Name":"cpu0","Dimension":"CPUUtilization","Value":4.76,
"NodeId":"algo-1","Timestamp":1591160699.457}``. A file whose lines are all written that way is
read in bulk with numpy (:mod:`~smdebug.profiler.reading.system_bulk`); others are decoded by
pyarrow in one call (no Python object per row). The rows are split into one column pair per
``(NodeId, Type, Name, Dimension)``. As 1.0.34: a corrupt **last** line (a file still being
written) is skipped; a corrupt line elsewhere raises :class:`~smdebug.exceptions.EventFileCorrupt`
naming the file and the line. ``Name`` may be absent (kept as ``""``); the other keys are required.
"""

from __future__ import annotations

import io
import logging
import re
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from smdebug.exceptions import EventFileCorrupt, MissingDependency
from smdebug.profiler.reading.system_bulk import bulk_system_columns

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

    keys: list[tuple[str, str, str, str]]
    timestamp_s: list[np.ndarray]
    value: list[np.ndarray]
    rows: int
    first_s: float | None  # the smallest timestamp in the file
    last_s: float | None  # the largest


_EMPTY = SystemChunk([], [], [], 0, None, None)


def _pyarrow() -> tuple[ModuleType, ModuleType]:
    """pyarrow and pyarrow.json (no type information: their objects are Any here)."""
    try:
        import pyarrow as pa
        import pyarrow.json as pj
    except ImportError:
        raise MissingDependency("pyarrow", "profiler", "to read system metrics") from None
    return pa, pj


def _schema(pa: ModuleType) -> Any:
    return pa.schema(
        [
            ("Type", pa.string()),
            ("Name", pa.string()),
            ("Dimension", pa.string()),
            ("Value", pa.float64()),
            ("NodeId", pa.string()),
            ("Timestamp", pa.float64()),
        ]
    )


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


def _read_table(data: bytes, where: str) -> Any:
    """A pyarrow Table of the rows, or None when pyarrow cannot read them."""
    pa, pj = _pyarrow()
    opts = pj.ParseOptions(explicit_schema=_schema(pa), unexpected_field_behavior="ignore", newlines_in_values=False)
    try:
        table = pj.read_json(
            io.BytesIO(data), read_options=pj.ReadOptions(use_threads=False, block_size=1 << 24), parse_options=opts
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    for k in ("Type", "Dimension", "Value", "NodeId", "Timestamp"):
        if table.column(k).null_count:
            raise _bad_line(data, where)
    return table


def parse_system_file(data: bytes, where: str) -> SystemChunk:
    """The rows of one system file's bytes; ``where`` names the file in errors."""
    end = len(data)
    while end and data[end - 1] in b"\n\r\t ":
        end -= 1
    if not end:
        return _EMPTY
    cols = bulk_system_columns(data, end)
    if cols is None:
        cols = _fast_columns(data, end)
    if cols is not None:
        return _group(cols)
    body = data[:end]
    table = _read_table(body, where)
    if table is None:
        cut = body.rfind(b"\n")
        table = _read_table(body[:cut], where) if cut > 0 else None
        if table is None:
            raise _bad_line(body, where)
        logger.debug("smdebug: profiler: %s: the last line is incomplete (a file being written): skipped", where)
    return _group(_json_columns(table))


# ---------------------------------------------------------------------- columns
# {"NodeId": (codes, names), "Type": ..., "Name": ..., "Dimension": ..., "Timestamp": f64, "Value": f64}
# (and "Period" from the bulk reader: system_bulk.bulk_system_columns), a dict of these mixed values
Columns = dict[str, Any]
_KEYS = ("NodeId", "Type", "Name", "Dimension")


def _np(array: Any, dtype: npt.DTypeLike) -> np.ndarray:
    """A null-free primitive pyarrow Array as a numpy array (a copy), without pyarrow's to_numpy,
    which imports pandas."""
    if hasattr(array, "combine_chunks"):
        array = array.combine_chunks()
    if array.null_count:
        raise ValueError("nulls in a column that has none")
    dtype = np.dtype(dtype)
    return np.frombuffer(array.buffers()[1], dtype=dtype, count=len(array), offset=array.offset * dtype.itemsize).copy()


def _codes(column: Any) -> tuple[np.ndarray, list[str]]:
    if hasattr(column, "combine_chunks"):
        column = column.combine_chunks()
    enc = column.dictionary_encode()
    return _np(enc.indices, np.int32).astype(np.int64), enc.dictionary.to_pylist()


def _json_columns(table: Any) -> Columns:
    cols: Columns = {k: _codes(table.column(k).fill_null("") if k == "Name" else table.column(k)) for k in _KEYS}
    cols["Timestamp"] = _np(table.column("Timestamp"), np.float64)
    cols["Value"] = _np(table.column("Value"), np.float64)
    return cols


_FIELDS = {"Type", "Name", "Dimension", "Value", "NodeId", "Timestamp"}
_SPLIT = bytes.maketrans(b":}", b",,")


def _fast_columns(body: bytes, end: int) -> Columns | None:
    """The common case in bulk: every line holds the six keys in the same order and no string
    holds a ``:``, ``,`` or ``}``. Then ``:`` and ``}`` are turned into ``,`` and pyarrow's CSV reader
    splits the lines into key and value columns, parsing the two numbers itself, all in C. Each key
    column must hold its key on every line. None whenever a line does not fit (the JSON reader then
    reads the file, and reports any error)."""
    pa, _ = _pyarrow()
    import pyarrow.csv as pcsv

    nl = body.rfind(b"\n", 0, end)
    try:
        orjson.loads(body[nl + 1 : end])
    except orjson.JSONDecodeError:  # a half-written last line is left out
        body = body[:nl] if nl > 0 else b""
    cut = body.find(b"\n")
    first = body[:cut] if cut >= 0 else body
    try:
        row = orjson.loads(first)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(row, dict) or set(row) != _FIELDS:
        return None
    raw_keys = first.translate(_SPLIT).split(b",")
    if len(raw_keys) != 13:
        return None
    order = list(row)
    text = pa.dictionary(pa.int32(), pa.string())  # decoded while parsing: no string per row is kept
    types = {f"f{2 * i + 1}": pa.float64() if k in ("Value", "Timestamp") else text for i, k in enumerate(order)}
    types.update({f"f{2 * i}": text for i in range(6)})
    try:
        table = pcsv.read_csv(
            io.BytesIO(body.translate(_SPLIT)),
            read_options=pcsv.ReadOptions(use_threads=False, autogenerate_column_names=True, block_size=1 << 26),
            parse_options=pcsv.ParseOptions(delimiter=",", quote_char=False, escape_char=False, double_quote=False),
            convert_options=pcsv.ConvertOptions(column_types=types, include_columns=[f"f{i}" for i in range(12)]),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    cols: Columns = {}
    for i, key in enumerate(order):
        name_col, value_col = table.column(2 * i), table.column(2 * i + 1)
        expected = raw_keys[2 * i].decode("utf-8", "replace")
        if any(c.dictionary.to_pylist() != [expected] for c in name_col.chunks):  # every line: this key here
            return None
        if key in ("Value", "Timestamp"):
            if value_col.null_count:
                return None
            cols[key] = _np(value_col, np.float64)
            continue
        codes, raw = _dictionary_codes(value_col)
        names = []
        for r in raw:  # few distinct values: each is decoded in Python
            try:
                decoded = orjson.loads(r)
            except orjson.JSONDecodeError:
                return None
            if not isinstance(decoded, str):
                return None
            names.append(decoded)
        cols[key] = (codes, names)
    return cols


def _dictionary_codes(column: Any) -> tuple[np.ndarray, list[str]]:
    """The codes and values of a dictionary-typed column (one dictionary over all its chunks)."""
    chunks = column.chunks
    if len(chunks) == 1:
        return _np(chunks[0].indices, np.int32).astype(np.int64), chunks[0].dictionary.to_pylist()
    values: dict[str, int] = {}
    parts = []
    for c in chunks:
        remap = np.array([values.setdefault(v, len(values)) for v in c.dictionary.to_pylist()], dtype=np.int64)
        parts.append(remap[_np(c.indices, np.int32)])
    return np.concatenate(parts), list(values)


def _group(cols: Columns) -> SystemChunk:
    ts, val = cols["Timestamp"], cols["Value"]
    n = len(ts)
    if n == 0:
        return _EMPTY
    if "Period" in cols:  # line i is template i % P (bulk reader): the same groups, by slicing
        period, order, keys = cols["Period"]  # (keys: one list for a node's files, not changed)
        return SystemChunk(
            keys, [ts[k::period] for k in order], [val[k::period] for k in order], n, float(ts.min()), float(ts.max())
        )
    combined = np.zeros(n, dtype=np.int64)
    dicts = []
    for k in _KEYS:
        codes, dictionary = cols[k]
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
