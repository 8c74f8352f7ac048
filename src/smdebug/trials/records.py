"""Reading tensor records: ranged reads batched per event file, decoded, errors naming the file."""

from __future__ import annotations

from collections import defaultdict

from smdebug.codec.event import decode_tensor_record
from smdebug.codec.tfrecord import unframe
from smdebug.exceptions import EventFileCorrupt, ObjectNotFound
from smdebug.storage import Store

__all__ = ["read_records"]


def read_records(store: Store, requests) -> list:
    """Values of records: ``requests`` is a list of (event key, (start, length), index key).

    Reads are grouped by event file and issued as one batched call (concurrent on S3).
    """
    grouped = defaultdict(list)
    for i, (ekey, rng, _ikey) in enumerate(requests):
        grouped[ekey].append((i, rng))
    order = list(grouped)
    results = store.read_ranges_many([(k, [r for _, r in grouped[k]]) for k in order])
    out = [None] * len(requests)
    for ekey, res in zip(order, results):
        where = store.describe(ekey)
        if isinstance(res, ObjectNotFound):
            ikey = requests[grouped[ekey][0][0]][2]
            raise EventFileCorrupt(f"{where} is missing, but the index {store.describe(ikey)} points to it")
        if isinstance(res, Exception):
            raise res
        for (i, (start, _length)), blob in zip(grouped[ekey], res):
            payload, _ = unframe(blob, 0, f"{where} (record at byte {start})")
            try:
                out[i] = decode_tensor_record(payload)
            except EventFileCorrupt as exc:
                raise EventFileCorrupt(f"{where}: record at byte {start}: {exc}") from None
    return out
