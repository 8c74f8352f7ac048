"""What a trial knows from the index files: parsed once, kept compact, grown incrementally."""

from __future__ import annotations

from smdebug.codec.index import ParsedIndex
from smdebug.core.modes import ModeKeys
from smdebug.core.reductions import REDUCTIONS_PREFIX, reverse_reduction_tensor_name
from smdebug.exceptions import IndexReaderException

__all__ = ["Layout", "IndexFile", "IndexState"]


class Layout:
    """The tag layout of an index file, shared by every file with the same tags in the same order.

    ``tensors`` maps a tensor name to (position of its raw value or -1, {(op, abs): position}).
    """

    __slots__ = ("tensors", "files")

    def __init__(self, tags: tuple, shape_names: tuple, where: str):
        self.files: list[IndexFile] = []  # every file with this layout, in the order read
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


class IndexFile:
    """One index file: one global step of one worker, one mode."""

    __slots__ = ("key", "step", "worker", "mode", "mode_step", "event_key", "layout", "starts", "lengths", "shapes")

    def __init__(self, key: str, step: int, worker: str, parsed: ParsedIndex, layout: Layout):
        self.key = key
        self.step = step
        self.worker = worker
        self.mode = parsed.mode
        self.mode_step = parsed.mode_step
        self.event_key = parsed.event_file_name
        self.layout = layout
        self.starts = parsed.starts
        self.lengths = parsed.lengths
        self.shapes = parsed.shapes

    def location(self, pos: int, where: str) -> tuple[int, int]:
        start, length = self.starts[pos], self.lengths[pos]
        if type(start) is not int or type(length) is not int or start < 0 or length < 16 or start + length > 2**63 - 1:
            raise IndexReaderException(
                f"{where}: bad record location start_idx={start!r} length={length!r}"
            )
        return start, length


class IndexState:
    """Steps, modes, workers and tensor names over all index files read so far."""

    def __init__(self):
        self.files: list[IndexFile] = []
        self.by_step: dict[int, dict[str, IndexFile]] = {}
        self.global_to_mode: dict[int, tuple[ModeKeys, int]] = {}
        self.mode_to_global: dict[ModeKeys, dict[int, int]] = {}
        self.names: set[str] = set()
        self.mode_names: dict[ModeKeys, set[str]] = {}
        self._layouts: dict[tuple, Layout] = {}
        self.layouts: list[Layout] = []  # in order of first appearance
        self._mode_layouts_seen: set[tuple] = set()

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
        self.by_step.setdefault(step, {})[worker] = f
        mode, mode_step = f.mode, f.mode_step
        if mode != ModeKeys.GLOBAL:
            self.mode_to_global.setdefault(mode, {}).setdefault(mode_step, step)
        self.global_to_mode.setdefault(step, (mode, mode_step))
        if mode != ModeKeys.GLOBAL and (mode, id(layout)) not in self._mode_layouts_seen:
            self._mode_layouts_seen.add((mode, id(layout)))
            self.mode_names.setdefault(mode, set()).update(layout.tensors)
        return f

    def names_at(self, step: int) -> set[str]:
        out: set[str] = set()
        for f in self.by_step.get(step, {}).values():
            out.update(f.layout.tensors)
        return out
