"""System-metrics files read in bulk with numpy, for files written as a sampler writes them: one
line per metric, a sample's metrics always in the same order, so that the lines repeat with a
period P (one sample):

    {"Type":"cpu","Name":"cpu0","Dimension":"CPUUtilization","Value":4.76,"NodeId":"algo-1","Timestamp":1591160699.457}

The first P lines (decoded by orjson) are the templates (kept for the next files of the node,
which a sampler writes alike). Line ``i`` must then be template ``i % P`` byte for byte except its
two numbers: its text up to the value of ``"Value"``, and between the two numbers, equals the
template's, compared eight bytes at a time for all the lines of the file at once; so its strings
are the template's. Value and Timestamp are decimal numbers without exponent, read exactly
(:func:`~smdebug.profiler.reading.decimal_numbers.numbers`: up to 18 digits; SageMaker's
agent writes times of 17, our sampler of 16). Every byte of every line is checked so. The file's
bytes are not copied: the bytes from each line's positions are (rows of a fixed width; a number's
are read from its row). A file with any other line (another key order, a missing ``Name``, a
metric out of turn, an escape, an exponent, a control character, more than 18 digits) gives None:
:func:`~smdebug.profiler.reading.system_files.parse_system_file` then reads it with pyarrow, with
the same columns and the same errors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import orjson

from smdebug.profiler.reading.byte_columns import JoinedLines
from smdebug.profiler.reading.decimal_numbers import numbers

__all__ = ["bulk_system_columns"]

_KEYS = ["Type", "Name", "Dimension", "Value", "NodeId", "Timestamp"]  # in the order written
_STRINGS = ("NodeId", "Type", "Name", "Dimension")
_VALUE, _NODE, _TS = b',"Value":', b',"NodeId":"', b',"Timestamp":'
_MAX_PERIOD = 4096  # lines of one sample, at most
_MAX_NUMBER = 24  # characters of a number read here, at most (a sign, 18 digits, a point)
_NL = 10
_ROW = 128  # bytes read from a line at a time, at most


@dataclass(frozen=True)
class _Layout:
    """The templates of a period: per template, the text before Value's number (``head``) and the
    text between the two numbers (``mid``), as words and masks to compare lines with; the string
    columns; the templates in the order of their ``(node, type, name, dimension)`` keys' codes,
    and those keys in that order (None when two templates have one key)."""

    period: int
    head_len: np.ndarray  # (P,) int64
    mid_len: np.ndarray
    head: tuple[np.ndarray, np.ndarray]  # (P, words) uint64: the text, and masks of its bytes
    mid: tuple[np.ndarray, np.ndarray]
    strings: dict  # {"NodeId": (codes (P,), names), ...}
    order: list | None
    keys: list | None


# by the texts of the period's lines: a node's files are written alike (and a fresh process makes
# few objects that the garbage collector tracks: a collection then costs a millisecond)
_LAYOUTS: dict[bytes, _Layout] = {}


def _words(texts: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """``texts`` as rows of little-endian words (zero-padded), and the masks of their bytes."""
    width = -(-max(len(t) for t in texts) // 8) * 8
    text = b"".join(t.ljust(width, b"\0") for t in texts)
    mask = b"".join((b"\xff" * len(t)).ljust(width, b"\0") for t in texts)
    shape = (len(texts), width // 8)
    return np.frombuffer(text, dtype="<u8").reshape(shape), np.frombuffer(mask, dtype="<u8").reshape(shape)


def _layout(data: bytes, starts: np.ndarray, stops: np.ndarray) -> _Layout | None:
    """The layout of the first period; the period ends at the first line whose texts are line 0's
    (the same metric again). None when the lines are not written as this module reads."""
    heads: list[bytes] = []
    mids: list[bytes] = []
    limit = min(len(starts), _MAX_PERIOD + 1)
    for lo, hi in ((0, min(limit, 64)), (64, limit)):  # (a period is short, as a rule)
        for a, b in zip(starts[lo:hi].tolist(), stops[lo:hi].tolist()):
            raw = data[a:b]
            # no string holds '"' (the file holds no backslash): these are the separators
            v, n, t = raw.find(_VALUE), raw.find(_NODE), raw.find(_TS)
            if min(v, n, t) < 0:
                return None
            head, mid = raw[: v + len(_VALUE)], raw[n : t + len(_TS)]
            if heads and head == heads[0] and mid == mids[0]:
                break
            heads.append(head)
            mids.append(mid)
        else:
            continue
        break
    else:
        if len(heads) != len(starts):
            return None
    key = b"\n".join(heads + mids)  # (no text holds a newline)
    found = _LAYOUTS.get(key)
    if found is None:
        found = _new_layout(data, starts[: len(heads)].tolist(), stops[: len(heads)].tolist(), heads, mids)
        if found is not None:
            if len(_LAYOUTS) >= 64:
                _LAYOUTS.clear()
            _LAYOUTS[key] = found
    return found


def _new_layout(
    data: bytes, starts: list[int], stops: list[int], heads: list[bytes], mids: list[bytes]
) -> _Layout | None:
    """The layout of the period's lines, each decoded by orjson, or None."""
    values: dict[str, list] = {name: [] for name in _STRINGS}
    for a, b, head, mid in zip(starts, stops, heads, mids):
        try:
            row = orjson.loads(data[a:b])
        except orjson.JSONDecodeError:
            return None
        if (
            not isinstance(row, dict)
            or list(row) != _KEYS
            or not all(type(row[k]) is str for k in _STRINGS)
            or type(row["Value"]) not in (int, float)
            or type(row["Timestamp"]) not in (int, float)
        ):
            return None
        if min(head + mid) < 32:  # JSON's whitespace: not written so, left to the other readers
            return None
        for name in _STRINGS:
            values[name].append(row[name])
    period = len(heads)
    strings = {}
    combined = np.zeros(period, dtype=np.int64)  # the codes of a key as one number, in _STRINGS order
    for name in _STRINGS:
        names: dict = {}
        codes = np.array([names.setdefault(v, len(names)) for v in values[name]], dtype=np.int64)
        strings[name] = (codes, list(names))
        combined = combined * (len(names) + 1) + codes
    distinct = len(set(combined.tolist())) == period
    order = np.argsort(combined, kind="stable").tolist() if distinct else None
    keys = (
        [(values["NodeId"][k], values["Type"][k], values["Name"][k], values["Dimension"][k]) for k in order]
        if order is not None
        else None
    )
    return _Layout(
        period,
        np.array([len(h) for h in heads], dtype=np.int64),
        np.array([len(m) for m in mids], dtype=np.int64),
        _words(heads),
        _words(mids),
        strings,
        order,
        keys,
    )


