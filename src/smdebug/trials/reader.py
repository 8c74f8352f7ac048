"""The trial's one batched read of tensor records: ``Trial.read``, ``Tensor.value(s)``,
``RequiredTensors`` and the built-in rules all read through :class:`RecordReader`.

The records asked for are grouped by event file; each file's records are fetched with one ranged
read per span of nearby records (on object storage: windows kept in a bounded cache, see
:mod:`smdebug.trials.records`), every payload is checked against the CRC32C its index entry
recorded (once, before any decoding), and the tensors are decoded by the codec's one decoder
(:class:`smdebug.codec.record.RecordDecoder`, which learns each tensor position's layout once).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

import numpy as np

from smdebug.codec.crc import crc32c
from smdebug.codec.record import HEADER_BYTES, RecordDecoder
from smdebug.exceptions import EventFileCorrupt, IndexReaderException, ObjectNotFound
from smdebug.trials.records import RecordCheck, Where, WindowCache, check_payload, windows_for

__all__ = ["ValueKey", "StepValue", "Pick", "RecordReader"]

_SPAN_SLACK = 64 * 1024  # records of one file closer than this are fetched in one range


@dataclass(frozen=True)
class ValueKey:
    """One saved value to read: a tensor at a global step, of one worker (None: every worker)."""

    name: str
    step: int
    worker: str | None = None


@dataclass
class StepValue:
    """A value read back: the tensor, global step, worker and the array (a read-only view of the
    bytes read where it could be: copy it to change it). ``from_reduction``: the value is a saved
    reduction, not the tensor itself."""

    name: str
    step: int
    worker: str
    value: np.ndarray
    from_reduction: bool = False


class Pick:
    """One record to read: entry ``pos`` of index file ``file`` (IndexFile or ChunkFile), a record
    of ``tensor``."""

    __slots__ = ("file", "pos", "tensor")

    def __init__(self, file, pos: int, tensor: str):
        self.file, self.pos, self.tensor = file, pos, tensor


def _spans(ranges) -> list[tuple[int, int]]:
    """Sorted (start, length) ranges merged into spans where the gaps are small."""
    out: list[list[int]] = []
    for start, length in sorted(ranges):
        if out and start <= out[-1][1] + _SPAN_SLACK:
            out[-1][1] = max(out[-1][1], start + length)
        else:
            out.append([start, start + length])
    return [(s, e - s) for s, e in out]


class RecordReader:
    """Reads records of one trial's store, batched; one per trial (its decoder keeps the layouts
    it learnt, its cache the windows fetched from object storage)."""

    def __init__(self, store, stale_chunks):
        self.store = store
        self.decoder = RecordDecoder()
        self.cache = WindowCache() if store.remote else None
        self._stale_chunks = stale_chunks  # files -> whether a consolidated object behind them was stale

    def read(self, picks: list[Pick]) -> list[np.ndarray]:
        """The tensors of ``picks``, in order; once more when a consolidated object behind a failed
        read turns out stale (a step rewritten since it was made)."""
        if not picks:
            return []
        try:
            return self._read_once(picks)
        except (EventFileCorrupt, IndexReaderException):
            if not self._stale_chunks([p.file for p in picks]):
                raise
        return self._read_once(picks)

    def _read_once(self, picks: list[Pick]) -> list[np.ndarray]:
        store, cache = self.store, self.cache
        by_key: dict = {}
        for i, p in enumerate(picks):
            f = p.file
            try:
                start, length = f.location(p.pos, f.key)
            except IndexReaderException:  # again, for the message naming the index file as the store does
                f.location(p.pos, Where(store, f.key))
                raise
            group = by_key.get(f.event_key)
            if group is None:
                group = by_key[f.event_key] = []
            group.append((start, length, i))
        located: list = [None] * len(picks)  # (bytes, offset of the record in them)
        wanted = []  # (event key, ranges to read, the records they hold)
        for ekey, group in by_key.items():
            if cache is None:
                wanted.append((ekey, _spans([(s, n) for s, n, _ in group]), group))
                continue
            missed = []
            for start, length, i in group:
                hit = cache.get(ekey, start, length)
                if hit is not None and len(hit) == length:
                    located[i] = (hit, 0)
                else:
                    missed.append((start, length, i))
            if missed:
                wanted.append((ekey, windows_for([(s, n) for s, n, _ in missed]), missed))
        results = store.read_ranges_many([(k, sp) for k, sp, _ in wanted]) if wanted else []
        for (ekey, sp, group), res in zip(wanted, results):
            if isinstance(res, ObjectNotFound):
                ikey = picks[group[0][2]].file.key
                raise EventFileCorrupt(
                    f"{store.describe(ekey)} is missing, but the index {store.describe(ikey)} points to it"
                )
            if isinstance(res, Exception):
                raise res
            if cache is not None:
                for (s, _n), data in zip(sp, res):
                    cache.put(ekey, s, data)
            starts = [s for s, _ in sp]
            for start, _length, i in group:
                j = bisect_right(starts, start) - 1
                located[i] = (res[j], start - starts[j])
        out: list = [None] * len(picks)
        decode = self.decoder.decode
        for ekey, group in by_key.items():
            where = Where(store, ekey)
            for start, length, i in group:
                buf, off = located[i]
                p = picks[i]
                f = p.file
                crc = f.crc(p.pos)
                if crc is not None and off + length <= len(buf):  # (a short buffer: the decoder says truncated)
                    body = memoryview(buf)[off + HEADER_BYTES : off + length - 4]
                    if crc32c(body) != crc:
                        check_payload(
                            body,
                            RecordCheck(f.step, p.tensor, crc, Where(store, f.key)),  # type: ignore[arg-type]
                            where,
                            start,
                        )
                out[i] = decode(buf, off, length, (f.layout, p.pos), where, start)
        return out

    def values(self, by_step, keys, reduction=None, abs=False, reductions_if_no_value=False) -> list[StepValue]:
        """See :meth:`smdebug.trials.Trial.read`; ``by_step``: the trial's step -> {worker: index file}."""
        red_key = (reduction, bool(abs))
        picks: list[Pick] = []
        meta = []  # (name, step, worker, is a saved reduction) of each pick
        workers: dict = {}
        for key in keys:
            files = by_step.get(key.step)
            if not files:
                continue
            name, step = key.name, key.step
            if key.worker is None:
                ws = workers.get(step)
                if ws is None:
                    ws = workers[step] = sorted(files)
            else:
                ws = (key.worker,)
            for w in ws:
                f = files.get(w)
                entry = f.layout.tensors.get(name) if f is not None else None
                if entry is None:
                    continue
                raw, reds = entry
                pos = reds.get(red_key) if reduction is not None else None
                if pos is not None:
                    picks.append(Pick(f, pos, name))
                    meta.append((name, step, w, True))
                elif raw >= 0:
                    picks.append(Pick(f, raw, name))
                    meta.append((name, step, w, False))
                elif reductions_if_no_value and reduction is None:
                    for pos in reds.values():
                        picks.append(Pick(f, pos, name))
                        meta.append((name, step, w, True))
        got = self.read(picks)
        return [StepValue(name, step, w, v, is_red) for (name, step, w, is_red), v in zip(meta, got)]
