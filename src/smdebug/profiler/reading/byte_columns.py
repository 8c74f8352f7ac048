"""Columns from lines of JSON in bulk, with numpy: the byte-level tools of the framework bulk
reader (:mod:`smdebug.profiler.reading.trace_bulk`).

:class:`JoinedLines` holds the bytes of many files joined into one buffer and an unaligned 8-byte
view of it. A :class:`LineTemplate` describes a JSON object written on one line without escapes
(its keys in order, the kind of each value, its separators); :meth:`JoinedLines.match` checks, for
many lines at once, that each is exactly that object, and reads its values: the literal bytes are
compared eight at a time, a string runs to the next quote (found eight bytes at a time: the batch
holds no backslash, so a string holds no quote), an integer is a run of digits parsed eight at a
time (SWAR in ``uint64``). :meth:`JoinedLines.number` reads decimal numbers without exponent
exactly (the system-metrics bulk reader's values and times). ``intern`` groups strings by a hash
of their bytes (checked byte for byte) and decodes each distinct one once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

__all__ = ["JoinedLines", "LineTemplate", "INT", "QINT", "STR", "clean_text"]

# value kinds: a JSON integer, a string of digits read as an integer (``"17"``), a string
INT, QINT, STR = "int", "qint", "str"
_LIT, _MARK = "lit", "mark"

PAD = b"\0" * 64  # reads a little past a line stay in the buffer
_U = np.uint64
_ZEROS = _U(0x3030303030303030)
_ONES = _U(0x0101010101010101)
_HIGH = _U(0x8080808080808080)
_SEVENS = _U(0x7676767676767676)
_QUOTES = _U(0x2222222222222222)
_BYTE_INDEX = _U(0x0001020304050607)  # (2**(8k) * this) >> 56 == k
_LOW = np.array([(1 << (8 * v)) - 1 for v in range(9)], dtype=np.uint64)  # the first v bytes
_POW10 = np.array([10 ** k for k in range(19)], dtype=np.uint64)
_POW10_I = _POW10.astype(np.int64)
_POW10_F = np.array([10.0 ** k for k in range(19)])  # exact: every power of ten up to 1e22 is a double
_EXACT = 1 << 53  # integers below this are doubles exactly
# x86's 80-bit long double holds every integer below 2**64 and powers of ten up to 1e27 exactly
_LONG = np.finfo(np.longdouble).nmant >= 63
_POW10_L = np.array([10 ** k for k in range(19)], dtype=np.longdouble)  # used only when _LONG


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
            if steps and steps[-1][0] == _LIT:
                steps[-1] = (_LIT, steps[-1][1] + text)
            elif text:
                steps.append((_LIT, text))

        def obj(fields: list, close: bytes, prefix: str = "") -> None:
            lit(b"{")
            for i, (key, kind) in enumerate(fields):
                lit((b"" if i == 0 else sep_item) + b'"' + key.encode() + b'"' + sep_kv)
                if isinstance(kind, bytes):
                    lit(kind)
                elif isinstance(kind, list):
                    steps.append((_MARK, prefix + key))
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


def _first_flag(flags: np.ndarray) -> np.ndarray:
    """The index of the lowest byte whose top bit is set (``flags``: only top bits set, not 0)."""
    low = flags & (~flags + _U(1))
    return ((low >> _U(7)) * _BYTE_INDEX) >> _U(56)


def _swar8(x: np.ndarray) -> np.ndarray:
    """The value of 8 decimal digits, one a byte, the first in the lowest byte."""
    x = (x * _U(10) + (x >> _U(8))) & _U(0x00FF00FF00FF00FF)
    x = (x * _U(100) + (x >> _U(16))) & _U(0x0000FFFF0000FFFF)
    return (x * _U(10000) + (x >> _U(32))) & _U(0xFFFFFFFF)


class JoinedLines:
    """The joined bytes of a batch of files and the numpy views that read them."""

    def __init__(self, datas: list[bytes], ends: list[int]):
        """``datas[k][:ends[k]]`` joined, each followed by a newline."""
        self.datas = datas
        self.offsets = np.cumsum([0] + [e + 1 for e in ends[:-1]]).tolist()  # where each file starts in big
        self.big = b"\n".join([*(memoryview(d)[:e] for d, e in zip(datas, ends)), PAD])
        self.size = len(self.big) - len(PAD)
        self.buf = np.frombuffer(self.big, dtype=np.uint8)
        # the eight bytes from each position as one little-endian integer (unaligned reads)
        self.words = np.ndarray((len(self.big) - 7,), dtype="<u8", buffer=self.big, strides=(1,))

    def byte(self, pos) -> np.ndarray:
        return self.buf.take(pos, mode="clip")

    def equals(self, pos, text: bytes) -> np.ndarray:
        """Whether the bytes at each ``pos`` are ``text``."""
        if len(text) < 8:
            return (self.words[pos] & _LOW[len(text)]) == _U(int.from_bytes(text, "little"))
        ok = self.words[pos] == _U(int.from_bytes(text[:8], "little"))
        for j in [*range(8, len(text) - 8, 8), len(text) - 8][1 if len(text) == 8 else 0:]:
            ok &= self.words[pos + j] == _U(int.from_bytes(text[j:j + 8], "little"))  # the last may overlap
        return ok

    def quote_after(self, pos: np.ndarray, stop: np.ndarray) -> np.ndarray:
        """The position of the first ``"`` at or after each ``pos``, or ``stop`` when there is none
        before it."""
        end = stop.copy()
        rows = np.arange(len(pos))
        while len(rows):
            x = self.words[pos] ^ _QUOTES
            flags = (x - _ONES) & ~x & _HIGH  # the lowest flagged byte is a quote
            hit = flags != 0
            end[rows[hit]] = pos[hit] + _first_flag(flags[hit]).astype(np.int64)
            rows, pos = rows[~hit], pos[~hit] + 8
            more = pos < stop[rows]
            rows, pos = rows[more], pos[more]
        return np.minimum(end, stop)

    def digits(self, pos: np.ndarray, strict: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The run of 1 to 18 decimal digits at each ``pos``: its value, its length and whether
        there is one (``strict``: and no leading zero, as in JSON). No sign: a negative number is
        not read here."""
        x = self.words[pos] ^ _ZEROS  # digits become 0..9
        flags = ((x + _SEVENS) | x) & _HIGH  # the bytes that are not digits
        more = flags == 0
        n = np.where(more, 8, _first_flag(np.where(more, _HIGH, flags)).astype(np.int64))
        ok = n > 0
        if strict:
            ok &= ((x & _U(0xFF)) != 0) | (n == 1)
        value = _swar8(x << (_U(8) * (_U(8) - np.maximum(n, 1).astype(np.uint64))))
        for j in (1, 2):  # longer runs: the next words
            rows = np.flatnonzero(more)
            if not len(rows):
                break
            x = self.words[pos[rows] + 8 * j] ^ _ZEROS
            flags = ((x + _SEVENS) | x) & _HIGH
            more_here = flags == 0
            k = np.where(more_here, 8, _first_flag(np.where(more_here, _HIGH, flags)).astype(np.int64))
            if j == 2:  # 16 digits and up to 2 more
                ok[rows[k > 2]] = False
                more_here[:] = False
            part = _swar8(x << (_U(8) * (_U(8) - np.maximum(k, 1).astype(np.uint64))))
            value[rows] = value[rows] * _POW10[k] + np.where(k > 0, part, _U(0))
            n[rows] += k
            more = np.zeros(len(pos), dtype=bool)
            more[rows[more_here]] = True
        return value.astype(np.int64), n, ok

    def number(self, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The JSON number without exponent at each ``pos`` (``-12``, ``0.5``, ``1790020800.0123``):
        its float64 value, its length and whether it is one that is read here. With ``m`` its
        digits as an integer and ``f`` the number of them after the point, the value is the
        correctly rounded ``m / 10**f``, the value a correct parser (orjson, pyarrow) gives: when
        ``m < 2**53``, the double division (both exact, IEEE division rounds correctly); above,
        the division in x86's long double (both exact, 64-bit quotient) rounded to a double, which
        is right unless the quotient is exactly halfway between two doubles (about one value in
        2,048): those few are parsed by Python's ``float``. Not read here (``ok`` False):
        exponents, more than 18 digits, ``m >= 2**53`` where long double is not wider than double."""
        neg = self.byte(pos) == 45  # "-"
        p = pos + neg
        ival, ilen, ok = self.digits(p)
        p = p + ilen
        dot = self.byte(p) == 46  # "."
        fval, flen, fok = self.digits(p + 1, strict=False)
        ok &= ~dot | fok  # a point is followed by digits
        flen = np.where(dot, flen, 0)
        ok &= ilen + flen <= 18
        flen = np.where(ok, flen, 0)
        mant = np.where(ok, ival, 0) * _POW10_I[flen] + np.where(dot & ok, fval, 0)
        value = mant.astype(np.float64) / _POW10_F[flen]
        length = neg + ilen + np.where(dot, 1 + flen, 0)
        wide = np.flatnonzero(ok & (mant >= _EXACT))
        if len(wide):
            if _LONG:
                value[wide] = self._wide(mant[wide], flen[wide], pos[wide], length[wide], neg[wide])
            else:
                ok[wide] = False
        value = np.where(neg, -value, value)
        return value, length, ok

    def _wide(self, mant: np.ndarray, flen: np.ndarray, pos: np.ndarray, length: np.ndarray,
              neg: np.ndarray) -> np.ndarray:
        """``mant / 10**flen`` rounded to doubles for mantissas of 2**53 and more (see number)."""
        quotient = mant.astype(np.longdouble) / _POW10_L[flen]
        value = quotient.astype(np.float64)
        below, above = np.nextafter(value, -np.inf), np.nextafter(value, np.inf)
        two = np.longdouble(2)
        halfway = (quotient == (value.astype(np.longdouble) + below) / two) | (
            quotient == (value.astype(np.longdouble) + above) / two)
        for i in np.flatnonzero(halfway).tolist():  # the text itself, sign left out (value is |x|)
            value[i] = float(self.big[pos[i] + neg[i]:pos[i] + length[i]])
        return value

    def match(self, t: LineTemplate, start: np.ndarray, stop: np.ndarray) -> tuple[np.ndarray, dict]:
        """Whether each line ``[start, stop)`` begins with ``t``, and the values: ``{key: int64
        array}`` for INT and QINT values, ``{key: (lo, hi)}`` byte ranges for STR values, ``{key:
        position}`` for nested objects; ``"end"``: where ``t`` ends (the caller checks that it is
        ``stop``, or reads on)."""
        ok = np.ones(len(start), dtype=bool)
        out: dict = {}
        pos = start
        for kind, what in t.steps:
            if kind == _LIT:
                ok &= self.equals(pos, what)
                pos = pos + len(what)
            elif kind == _MARK:
                out[what] = pos
            elif kind == STR:
                end = self.quote_after(pos, stop)
                out[what] = (pos, end)
                pos = end
            else:
                out[what], n, good = self.digits(pos)  # QINT too: "007" is read by orjson
                ok &= good
                pos = pos + n
        ok &= pos <= stop
        out["end"] = pos
        return ok, out

    def intern(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, list]:
        """Codes of the strings ``big[lo:hi]`` (equal bytes, equal code) and the strings, decoded once."""
        n = hi - lo
        h = n.astype(np.uint64) * _U(0x9E3779B97F4A7C15)
        words = []
        for j in range(-(-int(n.max(initial=0)) // 8)):
            w = self.words[lo + 8 * j] & _LOW[np.clip(n - 8 * j, 0, 8)]
            words.append(w)
            h = (h ^ w) * _U(0xFF51AFD7ED558CCD)
            h ^= h >> _U(29)
        codes = np.empty(len(h), dtype=np.int64)
        reps: list[int] = []
        rest = np.arange(len(h))
        while len(rest) and len(reps) < 64:  # few distinct strings: one pass each
            eq = h[rest] == h[rest[0]]
            codes[rest[eq]] = len(reps)
            reps.append(int(rest[0]))
            rest = rest[~eq]
        if len(rest):  # many: by sorting (np.unique would import numpy.ma, 10 ms, on its first call)
            order = rest[np.argsort(h[rest], kind="stable")]
            new = np.concatenate(([True], h[order[1:]] != h[order[:-1]]))
            codes[order] = np.cumsum(new) - 1 + len(reps)
            reps.extend(order[new].tolist())
        rep = np.array(reps, dtype=np.int64)[codes]
        same = n == n[rep]
        for w in words:
            same &= w == w[rep]
        if not same.all():  # two strings with one hash: group by the bytes themselves
            _, first, codes = np.unique(np.stack([n.astype(np.uint64)] + words, axis=1), axis=0, return_index=True,
                                        return_inverse=True)
            reps = first.tolist()
            codes = codes.reshape(-1)
        return codes, [self.big[a:b].decode("utf-8") for a, b in zip(lo[reps].tolist(), hi[reps].tolist())]


def clean_text(data: bytes) -> bool:
    """Valid UTF-8 without control characters other than newlines (what JSON strings allow
    without escapes)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return re.search(rb"[\x00-\x09\x0b-\x1f]", data) is None
