"""TFRecord framing: ``u64 length | u32 masked crc(length) | payload | u32 footer``."""

from __future__ import annotations

import struct
from collections.abc import Iterator

from smdebug.codec.crc import EVENTS_FOOTER, masked_crc32c, masked_crc32c_bytes
from smdebug.exceptions import EventFileCorrupt

__all__ = ["frame", "unframe", "iter_records", "RECORD_OVERHEAD"]

RECORD_OVERHEAD = 16
_LEN = struct.Struct("<Q")
_U32 = struct.Struct("<I")


def frame(payload: bytes, payload_crc: bool = False) -> bytes:
    """One record. ``payload_crc`` writes the real payload CRC (TensorBoard files); otherwise the
    constant footer smdebug's event files carry."""
    header = _LEN.pack(len(payload))
    footer = masked_crc32c_bytes(payload) if payload_crc else EVENTS_FOOTER
    return b"".join((header, masked_crc32c_bytes(header), payload, footer))


def unframe(buf: bytes, offset: int = 0, where: object = "<bytes>", base: int = 0) -> tuple[bytes, int]:
    """Decode the record starting at ``offset``; return (payload, offset of the next record).

    The footer may be either smdebug's constant or the payload's own CRC. Any defect raises
    :class:`EventFileCorrupt` naming ``where`` and the offset in the file (``buf`` holds the file's
    bytes from ``base`` on).
    """
    end = len(buf)
    at = base + offset
    if offset + 12 > end:
        raise EventFileCorrupt(
            f"{where}: truncated record at byte {at} (header needs 12 bytes, {max(end - offset, 0)} left)"
        )
    header = bytes(buf[offset : offset + 8])
    (length,) = _LEN.unpack(header)
    (len_crc,) = _U32.unpack_from(buf, offset + 8)
    if len_crc != masked_crc32c(header):
        raise EventFileCorrupt(f"{where}: bad length CRC in record at byte {at}")
    start = offset + 12
    stop = start + length
    if stop + 4 > end:
        raise EventFileCorrupt(
            f"{where}: truncated record at byte {at} "
            f"(declares {length} payload bytes, {max(end - start - 4, 0)} present)"
        )
    payload = bytes(buf[start:stop])
    footer = bytes(buf[stop : stop + 4])
    if footer != EVENTS_FOOTER and footer != masked_crc32c_bytes(payload):
        raise EventFileCorrupt(f"{where}: bad payload CRC in record at byte {at}")
    return payload, stop + 4


def iter_records(buf: bytes, where: object = "<bytes>") -> Iterator[tuple[int, bytes]]:
    """Every record of a whole file, as (offset, payload)."""
    offset = 0
    end = len(buf)
    while offset < end:
        payload, nxt = unframe(buf, offset, where)
        yield offset, payload
        offset = nxt
