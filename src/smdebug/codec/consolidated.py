"""Consolidated index objects: every index entry of one worker's index bucket in one compact object.

Layout (all integers little-endian)::

    magic "SMDCIX01" | u32 head length | u32 CRC32C(head) | u64 entries length | u32 CRC32C(entries)
    | head (zlib) | entries (zlib)

The head holds what opening a trial needs (steps, modes, mode steps, each file's tag layout and
event file); the entries (each record's start, length and payload CRC32C) are read only when a
value of that bucket is. So opening reads a small prefix of each object and a value read costs one
more ranged read. Any defect raises :class:`IndexReaderException` naming the object; readers then
fall back to the per-step index files, which are always written too.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

import numpy as np
import orjson

from smdebug.codec.crc import crc32c
from smdebug.exceptions import IndexReaderException

__all__ = [
    "FileIndex",
    "ChunkLayout",
    "ConsolidatedHead",
    "ConsolidatedEntries",
    "EVENT_NONE",
    "EVENT_STANDARD",
    "PREFIX_BYTES",
    "encode_consolidated",
    "head_size",
    "decode_head",
    "decode_entries",
    "object_tag",
    "encode_heads",
    "decode_heads",
]

MAGIC = b"SMDCIX01"
VERSION = 1
_FIXED = struct.Struct("<8sIIQI")
PREFIX_BYTES = _FIXED.size  # 28
EVENT_NONE = -1  # the file holds only shapes
EVENT_STANDARD = -2  # the event file smdebug's layout names for (step, worker)


@dataclass(slots=True)
class FileIndex:
    """One per-step index file, as the consolidated object records it."""

    step: int
    mode: int  # ModeKeys value
    mode_step: int
    event: int | str  # EVENT_NONE, EVENT_STANDARD, or the event file's key
    tags: tuple
    starts: list
    lengths: list
    crcs: list | None  # payload CRC32C per entry (None: not known)
    shapes: tuple  # ((name, original name, shape tuple), ...)


@dataclass(slots=True)
class ChunkLayout:
    tags: tuple
    shapes: tuple  # ((name, original name, shape tuple), ...)


@dataclass(slots=True)
class ConsolidatedHead:
    worker: str
    bucket: int
    layouts: list  # of ChunkLayout
    event_names: list  # of str
    steps: np.ndarray  # int64, sorted, one per file
    modes: np.ndarray  # uint8
    mode_steps: np.ndarray  # int64
    layout_ids: np.ndarray  # int32
    event_ids: np.ndarray  # int32: EVENT_NONE, EVENT_STANDARD or an index into event_names
    n_entries: int
    entries_offset: int  # where the entries section starts in the object
    entries_len: int
    entries_crc: int


@dataclass(slots=True)
class ConsolidatedEntries:
    starts: np.ndarray  # uint32 where every value fits, else int64
    lengths: np.ndarray  # likewise
    crcs: np.ndarray  # uint32 when every entry has one, else int64 with -1 where unknown
    offsets: np.ndarray  # int64, n_files + 1: file i's entries are offsets[i]:offsets[i + 1]


def _bad(where: object, what: str) -> IndexReaderException:
    return IndexReaderException(f"{where}: consolidated index: {what}")


def encode_consolidated(worker: str, bucket: int, files: list[FileIndex]) -> bytes:
    """The object for one worker's bucket; ``files`` is a list of :class:`FileIndex`."""
    files = sorted(files, key=lambda f: f.step)
    layouts: dict[tuple, int] = {}
    events: dict[str, int] = {}
    layout_ids: list[int] = []
    event_ids: list[int] = []
    starts: list[int] = []
    lengths: list[int] = []
    crcs: list[int] = []
    for f in files:
        lkey = (tuple(f.tags), tuple(f.shapes))
        layout_ids.append(layouts.setdefault(lkey, len(layouts)))
        ev = f.event
        event_ids.append(ev if isinstance(ev, int) else events.setdefault(ev, len(events)))
        starts.extend(f.starts)
        lengths.extend(f.lengths)
        crcs.extend(f.crcs if f.crcs is not None else [-1] * len(f.tags))
    meta = {
        "version": VERSION,
        "worker": worker,
        "bucket": int(bucket),
        "files": len(files),
        "entries": len(starts),
        "layouts": [[list(t), [[n, o, list(s)] for n, o, s in sh]] for t, sh in layouts],
        "event_names": list(events),
    }
    jb = orjson.dumps(meta)
    head = zlib.compress(
        b"".join(
            (
                struct.pack("<I", len(jb)),
                jb,
                np.asarray([f.step for f in files], "<i8").tobytes(),
                np.asarray([f.mode for f in files], "u1").tobytes(),
                np.asarray([f.mode_step for f in files], "<i8").tobytes(),
                np.asarray(layout_ids, "<i4").tobytes(),
                np.asarray(event_ids, "<i4").tobytes(),
            )
        ),
        6,
    )
    s = np.asarray(starts, "<i8")
    n = np.asarray(lengths, "<i8")
    # a file's records follow one another: store each start as its distance from the end of the
    # previous record of the same file (almost always 0, which compresses to nothing)
    expected = np.zeros_like(s)
    if len(s):
        expected[1:] = s[:-1] + n[:-1]
        counts = np.asarray([len(f.tags) for f in files], np.int64)
        first = np.cumsum(counts) - counts
        expected[first[counts > 0]] = 0
    entries = zlib.compress(
        b"".join(((s - expected).astype("<i8").tobytes(), n.tobytes(), np.asarray(crcs, "<i8").tobytes())), 6
    )
    fixed = _FIXED.pack(MAGIC, len(head), crc32c(head), len(entries), crc32c(entries))
    return b"".join((fixed, head, entries))


