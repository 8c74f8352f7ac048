"""Opening a trial through its consolidated index objects (``_smdebug/index/``, see
:mod:`smdebug.codec.consolidated` and :mod:`smdebug.core.consolidate`).

At open: one listing of the consolidated objects, one listing of the bucket folders of index/,
and one ranged read of each object's head (concurrent on S3). A bucket is *covered* when every
worker has an object for it; covered buckets' per-step index files are neither listed nor read.
The per-step listing starts at the first bucket that is not covered. A missing, stale, truncated
or corrupt object costs nothing but speed: its bucket is read from the per-step files, and the
trial says so once in the log.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np

from smdebug.codec.consolidated import decode_entries, decode_head, head_size
from smdebug.codec.index import decode_index
from smdebug.core.locations import (
    CONSOLIDATED_PREFIX,
    INDEX_BUCKET,
    INDEX_PREFIX,
    bucket_of,
    index_bucket_key,
    parse_consolidated_key,
    parse_index_key,
)
from smdebug.exceptions import IndexReaderException
from smdebug.storage import Store
from smdebug.trials.index_state import IndexState

__all__ = ["Coverage", "open_consolidated", "HEAD_READ"]

logger = logging.getLogger("smdebug")

HEAD_READ = 64 * 1024  # bytes read from each object at open: the head, and the whole object when small


@dataclass
class Coverage:
    """Which (bucket, worker) index files the consolidated objects serve."""

    covered: set = field(default_factory=set)  # (bucket, worker)
    list_after: str | None = None  # where the per-step listing of index/ may start
    chunks: int = 0
    fallbacks: list = field(default_factory=list)  # messages of objects not used

    def covers(self, step: int, worker: str) -> bool:
        return bool(self.covered) and (bucket_of(step), worker) in self.covered


class _Warner:
    """Logs the first fallback as a warning, later ones at debug level."""

    def __init__(self, coverage: Coverage):
        self.coverage = coverage

    def __call__(self, msg: str) -> None:
        first = not self.coverage.fallbacks
        self.coverage.fallbacks.append(msg)
        (logger.warning if first else logger.debug)(
            "smdebug: %s; reading the per-step index files instead (nothing is lost, only speed)", msg)


def _in_range(bucket: int, rng) -> bool:
    if rng is None:
        return True
    lo, hi = rng
    return (lo is None or (bucket + 1) * INDEX_BUCKET > lo) and (hi is None or bucket * INDEX_BUCKET < hi)


def open_consolidated(store: Store, index: IndexState, workers: set, num_workers: int, rng) -> Coverage:
    """Take in the consolidated objects of the buckets in ``rng`` ((lo, hi) or None)."""
    cov = Coverage()
    warn = _Warner(cov)
    lo = rng[0] if rng and rng[0] else 0
    after = f"{CONSOLIDATED_PREFIX}{bucket_of(lo) - 1:09d}/~" if bucket_of(lo) > 0 else None
    found = []
    for k in store.list(CONSOLIDATED_PREFIX, start_after=after):
        bw = parse_consolidated_key(k)
        if bw is not None and _in_range(bw[0], rng):
            found.append((k, bw))
    if not found:
        return cov
    by_bucket: dict = {}
    for (key, (bucket, worker)), res in zip(found, store.read_ranges_many([(k, [(0, HEAD_READ)]) for k, _ in found])):
        where = store.describe(key)
        try:
            if isinstance(res, Exception):
                raise IndexReaderException(f"{where}: {res}")
            buf = res[0]
            end = head_size(buf, where)
            if end > len(buf):
                buf = buf + store.read_ranges(key, [(len(buf), end - len(buf))])[0]
            head = decode_head(buf, where)
            if (head.worker, head.bucket) != (worker, bucket):
                raise IndexReaderException(f"{where}: stale: holds bucket {head.bucket} of {head.worker}")
            entries = None
            if len(buf) >= head.entries_offset + head.entries_len:
                entries = decode_entries(head, buf[head.entries_offset :], where)
        except IndexReaderException as exc:
            warn(f"consolidated index unusable ({exc})")
            continue
        rows = None
        if rng is not None:
            lo_, hi_ = rng
            keep = np.ones(len(head.steps), bool)
            if lo_ is not None:
                keep &= head.steps >= lo_
            if hi_ is not None:
                keep &= head.steps < hi_
            rows = np.flatnonzero(keep)
        chunk = index.add_chunk(key, where, head, _loader(store), _fallback(store, index, warn), rows)
        if entries is not None:
            chunk.set_entries(entries)
        by_bucket.setdefault(bucket, set()).add(worker)
    cov.chunks = sum(len(w) for w in by_bucket.values())
    for bucket, ws in by_bucket.items():
        cov.covered.update((bucket, w) for w in ws)
    full = {b for b, ws in by_bucket.items() if len(ws) >= num_workers and ws >= workers}
    folders = [b for b in _bucket_folders(store) if _in_range(b, rng)]
    uncovered = [b for b in folders if b not in full]
    if uncovered:
        first = min(uncovered)
        cov.list_after = f"{INDEX_PREFIX}{first - 1:09d}/~" if first > 0 else None
    elif folders:
        cov.list_after = f"{INDEX_PREFIX}{max(folders):09d}/~"
    return cov


def _bucket_folders(store: Store) -> list[int]:
    return sorted(int(name) for name in store.list_folders(INDEX_PREFIX) if name.isdigit())


def _loader(store: Store):
    def load(chunk):
        h = chunk.head
        try:
            blob = store.read_ranges(chunk.key, [(h.entries_offset, h.entries_len)])[0]
        except Exception as exc:  # noqa: BLE001 - any failure: use the per-step files
            raise IndexReaderException(f"{chunk.where}: {exc}") from exc
        return decode_entries(h, blob, chunk.where)

    return load


def _fallback(store: Store, index: IndexState, warn):
    def fallback(chunk, exc) -> dict:
        warn(f"consolidated index unusable ({exc})")
        keys = []
        for k in store.list(index_bucket_key(chunk.bucket * INDEX_BUCKET)):
            sw = parse_index_key(k)
            if sw is not None and sw[1] == chunk.worker:
                keys.append((k, sw[0]))
        files = {}
        for (key, step), blob in zip(keys, store.read_many([k for k, _ in keys])):
            if isinstance(blob, Exception):
                continue  # its step then raises, naming the missing file, when read
            where = store.describe(key)
            try:
                files[step] = index.make_file(key, step, chunk.worker, decode_index(blob, where), where)
            except IndexReaderException as err:
                logger.warning("smdebug: %s", err)
        return files

    return fallback
