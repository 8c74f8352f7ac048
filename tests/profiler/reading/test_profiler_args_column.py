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
    return ArgsColumn(
        [DATA, TABLE],
        np.array([0, 1, NONE, OBJECT, 0, 1], dtype=np.int32),
        np.array([2, 1, 0, 0, 31, 0]),
        np.array([29, 0, 0, 0, 55, 0]),
        [{"z": 1}],
    )


EXPECTED = [
    {"pid": 1, "step_num": "3"},
    {"pid": 8, "step_num": "40"},
    None,
    {"z": 1},
    {"a": [1, {"b": None}]},
    {"pid": 7, "step_num": "30"},
]


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
    assert list(merged.args) == [
        a
        for _, a in sorted(
            zip(list(bulk.start_us) + [0, 10] + [0, 10, 20], EXPECTED + [{"l": 1}, None, None, None, None]),
            key=lambda t: t[0],
        )
    ]
    assert list(merged.take(merged.step == 1).args) == [EXPECTED[1], None, None]
    assert list(FrameworkEvents.concat([listed, without]).args) == [{"l": 1}, None, None, None, None]


def _table(n: int) -> FrameworkEvents:
    i64 = np.arange(n, dtype=np.int64)
    obj = np.array([f"n{i % 3}" for i in range(n)], dtype=object)
    return FrameworkEvents(
        obj,
        obj[::-1].copy(),
        (i64 * 7) % 50,
        (i64 * 7) % 50 + 3,
        i64,
        obj.copy(),
        i64 + 1,
        i64 + 2,
        ArgsColumn.from_list([{"i": i} for i in range(n)]),
        i64 + 3,
        obj.copy(),
    )


def _columns(ev: FrameworkEvents) -> dict:
    return {
        f: getattr(ev, f).tolist()
        for f in ("phase", "name", "start_us", "end_us", "step", "node_id", "pid", "tid", "phase_pid", "file_suffix")
    } | {"args": list(ev.args)}


def _copy(ev: FrameworkEvents) -> FrameworkEvents:
    """The same rows, not a range of a table."""
    return ev.take(np.arange(len(ev)))


@pytest.mark.parametrize("cuts", [[0, 4, 9, 12, 20], [0, 20], [3, 7, 7, 15], [0, 5, 10]])
def test_ranges_of_a_table_concat_as_their_rows(cuts):
    """Adjacent row ranges of one table are taken back as one range; the rows are those of a
    plain concatenation of copies, sorted by start the same way, with or without other parts."""
    table, other = _table(20), _table(6)
    parts = [table.rows(a, b) for a, b in zip(cuts, cuts[1:])]
    assert all(len(p) == b - a for p, a, b in zip(parts, cuts, cuts[1:]))
    for mixed in (parts, parts[:1] + [other] + parts[1:], [other] + parts):
        assert _columns(FrameworkEvents.concat(mixed)) == _columns(FrameworkEvents.concat([_copy(p) for p in mixed]))


def test_a_range_of_a_range_is_a_range_of_the_table():
    table = _table(20)
    inner = table.rows(5, 15).rows(2, 6)
    assert inner.start_us.tolist() == table.start_us[7:11].tolist() and list(inner.args) == list(table.args)[7:11]
    assert inner.__dict__["_rows_of"][1:] == (7, 11) and inner.__dict__["_rows_of"][0] is table
    assert len(table.rows(18, 40)) == 2 and len(table.rows(-3, 20)) == 3 and len(table.rows(9, 4)) == 0
    parts = [table.rows(0, 5), table.rows(5, 15).rows(0, 4), table.rows(9, 20)]  # all the table, in three
    joined = FrameworkEvents.concat(parts)
    assert _columns(joined) == _columns(FrameworkEvents.concat([_copy(p) for p in parts]))
    assert joined.start_us.tolist() == sorted(table.start_us.tolist())


def test_a_copy_or_replacement_of_a_range_is_not_taken_as_the_range():
    """``replace`` (new columns) and ``take`` make parts that are not ranges of the table: concat
    reads their own rows."""
    import dataclasses

    table = _table(10)
    shifted = dataclasses.replace(table.rows(5, 10), start_us=table.start_us[5:10] + 1000)
    merged = FrameworkEvents.concat([table.rows(0, 5), shifted])
    assert "_rows_of" not in shifted.__dict__
    assert sorted(merged.start_us.tolist()) == sorted(
        table.start_us[:5].tolist() + (table.start_us[5:] + 1000).tolist()
    )
    assert "_rows_of" not in table.rows(0, 5).take(np.arange(3)).__dict__


def test_joined_columns_are_the_parts_rows_whatever_their_integer_types():
    """concat writes the int64 columns into one block and the str columns into another; parts
    with columns of another integer type (int32 from other code) are joined column by column,
    with numpy's promotion; either way each column holds the parts' rows, independent of each other."""
    import dataclasses

    a, b = _table(7), _table(5)
    narrow = dataclasses.replace(b, pid=b.pid.astype(np.int32), phase_pid=None, file_suffix=None)
    for parts in ([a, b], [a, narrow]):
        merged = FrameworkEvents.concat(parts)
        expected = FrameworkEvents.concat([_copy(p) for p in parts])
        order = np.argsort(np.concatenate([p.start_us for p in parts]), kind="stable")
        assert merged.pid.tolist() == np.concatenate([p.pid.astype(np.int64) for p in parts])[order].tolist()
        assert (
            merged.phase_pid.tolist()
            == np.concatenate([p.phase_pid if p.phase_pid is not None else np.full(len(p), -1) for p in parts])[
                order
            ].tolist()
        )
        assert (
            merged.file_suffix.tolist()
            == np.concatenate(
                [p.file_suffix if p.file_suffix is not None else np.full(len(p), None, dtype=object) for p in parts]
            )[order].tolist()
        )
        assert merged.name.tolist() == expected.name.tolist() and merged.step.tolist() == expected.step.tolist()
    unsorted = FrameworkEvents._join([a, b])  # (before sorting: the block rows themselves)
    unsorted.start_us[0] = -1
    assert unsorted.end_us[0] == a.end_us[0] and a.start_us[0] != -1  # one column, not its neighbours or a part


def test_a_range_slices_its_columns_when_first_read():
    """A range made by rows() holds only where it is until a column is read; then it has all of
    them, as views of its table, and behaves as any FrameworkEvents (len, replace, pickle)."""
    import dataclasses
    import pickle

    table = _table(12)
    part = table.rows(3, 8)
    assert set(part.__dict__) == {"_rows_of"} and len(part) == 5
    assert part.start_us.tolist() == table.start_us[3:8].tolist() and np.shares_memory(part.step, table.step)
    assert _columns(part) == _columns(_copy(part)) == _columns(table.rows(3, 8))
    lazy = table.rows(0, 4)
    assert _columns(pickle.loads(pickle.dumps(lazy))) == _columns(_copy(lazy))
    assert dataclasses.replace(table.rows(0, 4), name=table.name[:4]).phase.tolist() == table.phase[:4].tolist()
    with pytest.raises(AttributeError):
        table.rows(0, 4).no_such_column  # noqa: B018
