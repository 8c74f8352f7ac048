"""Consolidated index objects in a trial's index state: one :class:`Chunk` per object (numpy
arrays, no Python object per entry), and :class:`StepTable`, the step -> {worker: index file} map
over per-step files and chunks, which makes a chunk's row into a file object only when asked."""

from __future__ import annotations

import numpy as np

from smdebug.codec.consolidated import EVENT_NONE, EVENT_STANDARD, ConsolidatedEntries, ConsolidatedHead
from smdebug.core.modes import ModeKeys
from smdebug.core.output.locations import INDEX_BUCKET, event_key, index_key
from smdebug.exceptions import IndexReaderException

__all__ = ["Chunk", "ChunkFile", "StepTable"]

_MODES = {m.value: m for m in ModeKeys}


class Chunk:
    """One consolidated object: the index files of one worker's bucket.

    ``load`` (chunk -> ConsolidatedEntries) reads the entries when a value is first needed;
    when they cannot be read, ``fallback`` (chunk, error) -> {step: IndexFile} gives the per-step
    files instead, and every later lookup uses those.
    """

    __slots__ = (
        "key",
        "where",
        "worker",
        "bucket",
        "head",
        "steps",
        "rows",
        "live_steps",
        "layouts",
        "_entries",
        "_load",
        "_fallback",
        "_files",
    )

    def __init__(self, key: str, where: str, head: ConsolidatedHead, layouts: list, load, fallback, rows=None):
        self.key, self.where = key, where
        self.worker, self.bucket, self.head = head.worker, head.bucket, head
        self.steps = head.steps
        # the rows the trial uses (those in its range_steps), and their steps
        self.rows = np.arange(len(head.steps)) if rows is None else rows
        self.live_steps = self.steps[self.rows]
        self.layouts = layouts  # Layout per head layout id
        self._entries: ConsolidatedEntries | None = None
        self._load, self._fallback = load, fallback
        self._files: dict | None = None  # step -> per-step IndexFile, after a fallback

    def row(self, step: int) -> int | None:
        i = int(np.searchsorted(self.live_steps, step))
        return int(self.rows[i]) if i < len(self.live_steps) and self.live_steps[i] == step else None

    def set_entries(self, entries: ConsolidatedEntries) -> None:
        self._entries = entries

    def _ready(self) -> ConsolidatedEntries | None:
        """The entries, read when first needed; None once the chunk answers from the per-step files."""
        if self._entries is None and self._files is None:
            try:
                self._entries = self._load(self)
            except IndexReaderException as exc:
                self._files = self._fallback(self, exc)
        return self._entries if self._files is None else None

    def use_per_step(self, why: str) -> None:
        """Answer from the per-step index files from now on (the object is stale: ``why``)."""
        self._entries = None
        self._files = self._fallback(self, IndexReaderException(why))

    @property
    def fell_back(self) -> bool:
        return self._files is not None

    def _per_step(self, row: int):
        assert self._files is not None  # called once the chunk fell back
        step = int(self.steps[row])
        f = self._files.get(step)
        if f is None:
            raise IndexReaderException(
                f"{self.where} is unreadable and the per-step index file "
                f"{index_key(step, self.worker)} is missing: step {step} of {self.worker} cannot be read"
            )
        if tuple(f.layout.tags) != self.head.layouts[self.head.layout_ids[row]].tags:
            raise IndexReaderException(
                f"{self.where} disagrees with {f.key} on step {step}: delete the consolidated object"
            )
        return f

    def event_key(self, row: int) -> str | None:
        if self._ready() is None:
            return self._per_step(row).event_key
        ev = int(self.head.event_ids[row])
        if ev == EVENT_STANDARD:
            return event_key(int(self.steps[row]), self.worker)
        return None if ev == EVENT_NONE else self.head.event_names[ev]

    def location(self, row: int, pos: int, where) -> tuple[int, int]:
        e = self._ready()
        if e is None:
            return self._per_step(row).location(pos, where)
        i = int(e.offsets[row]) + pos
        start, length = int(e.starts[i]), int(e.lengths[i])
        if start < 0 or length < 16:
            raise IndexReaderException(f"{self.where}: bad record location start={start} length={length}")
        return start, length

    def crc(self, row: int, pos: int) -> int | None:
        e = self._ready()
        if e is None:
            return self._per_step(row).crc(pos)
        c = int(e.crcs[int(e.offsets[row]) + pos])
        return None if c < 0 else c

    def nbytes(self) -> int:
        """Memory held by the arrays (head and, once read, entries)."""
        h = self.head
        n = h.steps.nbytes + h.modes.nbytes + h.mode_steps.nbytes + h.layout_ids.nbytes + h.event_ids.nbytes
        e = self._entries
        if e is not None:
            n += e.starts.nbytes + e.lengths.nbytes + e.crcs.nbytes + e.offsets.nbytes
        return n


