"""The ``args`` of framework events, kept as the bytes of the file until someone looks at them.

A 24-hour profile holds hundreds of thousands of events, each with a small ``args`` object
(``{"pid": 4242, "step_num": "17"}``). The readers take what the columns need from those objects
(the step, the pid, the thread id) in bulk; the objects themselves are only wanted by the
1.0.34-compatible API, the timeline and the report, for some rows. :class:`ArgsColumn` is a
read-only sequence with one entry per event: the decoded ``args`` (a dict, or None when the event
has none), decoded from the file's bytes when asked for. The bulk reader verified those bytes as
JSON when it read the file, so decoding cannot fail later.

Rows are addressed by ``(source, lo, hi)``: ``source >= 0`` is ``buffers[source]``, bytes (the row
is the JSON ``buffers[source][lo:hi]``) or an :class:`ArgsTable` (the row is its row ``lo``);
``source == OBJECT`` is the already decoded ``objects[lo]``; ``source == NONE`` is None.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, overload

import numpy as np
import orjson

__all__ = ["ArgsColumn", "ArgsTable", "take_args", "concat_args", "OBJECT", "NONE"]

OBJECT = -1
NONE = -2


@dataclass(frozen=True)
class ArgsTable:
    """Args objects that all have the same keys in the same order and integer values, kept as one
    int64 column per key (``text[k]``: the value was written as a string of its digits, ``"17"``)."""

    keys: list[str]
    text: list[bool]
    columns: list[np.ndarray]

    def row(self, i: int) -> dict[str, Any]:
        return {k: str(int(c[i])) if t else int(c[i]) for k, t, c in zip(self.keys, self.text, self.columns)}


Args = dict[str, Any]  # one event's args object (its JSON)


class ArgsColumn(Sequence[Args | None]):
    """One ``args`` value per event (dict or None), decoded on access; a full iteration keeps
    the decoded values, so iterating again costs nothing."""

    __slots__ = ("_buffers", "_source", "_lo", "_hi", "_objects", "_decoded")

    def __init__(self, buffers: list, source: np.ndarray, lo: np.ndarray, hi: np.ndarray, objects: list | None = None):
        self._buffers = buffers
        self._source = source
        self._lo = lo
        self._hi = hi
        self._objects = objects if objects is not None else []
        self._decoded: list[Args | None] | None = None

    @classmethod
    def from_list(cls, values: Sequence) -> ArgsColumn:
        """A column over already decoded values."""
        n = len(values)
        return cls(
            [],
            np.full(n, OBJECT, dtype=np.int32),
            np.arange(n, dtype=np.int64),
            np.zeros(n, dtype=np.int64),
            list(values),
        )

    def __len__(self) -> int:
        return len(self._source)

    def _one(self, i: int) -> Args | None:
        src = int(self._source[i])
        if src >= 0:
            buffer = self._buffers[src]
            if isinstance(buffer, ArgsTable):
                return buffer.row(int(self._lo[i]))
            return orjson.loads(memoryview(buffer)[int(self._lo[i]) : int(self._hi[i])])
        return self._objects[int(self._lo[i])] if src == OBJECT else None

    @overload
    def __getitem__(self, i: int) -> Args | None: ...
    @overload
    def __getitem__(self, i: slice) -> list[Args | None]: ...
    def __getitem__(self, i: int | slice) -> Args | None | list[Args | None]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"args index {i} out of range for {n} events")
        return self._one(i) if self._decoded is None else self._decoded[i]

    def __iter__(self) -> Iterator[Args | None]:
        if self._decoded is None:
            self._decoded = self._decode_all()
        return iter(self._decoded)

    def _decode_all(self) -> list[Args | None]:
        out: list[Args | None] = [None] * len(self)
        objects, buffers = self._objects, self._buffers
        views = [memoryview(b) if isinstance(b, bytes) else None for b in buffers]
        for i, (src, lo, hi) in enumerate(zip(self._source.tolist(), self._lo.tolist(), self._hi.tolist())):
            if src >= 0:
                view = views[src]
                out[i] = buffers[src].row(lo) if view is None else orjson.loads(view[lo:hi])
            elif src == OBJECT:
                out[i] = objects[lo]
        return out

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (ArgsColumn, list, tuple)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ArgsColumn({len(self)} rows)"

    def rows(self, start: int, stop: int) -> ArgsColumn:
        """Rows ``start`` to ``stop`` (views, no copy)."""
        out = ArgsColumn(
            self._buffers, self._source[start:stop], self._lo[start:stop], self._hi[start:stop], self._objects
        )
        if self._decoded is not None:
            out._decoded = self._decoded[start:stop]
        return out

    def take(self, idx: np.ndarray) -> ArgsColumn:
        """The rows at ``idx`` (an int array), sharing the buffers."""
        out = ArgsColumn(self._buffers, self._source[idx], self._lo[idx], self._hi[idx], self._objects)
        if self._decoded is not None:
            out._decoded = [self._decoded[i] for i in idx.tolist()]
        return out

    @classmethod
    def concat(cls, parts: list[ArgsColumn]) -> ArgsColumn:
        """The rows of ``parts`` one after the other; parts that share their buffers (the files of
        one batch) share them here too."""
        buffers: list = []
        objects: list = []
        where: dict[int, int] = {}  # id of a part's buffer list -> where it starts in buffers
        buffer_at, object_at = [], []
        for p in parts:
            at = where.get(id(p._buffers))
            if at is None:
                at = where[id(p._buffers)] = len(buffers)
                buffers.extend(p._buffers)
            buffer_at.append(at)
            object_at.append(len(objects))
            objects.extend(p._objects)
        sizes = [len(p) for p in parts]
        source, lo = np.concatenate([p._source for p in parts]), np.concatenate([p._lo for p in parts])
        if any(buffer_at):
            source = np.where(source >= 0, source + np.repeat(np.array(buffer_at, dtype=np.int32), sizes), source)
        if any(object_at):
            lo = np.where(source == OBJECT, lo + np.repeat(np.array(object_at, dtype=np.int64), sizes), lo)
        return cls(buffers, source, lo, np.concatenate([p._hi for p in parts]), objects)


def take_args(args: Sequence, idx: np.ndarray) -> Sequence:
    """``args`` (a list or an :class:`ArgsColumn`; empty: no args kept) at ``idx``."""
    if isinstance(args, ArgsColumn):
        return args.take(idx)
    return [args[i] for i in idx.tolist()] if args else []


def concat_args(parts: list[Sequence], lengths: list[int]) -> Sequence:
    """The ``args`` of parts of ``lengths`` rows one after the other (an empty part: None each)."""
    if not any(isinstance(p, ArgsColumn) for p in parts):
        out: list = []
        for p, n in zip(parts, lengths):
            out.extend(p if p else [None] * n)
        return out
    return ArgsColumn.concat(
        [
            p if isinstance(p, ArgsColumn) else ArgsColumn.from_list(p if p else [None] * n)
            for p, n in zip(parts, lengths)
        ]
    )
