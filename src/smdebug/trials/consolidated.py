"""Opening a trial through its consolidated index objects (``_smdebug/index/``, see
:mod:`smdebug.codec.consolidated` and :mod:`smdebug.core.output.consolidate`).

At open: one listing of the consolidated objects, one read of each heads object (a worker's
heads of up to 100 buckets), a ranged read of the head of each object no heads object vouches
for (concurrent on S3), and one listing of the bucket folders of index/. An object names the
steps it covers; it proves itself current against a listing of its bucket after the last of
them: one LIST per covered bucket below the newest, which the trial's own listing of index/
(from the newest covered bucket's last step on) does for that one. A step found there that no
object names (written after ``smdebug consolidate`` ran on a live job) is read from its per-step
file; so is a step written after the trial opened. A step rewritten after its object was made
is caught at its first read (:func:`drop_stale`). A missing, stale, truncated or corrupt object
costs nothing but speed: its bucket is read from the per-step files, and the trial says so once
in the log. Objects of every layout written so far are checked the same way (the check needs
only the steps a head holds).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np

from smdebug.codec.consolidated import decode_entries, decode_head, decode_heads, head_size
from smdebug.codec.crc import crc32c
from smdebug.codec.index import decode_index
from smdebug.core.output.locations import (
    CONSOLIDATED_PREFIX,
    HEADS_GROUP,
    INDEX_BUCKET,
    INDEX_PREFIX,
    bucket_of,
    index_bucket_key,
    index_key,
    parse_consolidated_key,
    parse_heads_key,
    parse_index_key,
)
from smdebug.exceptions import IndexReaderException
from smdebug.storage import Store
from smdebug.trials.chunks import ChunkFile
from smdebug.trials.index_state import IndexState

__all__ = ["Coverage", "open_consolidated", "rewritten_since", "drop_stale", "HEAD_READ"]

logger = logging.getLogger("smdebug")

HEAD_READ = 64 * 1024  # bytes read from each object at open: the head, and the whole object when small


@dataclass
class Coverage:
    """Which index files the consolidated objects serve; what the trial's first listing misses."""

    covered: set = field(default_factory=set)  # (bucket, worker) with an object in use
    list_after: str | None = None  # where the trial's listing of index/ starts
    extra: list = field(default_factory=list)  # [(key, (step, worker))] found by the buckets' checks
    chunks: int = 0
    fallbacks: list = field(default_factory=list)  # messages of objects not used
    _by_bw: dict = field(default_factory=dict)  # (bucket, worker) -> Chunk

    def covers(self, step: int, worker: str) -> bool:
        """Whether an object in use serves this step's index file (a step written after the
        object was made is not: it is read from its own file)."""
        chunk = self._by_bw.get((bucket_of(step), worker)) if self._by_bw else None
        return chunk is not None and chunk.row(step) is not None


class _Warner:
    """Logs the first fallback as a warning, later ones at debug level."""

    def __init__(self, coverage: Coverage):
        self.coverage = coverage

    def __call__(self, msg: str) -> None:
        first = not self.coverage.fallbacks
        self.coverage.fallbacks.append(msg)
        (logger.warning if first else logger.debug)(
            "smdebug: %s; reading the per-step index files instead (nothing is lost, only speed)", msg
        )


def _in_range(bucket: int, rng) -> bool:
    if rng is None:
        return True
    lo, hi = rng
    return (lo is None or (bucket + 1) * INDEX_BUCKET > lo) and (hi is None or bucket * INDEX_BUCKET < hi)


def _list_objects(store: Store, rng, warn) -> tuple[dict, list]:
    """{(bucket, worker): (key, tag)} of the objects in range, and the heads objects' keys."""
    lo = rng[0] if rng and rng[0] else 0
    after = f"{CONSOLIDATED_PREFIX}{bucket_of(lo) - 1:09d}/~" if bucket_of(lo) > 0 else None
    found, heads, doubled = {}, [], set()
    for k in store.list(CONSOLIDATED_PREFIX, start_after=after):
        p = parse_consolidated_key(k)
        if p is not None:
            if _in_range(p[0], rng):
                if (p[0], p[1]) in found:
                    doubled.add((p[0], p[1]))  # a writer stopped between writing and cleaning up
                found[(p[0], p[1])] = (k, p[2])
            continue
        g = parse_heads_key(k)
        if g is not None and _in_range_group(g[0], rng):
            heads.append(k)
    for bw in doubled:
        warn(f"two consolidated index objects for bucket {bw[0]} of {bw[1]}")
        del found[bw]
    return found, heads