class _Text:
    """A file's bytes, read as rows of fixed width from many positions at once, without a copy
    of the file: the rows that would run past its end are read from a copy of its last bytes,
    followed by a newline and zeros."""

    _TAIL = 256  # bytes of the end copied: more than a row reaches past a line

    def __init__(self, data: bytes, end: int):
        self.buf = np.frombuffer(data, dtype=np.uint8)
        self.tail_at = max(0, end - self._TAIL)
        self.tail = np.frombuffer(data[self.tail_at : end] + b"\n" + bytes(_ROW), dtype=np.uint8)

    def rows(self, at: np.ndarray, width: int) -> np.ndarray:
        """The ``width`` bytes (at most ``_ROW``) from each position of ``at`` (each at most the
        end of the lines): an (n, width) uint8 array."""
        out = _rows(self.buf, width, at)
        if out is not None:
            return out
        # some rows run past the file's end: read those again from the tail
        late = at > len(self.buf) - width
        first = _rows(self.buf, width, np.where(late, 0, at))
        out = first if first is not None else np.empty((len(at), width), dtype=np.uint8)
        out[late] = _rows(self.tail, width, at[late] - self.tail_at)
        return out


def _rows(buf: np.ndarray, width: int, at: np.ndarray) -> np.ndarray | None:
    """The ``width`` bytes from each ``at`` in ``buf`` (a row copied at a time: twice as fast as
    words), or None when a row runs past its end."""
    count = len(buf) - width + 1
    if count <= 0 or (len(at) and int(at.max()) >= count):
        return None
    view = np.lib.stride_tricks.as_strided(
        buf, shape=(count, width), strides=(buf.strides[0], buf.strides[0]), writeable=False
    )
    return view[at]


def _differs(got: np.ndarray, texts: tuple[np.ndarray, np.ndarray]) -> bool:
    """Whether any row ``i`` of ``got`` (the words from a line's position on, at least as many as
    the templates') does not begin with template ``i % P``'s text (``texts``: (P, words) words and
    masks). Compared in place: ``got`` is lost."""
    words, masks = texts
    period, width = words.shape[0], got.shape[1]
    if words.shape[1] < width:  # the words after the templates' are not compared
        words, masks = (np.pad(a, ((0, 0), (0, width - a.shape[1]))) for a in texts)
    whole = len(got) // period * period
    rest = len(got) - whole
    for part, e, m in (
        (got[:whole].reshape(-1, period, width), words, masks),
        (got[whole:], words[:rest], masks[:rest]),
    ):
        part ^= e  # in place: no more arrays of the lines' size
        part &= m
        if part.any():
            return True
    return False


