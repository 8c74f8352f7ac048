"""System-metrics files read in bulk with numpy, for files written as a sampler writes them: one
line per metric, a sample's metrics always in the same order, so that the lines repeat with a
period P (one sample):

    {"Type":"cpu","Name":"cpu0","Dimension":"CPUUtilization","Value":4.76,"NodeId":"algo-1","Timestamp":1591160699.457}

The first P lines (decoded by orjson) are the templates. Line ``i`` must then be template
``i % P`` byte for byte except its two numbers: its text up to the value of ``"Value"``, and
between the two numbers, equals the template's, checked eight bytes at a time for all lines at
once (:class:`~smdebug.profiler.reading.byte_columns.JoinedLines`); so its strings are the
template's. Value and Timestamp are decimal numbers without exponent, read exactly
(:meth:`~smdebug.profiler.reading.byte_columns.JoinedLines.number`: up to 18 digits; SageMaker's
agent writes times of 17, our sampler of 16). A file with any other line (another key order, a
missing ``Name``, a metric out of turn, an escape, an exponent, a control character, more than 18
digits) gives None: :func:`~smdebug.profiler.reading.system_files.parse_system_file` then reads it
with pyarrow, with the same columns and the same errors.
"""

from __future__ import annotations

import numpy as np
import orjson

from smdebug.profiler.reading.byte_columns import _LOW, JoinedLines

__all__ = ["bulk_system_columns"]

_KEYS = ["Type", "Name", "Dimension", "Value", "NodeId", "Timestamp"]  # in the order written
_STRINGS = ("NodeId", "Type", "Name", "Dimension")
_VALUE, _NODE, _TS = b',"Value":', b',"NodeId":"', b',"Timestamp":'
_MAX_PERIOD = 4096  # lines of one sample, at most
_MAX_NUMBER = 24  # characters of a number read here, at most (a sign, 18 digits, a point)
_NL = np.uint8(10)


def _templates(data: bytes, starts: np.ndarray, stops: np.ndarray) -> tuple[list, list] | None:
    """The first period's lines: ``(rows, cuts)``, each row the line's decoded object and each cut
    ``(end of the text before Value's number, start of the text after it, end of that text)``;
    the period ends at the first line whose texts are line 0's (the same metric again)."""
    rows: list = []
    cuts: list = []
    first = None
    for a, b in zip(starts[:_MAX_PERIOD + 1].tolist(), stops[:_MAX_PERIOD + 1].tolist()):
        raw = data[a:b]
        # no string holds '"' (the file holds no backslash): these are the separators
        v, n, t = raw.find(_VALUE), raw.find(_NODE), raw.find(_TS)
        if min(v, n, t) < 0:
            return None
        texts = (raw[:v + len(_VALUE)], raw[n:t + len(_TS)])
        if first is None:
            first = texts
        elif texts == first:
            return rows, cuts
        try:
            row = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return None
        if not isinstance(row, dict) or list(row) != _KEYS or not all(type(row[k]) is str for k in _STRINGS) \
                or type(row["Value"]) not in (int, float) or type(row["Timestamp"]) not in (int, float):
            return None
        rows.append(row)
        cuts.append((v + len(_VALUE), n, t + len(_TS)))
    return (rows, cuts) if len(rows) == len(starts) else None


def _same(lines: JoinedLines, at: np.ndarray, kind: np.ndarray, home: np.ndarray, length: np.ndarray) -> np.ndarray:
    """Whether the ``length[kind]`` bytes at each ``at`` equal those of template ``kind`` at
    ``home[kind]`` (``home`` and ``length``: one entry per template). The templates' words are
    taken once; each line's are compared with them eight bytes at a time."""
    ok = np.ones(len(at), dtype=bool)
    words = lines.words
    for j in range(0, int(length.max(initial=0)), 8):
        mask = _LOW[np.clip(length - j, 0, 8)]  # per template
        expected = words[home + j] & mask
        whole = bool((mask == _LOW[8]).all())  # every template has these eight bytes
        if whole and (expected == expected[0]).all():  # and they are the same in all (the keys)
            ok &= words[at + j] == expected[0]
        elif whole:
            ok &= words[at + j] == expected[kind]
        else:
            ok &= (words[at + j] & mask[kind]) == expected[kind]
    return ok


def _equal(lines: JoinedLines, a: np.ndarray, b: np.ndarray, length: np.ndarray) -> np.ndarray:
    """Whether the ``length`` bytes at each ``a`` equal those at each ``b`` (lengths up to 24)."""
    ok = np.ones(len(a), dtype=bool)
    words = lines.words
    for j in range(0, int(length.max(initial=0)), 8):
        ok &= ((words[a + j] ^ words[b + j]) & _LOW[np.clip(length - j, 0, 8)]) == 0
    return ok


def bulk_system_columns(data: bytes, end: int) -> dict | None:
    """The columns of the lines in ``data[:end]`` (``{"NodeId": (codes, names), "Type": ...,
    "Timestamp": float64, "Value": float64}``, as system_files' readers give them), or None when
    the file is not written as this module reads. A last line that is not JSON (a file still
    being written) is left out, as the other readers do."""
    nl = data.rfind(b"\n", 0, end)
    try:
        orjson.loads(data[nl + 1:end])
    except orjson.JSONDecodeError:
        end = max(nl, 0)
    if end == 0 or data.find(b"\\", 0, end) >= 0:
        return None
    lines = JoinedLines([data], [end])
    body = lines.buf[:lines.size]  # the lines, each followed by a newline
    stops = np.flatnonzero(body < 32)
    if not (body[stops] == _NL).all():  # a control character other than the newlines
        return None
    if body.max(initial=0) >= 128:
        try:
            data[:end].decode("utf-8")
        except UnicodeDecodeError:
            return None
    starts = np.concatenate(([0], stops[:-1] + 1))
    found = _templates(data, starts, stops)
    if found is None:
        return None
    rows, cuts = found
    period = len(rows)
    kind = np.arange(len(starts)) % period  # each line's template
    home = starts[:period]
    head, mid_at, mid_end = (np.array(c, dtype=np.int64) for c in zip(*cuts))
    ok = _same(lines, starts, kind, home, head)
    value_at = starts + head[kind]
    value, vlen, good = lines.number(value_at)
    ok &= good
    mid = value_at + vlen
    ok &= _same(lines, mid, kind, home + mid_at, mid_end - mid_at)
    ts_at = mid + (mid_end - mid_at)[kind]
    tlen = stops - 1 - ts_at  # the time's text, when "}" ends the line
    ok &= (lines.byte(stops - 1) == 125) & (tlen > 0) & (tlen <= _MAX_NUMBER)
    if not ok.all():
        return None
    # a sample's lines share its time: the text of a line's time is parsed when it is not the
    # text of the line before's (byte for byte), else that line's value is taken
    new = np.ones(len(ts_at), dtype=bool)
    new[1:] = (tlen[1:] != tlen[:-1]) | ~_equal(lines, ts_at[1:], ts_at[:-1], tlen[1:])
    parsed = np.flatnonzero(new)
    times, n, good = lines.number(ts_at[parsed])
    if not (good & (n == tlen[parsed])).all():
        return None
    ts = times[np.cumsum(new) - 1]
    cols: dict = {}
    for key in _STRINGS:
        names: dict = {}
        codes = np.array([names.setdefault(r[key], len(names)) for r in rows], dtype=np.int64)
        cols[key] = (codes[kind], list(names))
    cols["Value"], cols["Timestamp"] = value, ts
    return cols