def _in_range_group(group: int, rng) -> bool:
    if rng is None:
        return True
    first = group * HEADS_GROUP * INDEX_BUCKET
    end = first + HEADS_GROUP * INDEX_BUCKET
    return (rng[0] is None or end > rng[0]) and (rng[1] is None or first < rng[1])


def _heads_from_summaries(store: Store, keys: list, found: dict, warn) -> dict:
    """{(bucket, worker): head} for the objects whose head a heads object holds (checked by tag)."""
    out = {}
    for key, blob in zip(keys, store.read_many(keys)):
        where = store.describe(key)
        try:
            if isinstance(blob, Exception):
                raise IndexReaderException(f"{where}: {blob}")
            parts = decode_heads(blob, where)
        except IndexReaderException as exc:
            warn(f"heads object unusable ({exc})")
            continue
        for part in parts:
            try:
                head = decode_head(part, where)
            except IndexReaderException:
                continue  # that object's head is read from the object itself
            hit = found.get((head.bucket, head.worker))
            if hit is not None and hit[1] == crc32c(part):
                out[(head.bucket, head.worker)] = head
    return out


def _read_head(store: Store, key: str, tag: int, bucket: int, worker: str, res):
    """(head, entries or None) from the first bytes of an object; IndexReaderException if unusable."""
    where = store.describe(key)
    if isinstance(res, Exception):
        raise IndexReaderException(f"{where}: {res}")
    buf = res[0]
    end = head_size(buf, where)
    if end > len(buf):
        buf = buf + store.read_ranges(key, [(len(buf), end - len(buf))])[0]
    head = decode_head(buf, where)
    if (head.worker, head.bucket) != (worker, bucket) or crc32c(bytes(buf[:end])) != tag:
        raise IndexReaderException(
            f"{where}: stale: holds bucket {head.bucket} of {head.worker}, or a head its name does not match"
        )
    entries = None
    if len(buf) >= head.entries_offset + head.entries_len:
        entries = decode_entries(head, buf[head.entries_offset :], where)
    return head, entries


def _rows_in(head, rng):
    if rng is None:
        return None
    keep = np.ones(len(head.steps), bool)
    if rng[0] is not None:
        keep &= head.steps >= rng[0]
    if rng[1] is not None:
        keep &= head.steps < rng[1]
    return np.flatnonzero(keep)


def _after_step(step: int) -> str:
    """The listing position after every index file of ``step`` (any worker)."""
    return f"{index_bucket_key(step)}{step:012d}_~"


