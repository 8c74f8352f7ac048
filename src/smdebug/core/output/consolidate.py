"""Writing consolidated index objects: by the hook's writer as each index bucket completes, and
afterwards for any trial (smdebug 1.0.34's included) with :func:`consolidate`.

A consolidated object only ever adds to a trial (under ``_smdebug/index/``); the per-step index
files stay, so smdebug 1.0.34 and readers that ignore consolidation see the same trial. An object
is written only when it holds exactly the index files of that worker's bucket: the writer checks
with one listing of the bucket folder before writing it, removes an older object as soon as it
starts writing into a bucket again (a rerun into the same folder), and any other object of the
bucket once its own is written (one ``smdebug consolidate`` wrote while the job was still in the
bucket). Readers still check each object against the listing of index/ (see
:mod:`smdebug.trials.consolidated`): an object never hides a step written after it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from smdebug.codec.consolidated import (
    EVENT_NONE,
    EVENT_STANDARD,
    FileIndex,
    encode_consolidated,
    encode_heads,
    head_size,
)
from smdebug.codec.crc import crc32c
from smdebug.codec.index import decode_index
from smdebug.core.output.locations import (
    CONSOLIDATED_PREFIX,
    END_OF_JOB,
    HEADS_GROUP,
    INDEX_PREFIX,
    bucket_of,
    consolidated_bucket_prefix,
    consolidated_key,
    event_key,
    heads_key,
    index_bucket_key,
    index_key,
    parse_consolidated_key,
    parse_index_key,
)
from smdebug.exceptions import IndexReaderException
from smdebug.storage import Store, open_store

__all__ = ["BucketConsolidator", "ConsolidateReport", "consolidate", "file_index_from_parsed"]

logger = logging.getLogger("smdebug")


def _event_ref(name, step: int, worker: str):
    if name is None:
        return EVENT_NONE
    return EVENT_STANDARD if name == event_key(step, worker) else name


def _check_locations(starts, lengths, where) -> None:
    for s, n in zip(starts, lengths):
        if type(s) is not int or type(n) is not int or s < 0 or n < 16:
            raise IndexReaderException(f"{where}: bad record location start_idx={s!r} length={n!r}")


def file_index_from_parsed(step: int, worker: str, parsed, where) -> FileIndex:
    """A per-step index file (as :func:`smdebug.codec.index.decode_index` parsed it) for a
    consolidated object; IndexReaderException when it holds something an object cannot."""
    _check_locations(parsed.starts, parsed.lengths, where)
    crcs = getattr(parsed, "crcs", None)
    if crcs is not None and any(type(c) is not int or not 0 <= c < 2**32 for c in crcs):
        crcs = None  # a value we did not write: leave it to the per-step reader to judge
    shapes = tuple((name, orig, tuple(shape)) for name, (shape, orig) in parsed.shapes.items())
    return FileIndex(
        step,
        parsed.mode.value,
        parsed.mode_step,
        _event_ref(parsed.event_file_name, step, worker),
        tuple(parsed.tags),
        list(parsed.starts),
        list(parsed.lengths),
        crcs,
        shapes,
    )


class BucketConsolidator:
    """Follows one worker's index files as its writer closes them; writes a bucket's consolidated
    object once the writer moves past the bucket (or closes). Never raises: a failure is logged
    once and leaves the per-step files to readers."""

    def __init__(self, store: Store, worker: str):
        self.store = store
        self.worker = worker
        self._bucket: int | None = None
        self._files: dict[int, FileIndex] = {}  # step -> its latest index file
        self._warned = False
        self._heads: dict[int, bytes] = {}  # bucket -> its object's prefix and head (current group)

    def _guard(self, what, *args) -> None:
        try:
            what(*args)
        except Exception as exc:  # noqa: BLE001 - consolidation is an optimisation only
            if not self._warned:
                self._warned = True
                logger.warning(
                    "smdebug: could not write a consolidated index for %s (readers use the per-step index files): %s",
                    self.worker,
                    exc,
                )

    def before_write(self, step: int) -> None:
        """Call before writing the index file of ``step``."""
        b = bucket_of(step)
        if b == self._bucket:
            return
        if self._bucket is not None:
            self._guard(self._flush, self._bucket)
        self._bucket, self._files = b, {}
        # an object left by an earlier run into this folder would hide what we now write
        self._guard(_delete_objects, self.store, b, self.worker)

    def add(self, step: int, parsed) -> None:
        """The index file of ``step`` was written (``parsed``: a codec.index.ParsedIndex, as
        ``IndexBuilder.parsed`` gives it)."""
        if bucket_of(step) != self._bucket:
            self.before_write(step)
        self._files[step] = file_index_from_parsed(step, self.worker, parsed, index_key(step, self.worker))

    def _flush(self, b: int) -> None:
        """Write the consolidated object of bucket ``b``, the current one."""
        files, self._files = list(self._files.values()), {}
        if not files:
            return
        listed = set()
        for k in self.store.list(index_bucket_key(b * 1000)):
            sw = parse_index_key(k)
            if sw is not None and sw[1] == self.worker:
                listed.add(sw[0])
        if listed != {f.step for f in files}:
            logger.info(
                "smdebug: bucket %d of %s holds index files this writer did not write; not consolidated", b, self.worker
            )
            return
        obj = encode_consolidated(self.worker, b, files)
        prefix = obj[: head_size(obj, b)]
        key = consolidated_key(b, self.worker, crc32c(prefix))
        self.store.write(key, obj)
        # an object `smdebug consolidate` wrote while this writer was still in the bucket covers fewer steps
        _delete_objects(self.store, b, self.worker, keep=key)
        self._heads = {k: v for k, v in self._heads.items() if k // HEADS_GROUP == b // HEADS_GROUP}
        self._heads[b] = prefix
        self.store.write(
            heads_key(b // HEADS_GROUP, self.worker), encode_heads([self._heads[k] for k in sorted(self._heads)])
        )

    def close(self) -> None:
        """The writer is done: the current bucket is complete."""
        if self._bucket is not None:
            self._guard(self._flush, self._bucket)
        self._bucket = None


def _delete_objects(store: Store, bucket: int, worker: str, keep: str | None = None) -> None:
    for k in store.list(consolidated_bucket_prefix(bucket)):
        p = parse_consolidated_key(k)
        if p is not None and p[1] == worker and k != keep:
            store.delete(k)


@dataclass
class ConsolidateReport:
    written: list = field(default_factory=list)  # keys of the objects written
    skipped: dict = field(default_factory=dict)  # (bucket, worker) -> why not
    index_files: int = 0


def consolidate(path, *, include_incomplete: bool = False) -> ConsolidateReport:
    """Write the consolidated index objects of a trial (local folder or s3://...), written by any
    smdebug. Only adds objects under ``_smdebug/index/``; changes no file of the trial.

    A worker's bucket is consolidated when it is complete: training has ended
    (``training_job_end.ts``), or the worker has written a later bucket. ``include_incomplete``
    consolidates the newest buckets too. That is safe on a live job: readers read the steps
    written after an object from their per-step files, and the hook's writer replaces the
    object when it completes the bucket; it only saves less.
    """
    store = open_store(path)
    ended = include_incomplete or store.exists(END_OF_JOB)
    groups: dict = {}
    for k in store.list(INDEX_PREFIX):
        sw = parse_index_key(k)
        if sw is not None:
            groups.setdefault((bucket_of(sw[0]), sw[1]), []).append((k, sw[0]))
    last: dict[str, int] = {}
    for b, w in groups:
        last[w] = max(last.get(w, -1), b)
    report = ConsolidateReport()
    existing: dict = {}
    for k in store.list(CONSOLIDATED_PREFIX):
        p = parse_consolidated_key(k)
        if p is not None:
            existing.setdefault((p[0], p[1]), []).append(k)
    heads: dict = {}  # (group, worker) -> [prefix and head of each object]
    for (b, w), keys in sorted(groups.items()):
        if not ended and b == last[w]:
            report.skipped[(b, w)] = "newest bucket of a job that has not ended"
            continue
        files = []
        try:
            for (key, step), blob in zip(keys, store.read_many([k for k, _ in keys])):
                if isinstance(blob, Exception):
                    raise IndexReaderException(f"{store.describe(key)}: {blob}")
                where = store.describe(key)
                files.append(file_index_from_parsed(step, w, decode_index(blob, where), where))
        except IndexReaderException as exc:
            report.skipped[(b, w)] = str(exc)
            continue
        report.index_files += len(files)
        obj = encode_consolidated(w, b, files)
        prefix = obj[: head_size(obj, b)]
        key = consolidated_key(b, w, crc32c(prefix))
        store.write(key, obj)
        for old in existing.get((b, w), ()):
            if old != key:
                store.delete(old)
        heads.setdefault((b // HEADS_GROUP, w), []).append(prefix)
        report.written.append(key)
    for (g, w), parts in heads.items():
        store.write(heads_key(g, w), encode_heads(parts))
    return report
