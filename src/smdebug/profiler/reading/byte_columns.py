"""Columns from lines of JSON in bulk, with numpy: the byte-level tools of the framework bulk
reader (:mod:`smdebug.profiler.reading.trace_bulk`).

:class:`JoinedLines` holds the bytes of many files joined into one buffer and an unaligned 8-byte
view of it. A line template (:class:`LineTemplate`)
describes a JSON object written on one line without escapes (its keys in order, the kind of each
value, its separators); :meth:`JoinedLines.match` checks, for many lines at once, that each is
exactly that object, and reads its values: the literal bytes are compared eight at a time, an
integer is a run of digits parsed eight at a time (SWAR in ``uint64``). A line that must be the
whole template is read from both ends: up to its last string from the start, the rest backwards
from its end (each integer is the run of digits that ends where the text after it begins), so
that string needs no search for its closing quote; strings read from the start run to the next
quote (found eight bytes at a time: the batch holds no backslash, so a string holds no quote).
``intern`` groups strings by a hash of their length and first
and last eight bytes (checked byte for byte, the middle of longer ones too) and decodes each
distinct one once; a string read between the two ends is checked for quotes there.
"""

from __future__ import annotations

import mmap
import re
from dataclasses import dataclass

import numpy as np

__all__ = ["JoinedLines", "LineTemplate", "INT", "QINT", "STR", "LIT", "MARK", "clean_text"]

# the steps of a line template (:class:`LineTemplate`):
# a JSON integer, a string of digits read as an integer (``"17"``), a string; literal bytes, the
# start of a nested object
INT, QINT, STR = "int", "qint", "str"
LIT, MARK = "lit", "mark"

PAD = b"\0" * 64  # reads a little past a line stay in the buffer
_WIDE = 32  # bytes of a literal compared from one gather (PAD holds a read of them past a line's end)
_U = np.uint64
_ZEROS = _U(0x3030303030303030)
_ONES = _U(0x0101010101010101)
_HIGH = _U(0x8080808080808080)
_SEVENS = _U(0x7676767676767676)
_QUOTES = _U(0x2222222222222222)
_LOW = np.array([(1 << (8 * v)) - 1 for v in range(9)], dtype=np.uint64)  # the first v bytes
_POW10 = np.array([10**k for k in range(19)], dtype=np.uint64)


@dataclass
class LineTemplate:
    """A JSON object written on one line without escapes, as the steps that read it: literal bytes
    (``("lit", b'{"name": "')``), values (``(INT | QINT | STR, key)``) and the start of a nested
    object (``("mark", key)``), built by :meth:`of`."""

    steps: list

    @classmethod
    def of(cls, fields: list, sep_kv: bytes, sep_item: bytes, tail: bytes = b"}") -> LineTemplate:
        """The template of an object with ``fields`` (``[(key, INT | QINT | STR | b'"literal"' |
        [nested fields])]``) and these separators, whose last value is followed by ``tail``
        (``b"}"``: the object ends there; ``b', "args": '``: the template reads the start of a
        longer line). The values of a nested object ``key`` are read as ``"key.inner"``."""
        steps: list = []

        def lit(text: bytes) -> None:
            if steps and steps[-1][0] == LIT:
                steps[-1] = (LIT, steps[-1][1] + text)
            elif text:
                steps.append((LIT, text))

        def obj(fields: list, close: bytes, prefix: str = "") -> None:
            lit(b"{")
            for i, (key, kind) in enumerate(fields):
                lit((b"" if i == 0 else sep_item) + b'"' + key.encode() + b'"' + sep_kv)
                if isinstance(kind, bytes):
                    lit(kind)
                elif isinstance(kind, list):
                    steps.append((MARK, prefix + key))
                    obj(kind, b"}", f"{prefix}{key}.")
                elif kind == INT:
                    steps.append((INT, prefix + key))
                else:
                    lit(b'"')
                    steps.append((kind, prefix + key))
                    lit(b'"')
            lit(close)

        obj(fields, tail)
        return cls(steps)


def _run(flags: np.ndarray) -> np.ndarray:
    """The number of low bytes before the first flagged one (``flags``: only top bits set), 8
    when none is (uint8): the trailing zero bits, counted by ``bitwise_count``, over 8."""
    return np.bitwise_count((flags - _U(1)) & ~flags) >> np.uint8(3)