def open_consolidated(store: Store, index: IndexState, workers: set, num_workers: int, rng) -> Coverage:
    """Take in the consolidated objects of the buckets in ``rng`` ((lo, hi) or None); adds their
    workers to ``workers``. ``Coverage.list_after`` and ``Coverage.extra`` tell the trial what to
    list and read besides."""
    cov = Coverage()
    warn = _Warner(cov)
    found, heads_keys = _list_objects(store, rng, warn)
    if not found:
        return cov
    heads = _heads_from_summaries(store, heads_keys, found, warn)
    rest = [bw for bw in found if bw not in heads]
    read = store.read_ranges_many([(found[bw][0], [(0, HEAD_READ)]) for bw in rest]) if rest else []
    got = {bw: (h, None) for bw, h in heads.items()}
    for bw, res in zip(rest, read):
        key, tag = found[bw]
        try:
            got[bw] = _read_head(store, key, tag, bw[0], bw[1], res)
        except IndexReaderException as exc:
            warn(f"consolidated index unusable ({exc})")
    by_bucket: dict = {}
    for (bucket, worker), (head, entries) in sorted(got.items()):
        key = found[(bucket, worker)][0]
        rows = _rows_in(head, rng)
        chunk = index.add_chunk(key, store.describe(key), head, _loader(store), _fallback(store, index, warn), rows)
        if entries is not None:
            chunk.set_entries(entries)
        cov._by_bw[(bucket, worker)] = chunk
        by_bucket.setdefault(bucket, set()).add(worker)
    cov.covered = set(cov._by_bw)
    cov.chunks = len(cov.covered)
    full = {b for b, ws in by_bucket.items() if len(ws) >= num_workers and ws >= workers}
    workers.update(w for ws in by_bucket.values() for w in ws)
    folders = [b for b in _bucket_folders(store) if _in_range(b, rng)]
    uncovered = [b for b in folders if b not in full]
    # the trial lists index/ from the first bucket it must read whole, or after the newest
    # covered bucket's last step named by all its objects; a covered bucket below that start is
    # checked by a listing of its own, after that step
    newest = min(uncovered) if uncovered else max(full | set(folders)) if (full or folders) else None
    if newest is None:
        return cov
    if newest in full:
        cov.list_after = _tail(cov, newest)
    elif newest > 0:
        cov.list_after = f"{INDEX_PREFIX}{newest - 1:09d}/~"
    for b in sorted(full.intersection(folders)):
        if b >= newest:
            break
        for k in store.list(index_bucket_key(b * INDEX_BUCKET), start_after=_tail(cov, b)):
            sw = parse_index_key(k)
            if sw is not None and not cov.covers(*sw):
                cov.extra.append((k, sw))
    return cov


def _tail(cov: Coverage, bucket: int) -> str:
    """After the last step every object of the bucket names (a later step is new)."""
    lasts = [int(c.steps[-1]) for (b, _w), c in cov._by_bw.items() if b == bucket and len(c.steps)]
    return _after_step(min(lasts)) if lasts else index_bucket_key(bucket * INDEX_BUCKET)


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


def rewritten_since(store: Store, chunk, rows) -> str | None:
    """Why ``chunk`` no longer matches the per-step index files of ``rows`` (a step rewritten after
    the object was made: same key, other records), or None when they agree. Read on the error path
    only: a record of the chunk failed to read or verify."""
    steps = [int(chunk.steps[r]) for r in rows]
    keys = [index_key(s, chunk.worker) for s in steps]
    for row, step, key, blob in zip(rows, steps, keys, store.read_many(keys)):
        where = store.describe(key)
        if isinstance(blob, Exception):
            return f"{where} is gone ({blob})"
        try:
            p = decode_index(blob, where)
        except IndexReaderException as exc:
            return f"step {step}: {exc}"
        tags = chunk.head.layouts[chunk.head.layout_ids[row]].tags
        same = (
            tuple(p.tags) == tuple(tags)
            and p.event_file_name == chunk.event_key(row)
            and int(chunk.head.mode_steps[row]) == p.mode_step
            and int(chunk.head.modes[row]) == p.mode.value
        )
        for pos in range(len(tags)) if same else ():
            crc = None if p.crcs is None else p.crcs[pos]
            if chunk.location(row, pos, where) != (p.starts[pos], p.lengths[pos]) or chunk.crc(row, pos) != crc:
                same = False
                break
        if not same:
            return f"{where} was rewritten after {chunk.where} was made (step {step})"
    return None


def drop_stale(store: Store, files) -> bool:
    """After a failed read of records of ``files`` (IndexFile or ChunkFile): whether a consolidated
    object serving some of them is stale (a step rewritten since it was made); such objects then
    answer from the per-step index files (one warning). False when every object agrees with the
    per-step files: the failure is the records' own."""
    rows: dict = {}
    for f in files:
        if isinstance(f, ChunkFile) and not f.chunk.fell_back:
            rows.setdefault(id(f.chunk), (f.chunk, set()))[1].add(f.row)
    stale = False
    for chunk, rs in rows.values():
        try:
            why = rewritten_since(store, chunk, sorted(rs))
        except IndexReaderException as exc:  # the object's own entries cannot be read
            why = str(exc)
        if why is not None:
            chunk.use_per_step(why)
            stale = True
    return stale
