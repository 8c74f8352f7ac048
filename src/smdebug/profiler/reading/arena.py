"""Where the bulk reader (:mod:`~smdebug.profiler.reading.trace_bulk`) puts the events of the
batches of one read: one table that the batches fill one after the other.

A query over a day reads its files in batches of a few MB. Each file's events are a range of rows
(:meth:`~smdebug.profiler.reading.frames.FrameworkEvents.rows`) and
:meth:`~smdebug.profiler.reading.frames.FrameworkEvents.concat` takes adjacent ranges of one table
back as one range, with no copy. When every batch had its own table, the query's answer was a copy
of all of them (a second write of every column, and twice the memory while the files' ranges are
kept). Here the batches of a read write into one :class:`Arena`, sized from the first batch for
all the files to come, so that the answer is a range of it. Its str columns (phase, name, node,
file suffix) are kept as codes into a vocabulary, and become object arrays only for the rows that
someone reads.
"""

from __future__ import annotations

import numpy as np

from smdebug.profiler.reading.args_column import ArgsColumn
from smdebug.profiler.reading.frames import Coded, FrameworkEvents, Vocab

__all__ = ["Arena", "Arenas", "INT_COLUMNS", "CODED_COLUMNS"]

INT_COLUMNS = ("start_us", "end_us", "step", "pid", "tid", "phase_pid")
CODED_COLUMNS = ("phase", "name", "node_id", "file_suffix")
_SLACK = 1.125  # rows an arena holds beyond the estimate (files of a read differ in size)


class Arena:
    """Room for ``capacity`` events: the int64 columns, the codes of the str columns and the
    args' addresses (:class:`~smdebug.profiler.reading.args_column.ArgsColumn`: ``buffers`` grows
    with each batch's tables and bytes). ``table`` is a FrameworkEvents over all of it, whose rows
    up to ``used`` are written; only ranges of those are given out. Memory is taken when written:
    the arrays are allocated empty (large ones are fresh pages from the kernel)."""

    def __init__(self, capacity: int):
        self.capacity, self.used = capacity, 0
        block = np.empty((len(INT_COLUMNS), capacity), dtype=np.int64)
        self.ints = dict(zip(INT_COLUMNS, block))
        self.codes = {c: np.empty(capacity, dtype=np.int32) for c in CODED_COLUMNS}
        self.vocab = {c: Vocab() for c in CODED_COLUMNS}
        self.buffers: list = []
        self.source = np.empty(capacity, dtype=np.int32)
        self.lo = np.empty(capacity, dtype=np.int64)
        self.hi = np.empty(capacity, dtype=np.int64)
        table = object.__new__(FrameworkEvents)
        table.__dict__.update(
            self.ints,
            args=ArgsColumn(self.buffers, self.source, self.lo, self.hi),
            _coded={c: Coded(self.codes[c], self.vocab[c]) for c in CODED_COLUMNS},
        )
        self.table = table


class Arenas:
    """The arenas of one read of ``files`` files: :meth:`room` gives each batch its rows in the
    current arena, or in a new one sized for the files still to come when they do not fit."""

    def __init__(self, files: int):
        self.files_left = files
        self.current: Arena | None = None

    def room(self, rows: int, files: int) -> tuple[Arena, int]:
        """Where a batch of ``files`` files and ``rows`` events writes them: an arena and the
        first row."""
        arena = self.current
        if arena is None or arena.used + rows > arena.capacity:
            later = max(self.files_left - files, 0)
            arena = self.current = Arena(rows + int(rows / max(files, 1) * later * _SLACK))
        self.files_left -= files
        at = arena.used
        arena.used += rows
        return arena, at
