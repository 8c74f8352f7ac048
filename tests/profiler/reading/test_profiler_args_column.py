"""smdebug.profiler.reading.args_column: the args of framework events kept as file bytes or
columns, decoded when asked, behaving as the list of dicts the general reader gives."""

from __future__ import annotations

import numpy as np
import pytest

from smdebug.profiler.reading.args_column import NONE, OBJECT, ArgsColumn, ArgsTable
from smdebug.profiler.reading.frames import FrameworkEvents

DATA = b'xx{"pid": 1, "step_num": "3"}yy{"a": [1, {"b": null}]}'
TABLE = ArgsTable(["pid", "step_num"], [False, True], [np.array([7, 8]), np.array([30, 40])])


def _column() -> ArgsColumn:
    # rows: bytes, table row 1, None, a decoded object, bytes, table row 0
    return ArgsColumn([DATA, TABLE], np.array([0, 1, NONE, OBJECT, 0, 1], dtype=np.int32),
                      np.array([2, 1, 0, 0, 31, 0]), np.array([29, 0, 0, 0, 55, 0]), [{"z": 1}])


EXPECTED = [{"pid": 1, "step_num": "3"}, {"pid": 8, "step_num": "40"}, None, {"z": 1}, {"a": [1, {"b": None}]},
            {"pid": 7, "step_num": "30"}]


def test_rows_decode_as_the_dicts_they_were():
    col = _column()
    assert len(col) == 6 and [col[i] for i in range(6)] == EXPECTED and col[-1] == EXPECTED[-1]
    assert list(col) == EXPECTED and list(col) == EXPECTED  # the second iteration from what the first kept
    assert col == EXPECTED and col[1:4] == EXPECTED[1:4] and col != EXPECTED[:-1]
    with pytest.raises(IndexError, match="args index 6 out of range for 6 events"):
        col[6]


def test_take_rows_and_concat_keep_each_row():
    col = _column()
    assert list(col.take(np.array([5, 0, 2]))) == [EXPECTED[5], EXPECTED[0], None]
    assert list(col.rows(2, 5)) == EXPECTED[2:5]
    both = ArgsColumn.concat([col, ArgsColumn.from_list([{"q": 2}, None]), col.rows(0, 2)])
    assert list(both) == EXPECTED + [{"q": 2}, None] + EXPECTED[:2]
    assert len(both._buffers) == 2  # the shared buffers are kept once


def _events(n: int, args) -> FrameworkEvents:
    i64 = np.arange(n, dtype=np.int64)
    obj = np.array(["x"] * n, dtype=object)
    return FrameworkEvents(obj, obj.copy(), i64 * 10, i64 * 10 + 5, i64, obj.copy(), i64, i64, args)


def test_frames_mix_lists_and_columns():
    bulk, listed, without = _events(6, _column()), _events(2, [{"l": 1}, None]), _events(3, [])
    merged = FrameworkEvents.concat([bulk, listed, without])
    assert isinstance(merged.args, ArgsColumn)
    assert list(merged.args) == [a for _, a in sorted(zip(list(bulk.start_us) + [0, 10] + [0, 10, 20],
                                                          EXPECTED + [{"l": 1}, None, None, None, None]),
                                                      key=lambda t: t[0])]
    assert list(merged.take(merged.step == 1).args) == [EXPECTED[1], None, None]
    assert list(FrameworkEvents.concat([listed, without]).args) == [{"l": 1}, None, None, None, None]
