"""Masked CRC32C as TFRecord uses it, computed by the C-accelerated ``crc32c`` package."""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from crc32c import crc32c as _crc32c

if TYPE_CHECKING:
    import numpy as np
    from typing_extensions import Buffer

__all__ = ["crc32c", "masked_crc32c", "masked_crc32c_bytes", "EVENTS_FOOTER"]

_MASK_DELTA = 0xA282EAD8

# crc32c(data, value=0): the CRC32C of a bytes-like object, continuing from ``value``; the C
# function itself (no Python call around it: the writer calls it once or more per record).
if TYPE_CHECKING:
    # the C function takes any buffer, a contiguous array's memory too (numpy's stubs declare
    # ndarray.__buffer__ for Python >= 3.12 only; this package supports 3.10)
    def crc32c(data: Buffer | np.ndarray, value: int = 0) -> int: ...
else:
    crc32c = _crc32c


def mask(crc: int) -> int:
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    return mask(_crc32c(data))


def masked_crc32c_bytes(data: bytes) -> bytes:
    return struct.pack("<I", masked_crc32c(data))


# smdebug's event files do not carry the payload CRC: every record's footer is the masked
# CRC32C of these ten ASCII bytes.
CHECKSUM_MAGIC_BYTES = b"0x12345678"
EVENTS_FOOTER = masked_crc32c_bytes(CHECKSUM_MAGIC_BYTES)
