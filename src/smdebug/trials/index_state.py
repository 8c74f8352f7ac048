"""What a trial knows from the index files: parsed once, kept compact, grown incrementally."""

from __future__ import annotations

import logging
from array import array

import numpy as np
import orjson

from smdebug.codec.consolidated import ConsolidatedHead
from smdebug.codec.index import ParsedIndex
from smdebug.core.modes import ModeKeys
from smdebug.core.tensors.reductions import REDUCTIONS_PREFIX, reverse_reduction_tensor_name
from smdebug.exceptions import IndexReaderException
from smdebug.trials.chunks import Chunk, StepTable

__all__ = ["Layout", "IndexFile", "IndexState"]

_MODES = {m.value: m for m in ModeKeys}
logger = logging.getLogger("smdebug")


def _whole_numbers(values: list) -> bool:
    """Whether a list read from JSON holds nothing but integers, checked in C: written back as
    JSON it has only digits, signs and commas between its brackets (true, false, floats,
    strings, null and nested values all write something else). 1 us for 200 entries; a type check of each
    entry in a generator cost a third of opening."""
    try:
        return not orjson.dumps(values)[1:-1].translate(None, b"0123456789-,")
    except TypeError:  # orjson.JSONEncodeError: an integer past 64 bits
        return False


def _compact(values: list):
    """8 bytes an entry instead of a Python int object each; the list as is when it holds
    anything but 64-bit ints (IndexFile.location and crc then name the bad entry)."""
    if not _whole_numbers(values):
        return values
    try:
        return array("q", values)
    except OverflowError:
        return values


class _Shared:
    """A layout's last column of entries (starts or lengths) and its compact form, which the
    next file of the layout takes when its column is equal (one comparison in C instead of a
    conversion: a layout's files mostly hold records of the same sizes), sharing its memory."""

    __slots__ = ("values", "compact")

    def __init__(self) -> None:
        self.values: list | None = None
        self.compact: array | None = None

    def take(self, values: list):
        # equal as numbers, and whole numbers (1.0 == 1 and True == 1 too)
        if values is self.values or (values == self.values and _whole_numbers(values)):
            return self.compact
        compact = _compact(values)
        if type(compact) is array:
            self.values, self.compact = values, compact
        return compact


class Layout:
    """The tag layout of an index file, shared by every file with the same tags in the same order.

    ``tensors`` maps a tensor name to (position of its raw value or -1, {(op, abs): position}).
    A layout from a consolidated object also carries its shapes ({name: (shape, original name)})
    and ``chunks``: (chunk, rows of the chunk with this layout) pairs.
    """

    __slots__ = (
        "tensors",
        "files",
        "tags",
        "shapes",
        "chunks",
        "shape_names",
        "starts",
        "lengths",
        "_agg_done",
        "_agg_steps",
        "_agg_modes",
    )

    def __init__(self, tags: tuple, shape_names: tuple, where: str, shapes: dict | None = None):
        self.files: list[IndexFile] = []  # every file with this layout, in the order read
        self.tags = tags
        self.shape_names = frozenset(shape_names)
        self._agg_done = 0
        self._agg_steps: set = set()
        self._agg_modes: dict = {}
        self.shapes = shapes
        self.chunks: list = []
        self.starts, self.lengths = _Shared(), _Shared()  # its files' columns, shared while equal
        tensors: dict[str, list] = {}
        for pos, tag in enumerate(tags):
            if type(tag) is not str:
                raise IndexReaderException(f"{where}: tensorname {tag!r} is not a string")
            if tag.startswith(REDUCTIONS_PREFIX):
                name, op, is_abs = reverse_reduction_tensor_name(tag)
                entry = tensors.setdefault(name, [-1, {}])
                entry[1][(op, is_abs)] = pos
            else:
                entry = tensors.setdefault(tag, [-1, {}])
                entry[0] = pos  # the last entry of a tag wins
        for name in shape_names:
            tensors.setdefault(name, [-1, {}])
        self.tensors = tensors

    def steps_and_modes(self) -> tuple[set, dict]:
        """The global steps of this layout's files and {mode: {mode step: global step}} (the first
        file of a mode step wins), taken in once for every tensor of the layout."""
        files = self.files
        if self._agg_done < len(files):
            steps, modes = self._agg_steps, self._agg_modes
            for f in files[self._agg_done :]:
                steps.add(f.step)
                modes.setdefault(f.mode, {}).setdefault(f.mode_step, f.step)
            self._agg_done = len(files)
        return self._agg_steps, self._agg_modes