def _differs_at(text: _Text, at: np.ndarray, texts: tuple[np.ndarray, np.ndarray]) -> bool:
    """:func:`_differs` for the text at each ``at[i]``, for lines that hold their template's length
    (the caller checks)."""
    words, masks = texts
    for w in range(0, words.shape[1], _ROW // 8):
        part = (words[:, w : w + _ROW // 8], masks[:, w : w + _ROW // 8])
        if _differs(text.rows(at + 8 * w, 8 * part[0].shape[1]).view("<u8"), part):
            return True
    return False


def _numbers(slots: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`~smdebug.profiler.reading.decimal_numbers.numbers` of the text at the start of each row of ``slots`` (the
    ``_MAX_NUMBER`` bytes from a number's start: a number read here ends before them, and
    what is read depends on its bytes and the one after it only)."""
    lines = JoinedLines([slots.tobytes()], [slots.size])
    return numbers(lines, np.arange(0, slots.size, _MAX_NUMBER, dtype=np.int64))


def _tail_texts(text: _Text, mid: np.ndarray, ts_at: np.ndarray, layout: _Layout) -> np.ndarray | None:
    """The ``_MAX_NUMBER`` bytes from each line's time on, or None when the text between a line's
    numbers is not its template's. When all templates have one such text (one node), both are read
    at once."""
    size = int(layout.mid_len[0])
    width = -(-(size + _MAX_NUMBER) // 8) * 8
    if (layout.mid_len != size).any() or width > _ROW:
        return None if _differs_at(text, mid, layout.mid) else text.rows(ts_at, _MAX_NUMBER)
    rows = text.rows(mid, width)
    slots = rows[:, size : size + _MAX_NUMBER].copy()
    return None if _differs(rows.view("<u8"), layout.mid) else slots


def bulk_system_columns(data: bytes, end: int) -> dict | None:
    """The columns of the lines in ``data[:end]`` (``{"NodeId": (codes, names), "Type": ...,
    "Timestamp": float64, "Value": float64}``, as system_files' readers give them, and
    ``"Period": (P, order, keys)`` when the P templates have distinct keys: ``order``, the
    templates by their keys' codes, and ``keys``, theirs in that order; line ``i`` is template
    ``i % P``), or None when the file is not written as this module reads. A last line that is
    not JSON (a file still being written) is left out, as the other readers do."""
    nl = data.rfind(b"\n", 0, end)
    try:
        orjson.loads(data[nl + 1 : end])
    except orjson.JSONDecodeError:
        end = max(nl, 0)
    if end == 0 or data.find(b"\\", 0, end) >= 0:
        return None
    text = _Text(data, end)
    stops = np.flatnonzero(text.buf[:end] == _NL)  # the lines, each followed by a newline
    stops = np.append(stops, end)  # (the last one's is the end)
    n = len(stops)
    starts = np.empty(n, dtype=np.int64)
    starts[0] = 0
    starts[1:] = stops[:-1] + 1
    layout = _layout(data, starts, stops)
    if layout is None:
        return None
    kind = np.arange(n) % layout.period  # each line's template
    value_at = starts + layout.head_len[kind]
    if (value_at > stops).any() or _differs_at(text, starts, layout.head):
        return None
    value, vlen, good = _numbers(text.rows(value_at, _MAX_NUMBER))
    if not good.all():
        return None
    mid = value_at + vlen
    ts_at = mid + layout.mid_len[kind]
    tlen = stops - 1 - ts_at  # the time's text, when "}" ends the line
    if not ((tlen > 0) & (tlen <= _MAX_NUMBER)).all() or not (text.buf[stops - 1] == 125).all():
        return None
    slots = _tail_texts(text, mid, ts_at, layout)
    if slots is None:
        return None
    # a sample's lines share its time: the text of a line's time is parsed when it is not the
    # text of the line before's: when they differ in length or in the _MAX_NUMBER bytes from
    # their start (bytes after the texts may differ too: such a line is parsed again, to the
    # same value), else that line's value is taken
    words = slots.view("<u8")
    diff = words[1:] ^ words[:-1]
    new = np.ones(n, dtype=bool)
    new[1:] = tlen[1:] != tlen[:-1]
    for w in range(_MAX_NUMBER // 8):
        new[1:] |= diff[:, w] != 0
    parsed = np.flatnonzero(new)
    times, tn, good = _numbers(slots[parsed])
    if not (good & (tn == tlen[parsed])).all():
        return None
    ts = times[np.cumsum(new) - 1] if len(parsed) < n else times
    cols: dict = {key: (codes[kind], names) for key, (codes, names) in layout.strings.items()}
    cols["Value"], cols["Timestamp"] = value, ts
    if layout.order is not None:
        cols["Period"] = (layout.period, layout.order, layout.keys)
    return cols
