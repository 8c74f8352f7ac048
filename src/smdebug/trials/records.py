"""Reading tensor records: ranged reads batched per event file, decoded, errors naming the file.

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
from smdebug.codec.event import decode_tensor_record
from smdebug.codec.tfrecord import unframe
from smdebug.exceptions import EventFileCorrupt, ObjectNotFound
from smdebug.storage import Store

__all__ = ["read_records", "WindowCache", "RecordCheck", "Where", "check_payload"]


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


def _windows_for(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
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
    tensor records (Tensor.value, the rules' batched reader) checks through this one function."""
    if check is None or check.crc is None:
        return
    got = crc32c(payload)
    if got != check.crc:
        raise EventFileCorrupt(
            f"{where}: step {check.step}, tensor {check.tensor!r}: the record at byte {start} is corrupt "
            f"(payload CRC32C {got:#010x}, {check.index} recorded {check.crc:#010x})"
        )


def read_records(store: Store, requests, cache: WindowCache | None = None, checks=None) -> list:
    """Values of records: ``requests`` is a list of (event key, (start, length), index key);
    ``checks``, when given, a RecordCheck or None per request: a payload whose CRC32C differs
    from the recorded one raises EventFileCorrupt naming the file and step.

    Reads are grouped by event file and issued as one batched call (concurrent on S3).
    """
    grouped = defaultdict(list)
    blobs: list = [None] * len(requests)
    for i, (ekey, rng, _ikey) in enumerate(requests):
        hit = cache.get(ekey, *rng) if cache is not None else None
        if hit is not None and len(hit) == rng[1]:
            blobs[i] = hit
        else:
            grouped[ekey].append((i, rng))
    order = list(grouped)
    windowed = cache is not None and store.remote
    wanted = [(k, _windows_for([r for _, r in grouped[k]]) if windowed else [r for _, r in grouped[k]]) for k in order]
    results = store.read_ranges_many(wanted) if wanted else []
    for (ekey, ranges), res in zip(wanted, results):
        where = store.describe(ekey)
        if isinstance(res, ObjectNotFound):
            ikey = requests[grouped[ekey][0][0]][2]
            raise EventFileCorrupt(f"{where} is missing, but the index {store.describe(ikey)} points to it")
        if isinstance(res, Exception):
            raise res
        if windowed:
            for (ws, _n), data in zip(ranges, res):
                cache.put(ekey, ws, data)
            for i, (start, length) in grouped[ekey]:
                ws, data = next((ws, d) for (ws, n), d in zip(ranges, res) if ws <= start < ws + n)
                blobs[i] = data[start - ws : start - ws + length]
        else:
            for (i, _rng), blob in zip(grouped[ekey], res):
                blobs[i] = blob
    out = []
    for i, ((ekey, (start, _length), _ikey), blob) in enumerate(zip(requests, blobs)):
        where = store.describe(ekey)
        payload, _ = unframe(blob, 0, f"{where} (record at byte {start})")
        check_payload(payload, checks[i] if checks is not None else None, where, start)
        try:
            out.append(decode_tensor_record(payload))
        except EventFileCorrupt as exc:
            raise EventFileCorrupt(f"{where}: record at byte {start}: {exc}") from None
    return out
