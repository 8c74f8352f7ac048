"""Decimal numbers without exponent read exactly from many positions of joined text at once: the
system-metrics bulk reader's values and times (:mod:`~smdebug.profiler.reading.system_bulk`)."""

from __future__ import annotations

import numpy as np

from smdebug.profiler.reading.byte_columns import JoinedLines

__all__ = ["numbers"]

_POW10_I = np.array([10**k for k in range(19)], dtype=np.int64)
_POW10_F = np.array([10.0**k for k in range(19)])  # exact: every power of ten up to 1e22 is a double
_EXACT = 1 << 53  # integers below this are doubles exactly
# x86's 80-bit long double holds every integer below 2**64 and powers of ten up to 1e27 exactly
_LONG = np.finfo(np.longdouble).nmant >= 63
_POW10_L = np.array([10**k for k in range(19)], dtype=np.longdouble)  # used only when _LONG


def numbers(lines: JoinedLines, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The JSON number without exponent at each ``pos`` (``-12``, ``0.5``, ``1790020800.0123``):
    its float64 value, its length and whether it is one that is read here. With ``m`` its
    digits as an integer and ``f`` the number of them after the point, the value is the
    correctly rounded ``m / 10**f``, the value a correct parser (orjson, pyarrow) gives: when
    ``m < 2**53``, the double division (both exact, IEEE division rounds correctly); above,
    the division in x86's long double (both exact, 64-bit quotient) rounded to a double, which
    is right unless the quotient is exactly halfway between two doubles (about one value in
    2,048): those few are parsed by Python's ``float``. Not read here (``ok`` False):
    exponents, more than 18 digits, ``m >= 2**53`` where long double is not wider than double."""
    neg = lines.byte(pos) == 45  # "-"
    p = pos + neg
    ival, ilen, ok = lines.digits(p)
    p = p + ilen
    dot = lines.byte(p) == 46  # "."
    fval, flen, fok = lines.digits(p + 1, strict=False)
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
            value[wide] = _wide(lines, mant[wide], flen[wide], pos[wide], length[wide], neg[wide])
        else:
            ok[wide] = False
    value = np.where(neg, -value, value)
    return value, length, ok


def _wide(
    lines: JoinedLines, mant: np.ndarray, flen: np.ndarray, pos: np.ndarray, length: np.ndarray, neg: np.ndarray
) -> np.ndarray:
    """``mant / 10**flen`` rounded to doubles for mantissas of 2**53 and more (see :func:`numbers`)."""
    quotient = mant.astype(np.longdouble) / _POW10_L[flen]
    value = quotient.astype(np.float64)
    below, above = np.nextafter(value, -np.inf), np.nextafter(value, np.inf)
    two = np.longdouble(2)
    halfway = (quotient == (value.astype(np.longdouble) + below) / two) | (
        quotient == (value.astype(np.longdouble) + above) / two
    )
    for i in np.flatnonzero(halfway).tolist():  # the text itself, sign left out (value is |x|)
        value[i] = float(lines.big[pos[i] + neg[i] : pos[i] + length[i]])
    return value
