"""What the trial's record reader (:mod:`smdebug.trials.reader`) needs around the bytes: the
window cache for object storage, the payload CRC check and the names of files in messages.

On object storage every request is a round trip, so reads there fetch a window of the event file
(small files whole) and keep it in a bounded cache: the tensors of one step, read one by one,
cost one request per event file, and ranges that lie close together are merged into one request.
Event files are written whole and never change, so cached bytes stay valid.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, defaultdict
from dataclasses import dataclass

from smdebug.codec.crc import crc32c
from smdebug.exceptions import EventFileCorrupt

__all__ = ["WindowCache", "windows_for", "RecordCheck", "Where", "check_payload"]


class Where:
    """Names a stored file in a message (``store.describe(key)``), formatted only when a message
    is made: readers pass one per index file without building a string for each."""

    __slots__ = ("store", "key")

    def __init__(self, store, key):
        self.store, self.key = store, key

    def __str__(self):
        return self.store.describe(self.key)

    def __format__(self, spec):
        return format(str(self), spec)


WINDOW = 256 * 1024  # bytes fetched around a requested record on object storage


class WindowCache:
    """Byte windows of event files, least recently used dropped beyond ``max_bytes``."""

    def __init__(self, max_bytes: int = 64 * 1024 * 1024):
        self.max_bytes = max_bytes
        self._windows: OrderedDict = OrderedDict()  # (key, start) -> bytes
        self._by_key: dict = defaultdict(set)
        self._size = 0
        self._lock = threading.Lock()

    def get(self, key: str, start: int, length: int) -> bytes | None:
        with self._lock:
            for ws in self._by_key.get(key, ()):
                data = self._windows[(key, ws)]
                if ws <= start and start + length <= ws + len(data):
                    self._windows.move_to_end((key, ws))
                    return data[start - ws : start - ws + length]
        return None

    def put(self, key: str, start: int, data: bytes) -> None:
        with self._lock:
            if (key, start) in self._windows:
                return
            self._windows[(key, start)] = data
            self._by_key[key].add(start)
            self._size += len(data)
            while self._size > self.max_bytes and self._windows:
                (k, s), old = self._windows.popitem(last=False)
                self._by_key[k].discard(s)
                self._size -= len(old)


def windows_for(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Merge the ranges of one object into windows of at least WINDOW bytes."""
    out: list[list[int]] = []
    for start, length in sorted(ranges):
        end = start + length
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
            continue
        ws = 0 if start < WINDOW else start
        if out and ws < out[-1][1]:
            ws = out[-1][1]
        out.append([ws, max(end, ws + WINDOW)])
    return [(s, e - s) for s, e in out]


@dataclass(slots=True)
class RecordCheck:
    """What the index says about a record: its payload's CRC32C (None: not recorded)."""

    step: int
    tensor: str
    crc: int | None
    index: str  # the index file, as messages name it


def check_payload(payload, check: RecordCheck | None, where, start: int) -> None:
    """Raise EventFileCorrupt when the CRC32C of ``payload`` (bytes-like) differs from the one the
    index recorded for it (``check.crc``; None: not recorded, nothing to check). Every reader of
    tensor records (trials.reader.RecordReader) checks through this one function."""
    if check is None or check.crc is None:
        return
    got = crc32c(payload)
    if got != check.crc:
        raise EventFileCorrupt(
            f"{where}: step {check.step}, tensor {check.tensor!r}: the record at byte {start} is corrupt "
            f"(payload CRC32C {got:#010x}, {check.index} recorded {check.crc:#010x})"
        )