class ChunkFile:
    """One index file inside a chunk, made when a step is looked up; acts as an IndexFile."""

    __slots__ = ("chunk", "row", "step", "worker", "mode", "mode_step", "layout", "shapes", "key")

    def __init__(self, chunk: Chunk, row: int):
        self.chunk, self.row = chunk, row
        self.step = int(chunk.steps[row])
        self.worker = chunk.worker
        self.mode = _MODES[int(chunk.head.modes[row])]
        self.mode_step = int(chunk.head.mode_steps[row])
        self.layout = chunk.layouts[int(chunk.head.layout_ids[row])]
        self.shapes = self.layout.shapes
        self.key = index_key(self.step, self.worker)  # the per-step file this entry stands for

    @property
    def event_key(self) -> str | None:
        return self.chunk.event_key(self.row)

    def location(self, pos: int, where) -> tuple[int, int]:
        return self.chunk.location(self.row, pos, where)

    def crc(self, pos: int) -> int | None:
        return self.chunk.crc(self.row, pos)


class StepTable:
    """global step -> {worker: index file}, over per-step files and chunks."""

    def __init__(self):
        self._per_step: dict[int, dict] = {}
        self._views: dict[int, dict] = {}  # steps looked up that chunks cover (file objects kept)
        self._chunks: dict[int, list[Chunk]] = {}  # bucket -> chunks
        self._chunk_counts: tuple | None = None  # (sorted unique steps, workers per step) over chunks
        self._max = -1

    def add(self, step: int, worker: str, f) -> None:
        self._per_step.setdefault(step, {})[worker] = f
        view = self._views.get(step)
        if view is not None:
            view[worker] = f
        self._max = max(self._max, step)

    def add_chunk(self, chunk: Chunk) -> None:
        self._chunks.setdefault(chunk.bucket, []).append(chunk)
        self._chunk_counts = None
        if len(chunk.live_steps):
            self._max = max(self._max, int(chunk.live_steps[-1]))

    def get(self, step, default=None):
        view = self._views.get(step)
        if view is not None:
            return view
        ps = self._per_step.get(step)
        chunks = self._chunks.get(step // INDEX_BUCKET) if type(step) is int else None
        if not chunks:
            return ps if ps is not None else default
        view = {}
        for c in chunks:
            r = c.row(step)
            if r is not None:
                view[c.worker] = ChunkFile(c, r)
        if not view:
            return ps if ps is not None else default
        if ps:
            view.update(ps)
        self._views[step] = view
        return view

    def __bool__(self) -> bool:
        return self._max >= 0

    def max_step(self) -> int:
        return self._max

    def _counts(self) -> tuple:
        if self._chunk_counts is None:
            parts = [c.live_steps for cs in self._chunks.values() for c in cs]
            allsteps = np.concatenate(parts) if parts else np.empty(0, np.int64)
            self._chunk_counts = np.unique(allsteps, return_counts=True)
        return self._chunk_counts

    def worker_count(self, step: int) -> int:
        n = len(self._per_step.get(step, ()))
        if self._chunks:
            u, c = self._counts()
            i = int(np.searchsorted(u, step))
            if i < len(u) and u[i] == step:
                n += int(c[i])
        return n

    def counts_after(self, last: int) -> dict:
        """{step: number of workers with an index file} for every step after ``last``."""
        out: dict = {}
        if self._chunks:
            u, c = self._counts()
            i = int(np.searchsorted(u, last, side="right"))
            out = dict(zip(u[i:].tolist(), c[i:].tolist()))
        for s, files in self._per_step.items():
            if s > last:
                out[s] = out.get(s, 0) + len(files)
        return out
