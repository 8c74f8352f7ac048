"""Framework files read one after the other into one buffer, for the bulk reader
(:mod:`~smdebug.profiler.reading.trace_bulk`).

The bulk reader wants a batch's files joined, each followed by a newline, with a little padding
after the last. Reading each file into its own ``bytes`` and joining them copies every byte once
more (for the 1,429 files of a day, 62 MB, about 15 ms of the 350 ms that reading them all takes
here). A file is written into the buffer where the one before it ends (without its trailing
whitespace), and a newline after it. A file that is not for the bulk path (not ``[`` newline
... newline ``]``, or with a backslash) is kept as its own ``bytes`` for the general reader, and its
room in the buffer is used by the next file.
"""

from __future__ import annotations

import functools
import mmap
import sys
from collections.abc import Callable

__all__ = ["FileBatch", "PAD"]

PAD = 64  # zero bytes after the last file: the bulk reader's 8-byte reads may run past a line
_SPACE = b" \n\r\t"
_CAPACITY = 8 << 20  # the buffer's first size: anonymous memory, only the pages written to are backed


class FileBatch:
    """The files of one batch: file ``k`` is ``buf[offsets[k]:offsets[k] + ends[k]]`` when
    ``ends[k]`` (followed by a newline), else ``kept[k]`` (not for the bulk path). ``buf`` is an
    anonymous memory map: it costs no page of memory that no file was written to, and slices of it
    are ``bytes``."""

    def __init__(self, capacity: int = _CAPACITY):
        self.buf = mmap.mmap(-1, max(capacity, PAD + 1))
        self.clear()

    def clear(self) -> None:
        """Forget the files; the buffer is reused unless a view of it is still alive (then a new
        one is made: what holds the view keeps its bytes)."""
        if sys.getrefcount(self.buf) > 2:  # numpy arrays and memoryviews of it hold a reference
            self.buf = mmap.mmap(-1, len(self.buf))
        self.offsets: list[int] = []
        self.ends: list[int] = []
        self.kept: dict[int, bytes] = {}
        self.size = 0  # where the next file goes: the bytes of the batch so far
        self.read = 0  # the bytes of its files

    def __len__(self) -> int:
        return len(self.ends)

    @classmethod
    def of(cls, datas: list[bytes]) -> FileBatch:
        """A batch of these files' bytes."""
        batch = cls(sum(len(d) + 1 for d in datas) + PAD)
        for data in datas:
            if not batch.add(functools.partial(_copy, data=data)):  # empty: kept, not for the bulk path
                batch.offsets.append(batch.size)
                batch.ends.append(0)
        return batch

    def reserve(self, n: int) -> memoryview:
        """A writable view of the ``n`` bytes where the next file goes (the buffer grows when they
        do not fit: a view given before is then of the old buffer)."""
        need = self.size + n + 1 + PAD
        if len(self.buf) < need:  # (a new map, not resize(): macOS has no mremap)
            grown = mmap.mmap(-1, max(need, 2 * len(self.buf)))
            grown[: self.size] = self.buf[: self.size]
            self.buf = grown
        return memoryview(self.buf)[self.size : self.size + n]

    def add(self, fill: Callable[[Callable[[int], memoryview]], int]) -> int:
        """Add a file: ``fill(reserve)`` writes its bytes into a view that :meth:`reserve` gives and
        returns their length, which this returns. An empty file is not added."""
        n = fill(self.reserve)
        if not n:
            return 0
        at = self.size
        self.read += n
        end = _content_end(self.buf, at, n)
        k = len(self.ends)
        self.offsets.append(at)
        self.ends.append(end)
        if not end:
            self.kept[k] = self.buf[at : at + n]
            return n
        self.size = at + end + 1
        self.buf[at + end] = 10  # "\n"
        return n

    def finish(self) -> None:
        """Zero the padding after the last file (before the bulk reader reads the batch)."""
        self.buf[self.size : self.size + PAD] = bytes(PAD)

    def data(self, k: int) -> bytes:
        """File ``k``'s bytes (a bulk file's without its trailing whitespace)."""
        if not self.ends[k]:
            return self.kept.get(k, b"")
        return self.buf[self.offsets[k] : self.offsets[k] + self.ends[k]]


def _copy(reserve: Callable[[int], memoryview], data: bytes) -> int:
    with reserve(len(data)) as view:
        view[:] = data
    return len(data)


def _content_end(buf: mmap.mmap, at: int, n: int) -> int:
    """The length of ``buf[at:at + n]`` without trailing whitespace when it is ``[\\n ... \\n]``
    without a backslash, else 0 (not for the bulk path)."""
    end = at + n
    while end > at and buf[end - 1] in _SPACE:
        end -= 1
    if end - at < 4 or buf[at : at + 2] != b"[\n" or buf[end - 2 : end] != b"\n]" or buf.find(b"\\", at, end) >= 0:
        return 0
    return end - at
