"""What the system-file tests compare: a file's rows as pyarrow's JSON reader reads them (the
reference path), and two SystemChunks read alike, value for value."""

from __future__ import annotations

import numpy as np

from smdebug.profiler.reading import system_files as sf


def json_path(data: bytes) -> sf.SystemChunk:
    """``data``'s rows read by pyarrow's JSON reader."""
    return sf._group(sf._json_columns(sf._read_table(data.rstrip(), "x")))


def assert_same_chunks(a: sf.SystemChunk, b: sf.SystemChunk) -> None:
    """The same series, in the same order, with the same times and values to the bit (both are
    parses of the same text)."""
    assert a.keys == b.keys and a.rows == b.rows
    for x, y in zip(a.timestamp_s, b.timestamp_s):
        assert np.array_equal(x, y)
    for x, y in zip(a.value, b.value):
        assert np.array_equal(x, y)
