"""CRC32C of each record's payload, computed over the chunks an event file is written from."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from smdebug.codec.crc import crc32c

__all__ = ["payload_crcs", "HEADER_BYTES", "FOOTER_BYTES"]

HEADER_BYTES = 12  # u64 length + u32 masked CRC of the length
FOOTER_BYTES = 4


def payload_crcs(chunks: Iterable, starts: Sequence[int], lengths: Sequence[int]) -> list[int]:
    """The CRC32C of the payload of each record ``[start, start + length)`` of the file made of
    ``chunks`` (bytes-like pieces, concatenated). Records must be given in file order."""
    views: list[memoryview] = []
    offs: list[int] = []
    ends: list[int] = []
    pos = 0
    for c in chunks:
        v = memoryview(c)
        if v.format != "B" or v.ndim != 1:
            v = v.cast("B")
        if v.nbytes:
            views.append(v)
            offs.append(pos)
            pos += v.nbytes
            ends.append(pos)
    out: list[int] = []
    ci, last = 0, len(views)
    for s, n in zip(starts, lengths):
        a, b = s + HEADER_BYTES, s + n - FOOTER_BYTES
        while ci < last and ends[ci] <= a:
            ci += 1
        if b <= a:  # an empty payload
            out.append(0)
            continue
        o = offs[ci]
        if b <= ends[ci]:  # within one chunk (a step's small records)
            out.append(crc32c(views[ci][a - o : b - o]))
            continue
        crc, j, p = 0, ci, a
        while p < b:
            o = offs[j]
            e = min(b, ends[j])
            crc = crc32c(views[j][p - o : e - o], crc)
            p = e
            j += 1
        out.append(crc)
    return out
