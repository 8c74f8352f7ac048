"""payload_crcs: each record's payload CRC32C over the pieces an event file is written from, however
the records and the pieces cut each other."""

from __future__ import annotations

import numpy as np
import pytest

from smdebug.codec.crc import crc32c
from smdebug.codec.record_crc import FOOTER_BYTES, HEADER_BYTES, payload_crcs


@pytest.mark.parametrize("seed", range(20))
def test_payload_crcs_equal_the_crc_of_each_payload(seed):
    rng = np.random.default_rng(seed)
    lengths = [int(n) for n in rng.integers(16, 300, size=int(rng.integers(1, 40)))]
    lengths[int(rng.integers(len(lengths)))] = 16  # an empty payload
    data = rng.integers(0, 256, size=sum(lengths), dtype=np.uint8)
    cuts = sorted({0, len(data), *(int(c) for c in rng.integers(0, len(data), size=int(rng.integers(0, 30))))})
    chunks: list = []
    for i, (a, b) in enumerate(zip(cuts, cuts[1:])):  # bytes, numpy views, float views, empty pieces
        piece = data[a:b]
        chunks.append(piece.tobytes() if i % 3 == 0 else piece)
        if i % 4 == 1:
            chunks.append(b"")
    if len(data) % 4 == 0 and seed % 2:
        chunks = [data.view(np.float32)]  # one chunk whose items are not bytes
    starts = [int(s) for s in np.cumsum([0, *lengths[:-1]])]
    want = [crc32c(data[s + HEADER_BYTES : s + n - FOOTER_BYTES].tobytes()) for s, n in zip(starts, lengths)]
    assert payload_crcs(chunks, starts, lengths) == want


def test_payload_crcs_of_records_not_starting_at_zero():
    """The records of a file that holds other bytes before and between them (write_tensor after
    write_tensors): only the given records are read."""
    data = bytes(range(256)) * 4
    starts, lengths = [10, 200, 600], [50, 16, 300]
    chunks = [data[:7], data[7:250], data[250:]]
    want = [crc32c(data[s + HEADER_BYTES : s + n - FOOTER_BYTES]) for s, n in zip(starts, lengths)]
    assert payload_crcs(chunks, starts, lengths) == want