def _run_numpy1(flags: np.ndarray) -> np.ndarray:
    """:func:`_run` without ``bitwise_count`` (numpy 2.0 and later): the bits below the first
    flagged one, shifted down by 7, are whole bytes of ones; a one from each, summed into the top
    byte by a multiplication, counts them."""
    below = ((flags - _U(1)) & ~flags) >> _U(7)
    return (((below & _ONES) * _ONES) >> _U(56)).astype(np.uint8)


if not hasattr(np, "bitwise_count"):  # numpy 1.x (the MXNet environment's numpy < 1.24)
    _run = _run_numpy1  # noqa: F811


def _top(x: np.ndarray, n: np.ndarray) -> np.ndarray:
    """The low ``n`` bytes of ``x`` moved to the top, zeros below (``n`` = 0: zero)."""
    return x << (np.uint8(64) - (n << np.uint8(3)))  # numpy shifts by 64 to 0


def _not_digits(x: np.ndarray) -> np.ndarray:
    """The top bit of each byte of ``x`` (bytes xor ``"0"``) that is not a digit."""
    return ((x + _SEVENS) | x) & _HIGH


def _swar8(x: np.ndarray) -> np.ndarray:
    """The value of 8 decimal digits, one a byte, the first in the lowest byte (``x`` is reused):
    pairs, then fours, then the eight, each a multiply-add of neighbouring lanes."""
    x *= _U(10 << 8 | 1)
    x >>= _U(8)
    x &= _U(0x00FF00FF00FF00FF)
    x *= _U(100 << 16 | 1)
    x >>= _U(16)
    x &= _U(0x0000FFFF0000FFFF)
    x *= _U(10000 << 32 | 1)
    x >>= _U(32)
    return x


def _group(h: np.ndarray) -> tuple[np.ndarray, list]:
    """Codes of the values of ``h`` (equal values, equal code) and the index of each code's first
    row: by a table of 2**16 slots (the top bits; a slot holds its first row), the rows whose slot
    holds another value by sorting (np.unique would import numpy.ma, 10 ms, on its first call)."""
    slot = (h >> _U(48)).astype(np.intp)
    table = np.full(1 << 16, -1, dtype=np.int64)
    table[slot[::-1]] = np.arange(len(h) - 1, -1, -1)  # the last write wins: each slot's first row
    used = np.flatnonzero(table >= 0)
    reps = table[used]
    table[used] = np.arange(len(used))
    codes = table[slot]
    first = reps[codes]
    rest = np.flatnonzero(h[first] != h)
    if len(rest):
        order = rest[np.argsort(h[rest], kind="stable")]
        new = np.concatenate(([True], h[order[1:]] != h[order[:-1]]))
        codes[order] = np.cumsum(new) - 1 + len(reps)
        return codes, reps.tolist() + order[new].tolist()
    return codes, reps.tolist()


