"""A small protobuf wire-format codec: just what Event/Summary/TensorProto need.

No generated code and no protobuf runtime, so no protobuf version to pin.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any, TypeAlias

from smdebug.exceptions import EventFileCorrupt

__all__ = ["varint", "key", "ld", "iter_fields", "VARINT", "I64", "LEN", "I32", "Span", "FieldValue"]

VARINT, I64, LEN, I32 = 0, 1, 2, 5

#: A (start, stop) slice of the buffer a message is decoded from.
Span: TypeAlias = tuple[int, int]
#: The value :func:`iter_fields` gives for a field, which its wire type decides: an ``int``
#: (VARINT), the raw ``bytes`` (I64: 8 of them, I32: 4) or the field's :data:`Span` (LEN). No
#: static type follows a value's type from the integer beside it without a check per field on the
#: decoders' hot path, so this is the codec's one ``Any``: each decoder tests the wire type and
#: hands the value on to typed code (``Span`` parameters, ``struct`` unpacking).
FieldValue: TypeAlias = Any

_D = struct.Struct("<d")


_SMALL = [bytes((i,)) for i in range(0x80)]


def varint(n: int) -> bytes:
    if 0 <= n < 0x80:
        return _SMALL[n]
    if n < 0:
        n &= 0xFFFFFFFFFFFFFFFF  # int64 negatives are ten-byte varints
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def key(field: int, wire_type: int) -> bytes:
    return varint((field << 3) | wire_type)


def ld(field: int, payload: bytes) -> bytes:
    """A length-delimited field."""
    return key(field, LEN) + varint(len(payload)) + payload


def double(field: int, value: float) -> bytes:
    return key(field, I64) + _D.pack(value)


def read_varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    """The varint at ``buf[pos:end]`` and the position after it."""
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise EventFileCorrupt("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise EventFileCorrupt("varint longer than 10 bytes")


def iter_fields(buf: bytes, pos: int = 0, end: int | None = None) -> Iterator[tuple[int, int, FieldValue]]:
    """Yield (field number, wire type, value) over a message in ``buf[pos:end]``.

    Varints give an int, fixed64/fixed32 give the raw 8/4 bytes, length-delimited fields give
    the (start, stop) span inside ``buf`` so that nested messages are not copied.
    """
    if end is None:
        end = len(buf)
    value: FieldValue
    while pos < end:
        tag, pos = read_varint(buf, pos, end)
        field, wt = tag >> 3, tag & 7
        if wt == VARINT:
            value, pos = read_varint(buf, pos, end)
        elif wt == LEN:
            n, pos = read_varint(buf, pos, end)
            if pos + n > end:
                raise EventFileCorrupt("length-delimited field runs past its message")
            value = (pos, pos + n)
            pos += n
        elif wt == I64:
            if pos + 8 > end:
                raise EventFileCorrupt("truncated fixed64 field")
            value = buf[pos : pos + 8]
            pos += 8
        elif wt == I32:
            if pos + 4 > end:
                raise EventFileCorrupt("truncated fixed32 field")
            value = buf[pos : pos + 4]
            pos += 4
        else:
            raise EventFileCorrupt(f"unsupported protobuf wire type {wt}")
        if field == 0:
            raise EventFileCorrupt("protobuf field number 0")
        yield field, wt, value


def packed_varints(buf: bytes, span: Span) -> list[int]:
    pos, end = span
    out: list[int] = []
    while pos < end:
        v, pos = read_varint(buf, pos, end)
        out.append(v)
    return out