class IndexFile:
    """One index file: one global step of one worker, one mode."""

    __slots__ = (
        "key",
        "step",
        "worker",
        "mode",
        "mode_step",
        "event_key",
        "layout",
        "starts",
        "lengths",
        "shapes",
        "crcs",
    )

    def __init__(self, key: str, step: int, worker: str, parsed: ParsedIndex, layout: Layout):
        self.key = key
        self.step = step
        self.worker = worker
        self.mode = parsed.mode
        self.mode_step = parsed.mode_step
        self.event_key = parsed.event_file_name
        self.layout = layout
        self.starts = layout.starts.take(parsed.starts)
        self.lengths = layout.lengths.take(parsed.lengths)
        self.shapes = parsed.shapes
        self.crcs = None if parsed.crcs is None else _compact(parsed.crcs)

    def crc(self, pos: int) -> int | None:
        """The payload CRC32C our writer put in the index, or None (files of other writers)."""
        if self.crcs is None:
            return None
        c = self.crcs[pos]
        if type(c) is not int or not 0 <= c < 2**32:
            raise IndexReaderException(f"{self.key}: crc32c {c!r} of entry {pos} is not a 32-bit unsigned int")
        return c

    def location(self, pos: int, where: str) -> tuple[int, int]:
        if self.event_key is None:
            raise IndexReaderException(f"{where}: the index names no event file (event_file_name is empty)")
        start, length = self.starts[pos], self.lengths[pos]
        if type(start) is not int or type(length) is not int or start < 0 or length < 16 or start + length > 2**63 - 1:
            raise IndexReaderException(f"{where}: bad record location start_idx={start!r} length={length!r}")
        return start, length