class JoinedLines:
    """The joined bytes of a batch of files and the numpy views that read them."""

    def __init__(self, datas: list[bytes], ends: list[int]):
        """``datas[k][:ends[k]]`` joined, each followed by a newline."""
        big = b"\n".join([*(memoryview(d)[:e] for d, e in zip(datas, ends)), PAD])
        self._view(big, np.cumsum([0] + [e + 1 for e in ends[:-1]]).tolist(), ends, len(big) - len(PAD))

    @classmethod
    def of_buffer(cls, big: mmap.mmap | bytearray, offsets: list[int], ends: list[int], size: int) -> JoinedLines:
        """Files already joined in ``big`` (no copy): file ``k`` is ``big[offsets[k]:offsets[k] +
        ends[k]]``, followed by a newline; ``size`` bytes, then ``len(PAD)`` zero bytes."""
        lines = cls.__new__(cls)
        lines._view(big, offsets, ends, size)
        return lines

    def _view(self, big: bytes | mmap.mmap | bytearray, offsets: list[int], ends: list[int], size: int) -> None:
        self.big, self.offsets, self.ends, self.size = big, offsets, ends, size  # offsets: each file's start
        self.buf = np.frombuffer(big, dtype=np.uint8, count=size + len(PAD))
        # the eight bytes from each position as one little-endian integer (unaligned reads)
        self.words = np.ndarray((size + len(PAD) - 7,), dtype="<u8", buffer=big, strides=(1,))
        self._wides: dict[int, np.ndarray] = {}  # k -> the 8k bytes from each position (:meth:`equals`)

    def file_bytes(self, k: int) -> bytes:
        return bytes(self.big[self.offsets[k] : self.offsets[k] + self.ends[k]])

    def byte(self, pos: np.ndarray) -> np.ndarray:
        return self.buf.take(pos, mode="clip")

    def equals(self, pos: np.ndarray, text: bytes) -> np.ndarray:
        """Whether the bytes at each ``pos`` are ``text``: its words (eight bytes, the last
        masked) from one gather of ``8 * k`` bytes a row, up to 32 at a time (numpy's gather
        costs about the same per row for 8 bytes as for 32)."""
        if len(text) <= 8:
            if len(text) == 8:
                return self.words[pos] == _U(int.from_bytes(text, "little"))
            return (self.words[pos] & _LOW[len(text)]) == _U(int.from_bytes(text, "little"))
        inside = len(text) <= len(PAD) - 8  # else a read from the last positions could run past the padding
        ok: np.ndarray | None = (
            None if inside else pos + len(text) <= self.size
        )  # (where it would, the text is not there)
        for at in range(0, len(text), _WIDE):
            part = text[at : at + _WIDE]
            k = -(-len(part) // 8)
            view = self._wide(k)
            where = (pos + at if at else pos) if inside else np.minimum(pos + at, len(view) - 1)
            got = view[where].view("<u8").reshape(-1, k)
            want = np.frombuffer(part.ljust(8 * k, b"\0"), dtype="<u8")
            diff = got[:, 0] ^ want[0]
            for j in range(1, k):
                word = got[:, j] ^ want[j]
                if j == k - 1 and len(part) % 8:
                    word &= _LOW[len(part) % 8]  # (the bytes after the text)
                diff |= word
            if k == 1 and len(part) % 8:
                diff &= _LOW[len(part) % 8]
            hit = diff == _U(0)
            ok = hit if ok is None else ok & hit
        assert ok is not None
        return ok

    def _wide(self, k: int) -> np.ndarray:
        """The ``8 * k`` bytes from each position, as one void item (unaligned reads)."""
        view = self._wides.get(k)
        if view is None:
            n = self.size + len(PAD) - 8 * k + 1
            view = self._wides[k] = np.ndarray((n,), dtype=f"V{8 * k}", buffer=self.big, strides=(1,))
        return view

    def quote_after(self, pos: np.ndarray, stop: np.ndarray) -> np.ndarray:
        """The position of the first ``"`` at or after each ``pos``, or ``stop`` when there is none
        before it."""
        end = stop.copy()
        rows = np.arange(len(pos))
        while len(rows):
            x = self.words[pos] ^ _QUOTES
            flags = (x - _ONES) & ~x & _HIGH  # the lowest flagged byte is a quote
            hit = flags != 0
            end[rows[hit]] = pos[hit] + _run(flags[hit]).astype(np.int64)
            rows, pos = rows[~hit], pos[~hit] + 8
            more = pos < stop[rows]
            rows, pos = rows[more], pos[more]
        return np.minimum(end, stop)

    def digits(self, pos: np.ndarray, strict: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The run of 1 to 18 decimal digits at each ``pos``: its value, its length and whether
        there is one (``strict``: and no leading zero, as in JSON). No sign: a negative number is
        not read here."""
        x = self.words[pos] ^ _ZEROS  # digits become 0..9
        n = _run(_not_digits(x))
        ok = (n > 0) & (((x & _U(0xFF)) != 0) | (n == 1)) if strict else n > 0
        value = _swar8(_top(x, n))
        more = n == 8
        for j in (8, 16):  # the next words, for the runs that go on (every row when most do)
            count = np.count_nonzero(more)
            if not count:
                break
            rows = None if 4 * count >= len(n) else np.flatnonzero(more)
            x = self.words[j:][pos if rows is None else pos[rows]] ^ _ZEROS
            k = _run(_not_digits(x))
            if rows is None:
                k = np.where(more, k, np.uint8(0))
            part = _swar8(_top(x, k))
            if rows is None:
                if j == 16:  # 16 digits and up to 2 more
                    ok &= k <= 2
                value = value * _POW10[k] + part
                n += k
                more = k == 8
            else:
                if j == 16:
                    ok[rows[k > 2]] = False
                value[rows] = value[rows] * _POW10[k] + part
                n[rows] += k
                more = np.zeros(len(pos), dtype=bool)
                more[rows[k == 8]] = True
        return value.view(np.int64), n.astype(np.int64), ok

    def digits_back(self, end: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The run of 1 to 18 decimal digits that ends at each ``end`` (the longest: the byte
        before it is not a digit), as :meth:`digits` (strict) reads it from its start: its value,
        its length and whether there is one without a leading zero. Reads the 8 bytes before
        ``end`` (16, 24 for longer runs): a run closer to the buffer's start is not read right."""
        x = self.words[end - 8] ^ _ZEROS  # the 8 bytes before end: the run is at the top
        n = _run(_not_digits(x).byteswap())
        cut = np.uint8(64) - (n << np.uint8(3))
        top = x >> cut  # the run, its first digit in the lowest byte (a shift by 64 gives 0)
        lead = top & _U(0xFF)
        value = _swar8(top << cut)
        more = n == 8
        for j, scale in ((16, _U(10**8)), (24, _U(10**16))):  # the words before, for runs that go on
            count = np.count_nonzero(more)
            if not count:
                break
            rows = None if 4 * count >= len(n) else np.flatnonzero(more)  # most runs go on: every row
            x = self.words[(end if rows is None else end[rows]) - j] ^ _ZEROS
            k = _run(_not_digits(x).byteswap())
            if rows is None:
                k = np.where(more, k, np.uint8(0))
            cut = np.uint8(64) - (k << np.uint8(3))
            top = x >> cut
            part = _swar8(top << cut)
            part *= scale
            if rows is None:
                value += part
                n += k
                lead = np.where(k > 0, top & _U(0xFF), lead)
                more = k == 8
            else:
                value[rows] += part
                n[rows] += k
                lead[rows] = np.where(k > 0, top & _U(0xFF), lead[rows])
                more = np.zeros(len(n), dtype=bool)
                more[rows[k == 8]] = True
        ok = ((lead != 0) | (n == 1)) & (n <= 18)  # n = 0: lead is 0; 16 digits and up to 2 more
        return value.view(np.int64), n.astype(np.int64), ok

    def match(
        self, t: LineTemplate, start: np.ndarray, stop: np.ndarray, whole: bool = False, interned: tuple = ()
    ) -> tuple[np.ndarray, dict]:
        """Whether each line ``[start, stop)`` begins with ``t`` (``whole``: is exactly ``t``), and
        the values: ``{key: int64 array}`` for INT and QINT values, ``{key: (lo, hi)}`` byte ranges
        for STR values (``(codes, strings)`` for those in ``interned``: see :meth:`intern`),
        ``{key: position}`` for nested objects; ``"end"``: where ``t`` ends (without ``whole``,
        the caller checks that it is ``stop``, or reads on).

        ``whole``: the steps after the last string are read from the line's end backwards, so
        that string needs no search for its closing quote; it is checked for quotes afterwards
        (its distinct values, when interned)."""
        ok = np.ones(len(start), dtype=bool)
        out: dict = {}
        steps = t.steps
        last = max([i for i, (kind, _) in enumerate(steps) if kind == STR], default=-1) if whole else -1
        pos = self._steps(steps[:last] if last >= 0 else steps, start, stop, ok, out, False)
        if last < 0:
            ok &= (pos == stop) if whole else (pos <= stop)
            out["end"] = pos
        else:
            back = self._steps(steps[:last:-1], stop, stop, ok, out, True)
            ok &= back >= pos
            key = steps[last][1]
            if key not in interned:
                ok &= self.quote_after(pos, back) == back
            out[key] = (pos, np.where(ok, back, pos))
            out["end"] = stop
        for key in interned:
            lo, hi = out[key]
            if not ok.any():
                out[key] = (np.zeros(len(ok), dtype=np.int64), [""])
                continue
            codes, strings = self.intern(lo, np.where(ok, hi, lo))  # the rows that fail: ""
            if last >= 0 and key == steps[last][1]:
                quoted = np.array(['"' in text for text in strings], dtype=bool)
                if quoted.any():
                    ok &= ~quoted[codes]
            out[key] = (codes, strings)
        return ok, out

    def _steps(
        self, steps: list, pos: np.ndarray, stop: np.ndarray, ok: np.ndarray, out: dict, backward: bool
    ) -> np.ndarray:
        """Read ``steps`` from ``pos`` on (``backward``: from the line's end back, the steps in
        reverse), updating ``ok`` and ``out``; returns where they end. Positions stay in the line
        (a line that is not the template may run out); once no line is left, the values are zeros."""
        for kind, what in steps:
            if not ok.any():
                zeros = np.zeros(len(ok), dtype=np.int64)
                out.update(
                    {
                        key: (pos, pos) if kind == STR else zeros if kind != MARK else pos
                        for kind, key in steps
                        if kind != LIT and key not in out
                    }
                )
                break
            if kind == LIT:
                if backward:
                    pos = np.maximum(pos - len(what), 0)
                    ok &= self.equals(pos, what)
                else:
                    ok &= self.equals(pos, what)
                    pos = pos + len(what)
            elif kind == MARK:
                out[what] = pos
            elif kind == STR:  # forward only
                end = self.quote_after(pos, stop)
                out[what] = (pos, end)
                pos = end
            elif backward:
                out[what], n, good = self.digits_back(pos)
                ok &= good
                pos = np.maximum(pos - n, 0)
            else:
                out[what], n, good = self.digits(pos)  # QINT too: "007" is read by orjson
                ok &= good
                pos = pos + n
            if not backward:
                ok &= pos <= stop
                pos = np.minimum(pos, stop)
        return pos

    def intern(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, list]:
        """Codes of the strings ``big[lo:hi]`` (equal bytes, equal code) and the strings, decoded
        once (bytes that are not UTF-8, only in files that the caller drops, with replacement
        characters). Strings are grouped by a hash of their length, first and last eight bytes,
        then checked byte for byte against their group's first (the middle bytes only for the
        strings longer than 16 bytes)."""
        n = hi - lo
        short = n < 8
        first = self.words[lo] & _LOW[np.minimum(n, 8)]
        last = np.where(short, _U(0), self.words[np.where(short, lo, hi - 8)])
        h = n.astype(np.uint64) * _U(0x9E3779B97F4A7C15)
        for w in (first, last):
            h ^= w
            h *= _U(0xFF51AFD7ED558CCD)
            h ^= h >> _U(29)
        codes, reps = _group(h)
        rep = np.array(reps, dtype=np.int64)
        same = bool(
            (n == n[rep][codes]).all() and (first == first[rep][codes]).all() and (last == last[rep][codes]).all()
        )
        long = np.flatnonzero(n > 16)
        if same and len(long):  # the middle words of the long strings, against their group's first
            at, size, code = lo[long], n[long], codes[long]
            for j in range(8, int(size.max()) - 8, 8):
                more = size > j + 8
                words = self.words[j:]
                if not (words[at[more]] == words[lo[rep]][code[more]]).all():
                    same = False
                    break
        if not same:  # two strings with one hash: group by the bytes themselves
            codes, reps = self._intern_by_bytes(lo, n)
        return codes, [self.big[a:b].decode("utf-8", "replace") for a, b in zip(lo[reps].tolist(), hi[reps].tolist())]

    def _intern_by_bytes(self, lo: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, list]:
        words = [self.words[lo + 8 * j] & _LOW[np.clip(n - 8 * j, 0, 8)] for j in range(-(-int(n.max()) // 8))]
        _, first, codes = np.unique(
            np.stack([n.astype(np.uint64)] + words, axis=1), axis=0, return_index=True, return_inverse=True
        )
        return codes.reshape(-1), first.tolist()


def clean_text(data: bytes) -> bool:
    """Valid UTF-8 without control characters other than newlines (what JSON strings allow
    without escapes)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return re.search(rb"[\x00-\x09\x0b-\x1f]", data) is None