def head_size(buf: bytes, where: object) -> int:
    """Bytes from the object's start through its head (so a reader knows whether it has them)."""
    if len(buf) < PREFIX_BYTES:
        raise _bad(where, f"truncated ({len(buf)} bytes)")
    magic, head_len, _c, _n, _c2 = _FIXED.unpack_from(buf, 0)
    if magic != MAGIC:
        raise _bad(where, f"not a consolidated index (magic {magic!r})")
    return PREFIX_BYTES + head_len


def decode_head(buf: bytes, where: object) -> ConsolidatedHead:
    """The head, from a prefix of the object holding at least :func:`head_size` bytes."""
    end = head_size(buf, where)
    _m, head_len, head_crc, entries_len, entries_crc = _FIXED.unpack_from(buf, 0)
    if len(buf) < end:
        raise _bad(where, f"truncated in its head ({len(buf)} of {end} bytes)")
    head = bytes(buf[PREFIX_BYTES:end])
    if crc32c(head) != head_crc:
        raise _bad(where, "head CRC32C mismatch (the object is corrupt)")
    try:
        raw = zlib.decompress(head)
        (jl,) = struct.unpack_from("<I", raw, 0)
        meta = orjson.loads(raw[4 : 4 + jl])
        n = int(meta["files"])
        if meta.get("version") != VERSION:
            raise _bad(where, f"unsupported version {meta.get('version')!r}")
        arrays = memoryview(raw)[4 + jl :]
        sizes = (8 * n, n, 8 * n, 4 * n, 4 * n)
        if len(arrays) != sum(sizes):
            raise _bad(where, f"head arrays hold {len(arrays)} bytes, expected {sum(sizes)}")
        off = np.cumsum((0,) + sizes)
        steps = np.frombuffer(arrays[off[0] : off[1]], "<i8")
        modes = np.frombuffer(arrays[off[1] : off[2]], "u1")
        mode_steps = np.frombuffer(arrays[off[2] : off[3]], "<i8")
        layout_ids = np.frombuffer(arrays[off[3] : off[4]], "<i4")
        event_ids = np.frombuffer(arrays[off[4] : off[5]], "<i4")
        layouts = [
            ChunkLayout(tuple(t), tuple((nm, o, tuple(int(d) for d in s)) for nm, o, s in sh))
            for t, sh in meta["layouts"]
        ]
        event_names = list(meta["event_names"])
        worker, bucket, n_entries = str(meta["worker"]), int(meta["bucket"]), int(meta["entries"])
    except IndexReaderException:
        raise
    except (zlib.error, struct.error, orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise _bad(where, f"unreadable head ({exc})") from None
    if n and (
        np.any(np.diff(steps) <= 0)
        or layout_ids.min() < 0
        or layout_ids.max() >= len(layouts)
        or event_ids.min() < EVENT_STANDARD
        or event_ids.max() >= len(event_names)
        or modes.min() < 1
        or modes.max() > 4
    ):
        raise _bad(where, "inconsistent head arrays")
    expected = int(np.asarray([len(x.tags) for x in layouts], np.int64)[layout_ids].sum()) if n else 0
    if n_entries != expected:
        raise _bad(where, f"head counts {n_entries} entries, its layouts {expected}")
    return ConsolidatedHead(
        worker,
        bucket,
        layouts,
        event_names,
        steps,
        modes,
        mode_steps,
        layout_ids,
        event_ids,
        n_entries,
        end,
        entries_len,
        entries_crc,
    )


def object_tag(obj: bytes, where: object = "<bytes>") -> int:
    """CRC32C of the object's fixed prefix and head: names the object in its key."""
    return crc32c(bytes(obj[: head_size(obj, where)]))


_HEADS_MAGIC = b"SMDCIH01"


def encode_heads(parts: list[bytes]) -> bytes:
    """Several objects' prefixes (fixed part and head, as :func:`object_tag` covers) in one object."""
    body = b"".join(struct.pack("<I", len(p)) + bytes(p) for p in parts)
    return _HEADS_MAGIC + struct.pack("<II", len(parts), crc32c(body)) + body


def decode_heads(buf: bytes, where: object) -> list[bytes]:
    """The prefixes :func:`encode_heads` gathered; IndexReaderException when damaged."""
    if len(buf) < 16 or buf[:8] != _HEADS_MAGIC:
        raise _bad(where, "not a heads object")
    n, crc = struct.unpack_from("<II", buf, 8)
    body = bytes(buf[16:])
    if crc32c(body) != crc:
        raise _bad(where, "heads object CRC32C mismatch (truncated or corrupt)")
    out: list[bytes] = []
    off = 0
    for _ in range(n):
        if off + 4 > len(body):
            raise _bad(where, "heads object truncated")
        (ln,) = struct.unpack_from("<I", body, off)
        out.append(body[off + 4 : off + 4 + ln])
        off += 4 + ln
    return out


def decode_entries(head: ConsolidatedHead, blob: bytes, where: object) -> ConsolidatedEntries:
    """The entries section (``blob``: the object's bytes from ``head.entries_offset``)."""
    if len(blob) < head.entries_len:
        raise _bad(where, f"truncated in its entries ({len(blob)} of {head.entries_len} bytes)")
    blob = bytes(blob[: head.entries_len])
    if crc32c(blob) != head.entries_crc:
        raise _bad(where, "entries CRC32C mismatch (the object is corrupt)")
    n = head.n_entries
    try:
        raw = zlib.decompress(blob)
    except zlib.error as exc:
        raise _bad(where, f"unreadable entries ({exc})") from None
    if len(raw) != 24 * n:
        raise _bad(where, f"entries hold {len(raw)} bytes, expected {24 * n}")
    rel = np.frombuffer(raw, "<i8", n, 0)
    lengths = np.frombuffer(raw, "<i8", n, 8 * n)
    crcs = np.frombuffer(raw, "<i8", n, 16 * n)
    counts = np.asarray([len(x.tags) for x in head.layouts], np.int64)[head.layout_ids]
    offsets = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    # undo the start encoding: within a file, start = rel + end of the previous record
    step = rel.copy()
    if n:
        step[1:] += lengths[:-1]
        first = offsets[:-1][counts > 0]
        step[first] = rel[first]
    cs = np.cumsum(step)
    base = np.repeat(cs[offsets[:-1][counts > 0]] - step[offsets[:-1][counts > 0]], counts[counts > 0])
    starts = cs - base
    # kept in memory as 32-bit where the values fit (they nearly always do): 12 bytes an entry
    return ConsolidatedEntries(_narrow(starts), _narrow(lengths), _narrow(crcs), offsets)


def _narrow(a: np.ndarray) -> np.ndarray:
    if len(a) and a.min() >= 0 and a.max() < 2**32:
        return a.astype(np.uint32)
    return np.array(a, np.int64)