class IndexState:
    """Steps, modes, workers and tensor names over all index files read so far."""

    def __init__(self):
        self.files: list[IndexFile] = []
        self.by_step = StepTable()  # step -> {worker: IndexFile or ChunkFile}
        self.global_to_mode: dict[int, tuple[ModeKeys, int]] = {}
        self.mode_to_global: dict[ModeKeys, dict[int, int]] = {}
        self.names: set[str] = set()
        self.mode_names: dict[ModeKeys, set[str]] = {}
        self._layouts: dict[tuple, Layout] = {}
        self.layouts: list[Layout] = []  # in order of first appearance
        self._mode_layouts_seen: set[tuple] = set()
        self.chunks: list[Chunk] = []
        self._bucket_heads: dict = {}  # bucket -> the first chunk head taken in for it

    def add(self, key: str, step: int, worker: str, parsed: ParsedIndex, where: str) -> IndexFile:
        lkey = (parsed.tags, tuple(parsed.shapes)) if parsed.shapes else parsed.tags
        layout = self._layouts.get(lkey)
        if layout is None:
            layout = self._layouts[lkey] = Layout(parsed.tags, tuple(parsed.shapes), where)
            self.layouts.append(layout)
            self.names.update(layout.tensors)
        f = IndexFile(key, step, worker, parsed, layout)
        layout.files.append(f)
        self.files.append(f)
        self.by_step.add(step, worker, f)
        mode, mode_step = f.mode, f.mode_step
        if mode != ModeKeys.GLOBAL:
            self.mode_to_global.setdefault(mode, {}).setdefault(mode_step, step)
        self.global_to_mode.setdefault(step, (mode, mode_step))
        if mode != ModeKeys.GLOBAL and (mode, id(layout)) not in self._mode_layouts_seen:
            self._mode_layouts_seen.add((mode, id(layout)))
            self.mode_names.setdefault(mode, set()).update(layout.tensors)
        return f

    def make_file(self, key: str, step: int, worker: str, parsed: ParsedIndex, where) -> IndexFile:
        """An IndexFile kept out of the state (a chunk's fallback to its per-step files)."""
        return IndexFile(key, step, worker, parsed, Layout(parsed.tags, tuple(parsed.shapes), where))

    def add_chunk(self, key: str, where, head: ConsolidatedHead, load, fallback, rows=None) -> Chunk:
        """Take in a consolidated object's head (see :class:`smdebug.trials.chunks.Chunk`); ``rows``:
        the files to use (all when None)."""
        layouts = []
        for cl in head.layouts:
            shapes = {name: (shape, orig) for name, orig, shape in cl.shapes}
            lkey = ("chunk", cl.tags, cl.shapes)
            layout = self._layouts.get(lkey)
            if layout is None:
                layout = self._layouts[lkey] = Layout(cl.tags, tuple(shapes), where, shapes)
                self.layouts.append(layout)
                self.names.update(layout.tensors)
            layouts.append(layout)
        chunk = Chunk(key, str(where), head, layouts, load, fallback, rows)
        live = chunk.rows
        for lid in np.unique(head.layout_ids[live]).tolist():
            rows = live[head.layout_ids[live] == lid]
            layouts[lid].chunks.append((chunk, rows))
            for m in np.unique(head.modes[rows]).tolist():
                mode = ModeKeys(m)
                if mode != ModeKeys.GLOBAL and (mode, id(layouts[lid])) not in self._mode_layouts_seen:
                    self._mode_layouts_seen.add((mode, id(layouts[lid])))
                    self.mode_names.setdefault(mode, set()).update(layouts[lid].tensors)
        self._add_steps(head, live)
        self.chunks.append(chunk)
        self.by_step.add_chunk(chunk)
        return chunk

    def _add_steps(self, head: ConsolidatedHead, rows) -> None:
        cols = (head.steps[rows], head.modes[rows], head.mode_steps[rows])
        prev = self._bucket_heads.get(head.bucket)
        if prev is not None and all(np.array_equal(a, b) for a, b in zip(prev, cols)):
            return  # another worker's chunk of the same steps and modes: nothing new
        self._bucket_heads.setdefault(head.bucket, cols)
        g2m, m2g = self.global_to_mode, self.mode_to_global
        for s, code, ms in zip(*(c.tolist() for c in cols)):
            m = _MODES[code]
            if s not in g2m:
                g2m[s] = (m, ms)
            if m is not ModeKeys.GLOBAL:
                d = m2g.get(m)
                if d is None:
                    d = m2g[m] = {}
                if ms not in d:
                    d[ms] = s

    def worker_count(self, step: int) -> int:
        return self.by_step.worker_count(step)

    def counts_after(self, last: int) -> dict:
        return self.by_step.counts_after(last)

    def complete_through(self, last: int, num_workers: int, window: int) -> int:
        """The last complete step, given the previous one: the highest step all ``num_workers``
        wrote; with more than ``window`` steps pending after it (a straggling worker), the oldest
        pending steps count as complete, ``window // 2`` at a time, until at most ``window`` remain."""
        counts = self.counts_after(last)
        for step in sorted(counts):
            if counts[step] >= num_workers:
                last = step
        pending = sorted(s for s in counts if s > last)
        if len(pending) > window:
            excess = len(pending) - window
            chunk = max(window // 2, 1)
            cut = min(-(-excess // chunk) * chunk, len(pending))
            last = pending[cut - 1]
            logger.info(
                "smdebug: %d steps wait for straggling workers (window %d); treating steps up to %d as complete",
                len(pending),
                window,
                last,
            )
        return last

    def max_step(self) -> int:
        """The highest global step with an index file, -1 when none."""
        return self.by_step.max_step()

    def nbytes(self) -> int:
        """Memory held by the consolidated chunks' arrays."""
        return sum(c.nbytes() for c in self.chunks)

    def names_at(self, step: int) -> set[str]:
        out: set[str] = set()
        for f in self.by_step.get(step, {}).values():
            out.update(f.layout.tensors)
        return out
