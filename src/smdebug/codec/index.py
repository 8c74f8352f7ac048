"""Index JSON (one per step and worker) and collections JSON: encode and validated decode."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass

import orjson

from smdebug.codec.crc import crc32c
from smdebug.exceptions import IndexReaderException
from smdebug.modes import ModeKeys

__all__ = ["ParsedIndex", "IndexBuilder", "IndexDecoder", "encode_index", "decode_index", "decode_collections_json"]


@dataclass(slots=True)
class ParsedIndex:
    mode: ModeKeys
    mode_step: int
    event_file_name: str | None
    tags: tuple  # tensor_payload tag per entry, in file order
    starts: list
    lengths: list
    shapes: dict  # tag -> (shape tuple, original name), from shape_payload
    crcs: list | None = None  # payload CRC32C per entry ("crc32c", written by our writer), if present


def encode_index(meta: dict, tensor_payload: list, shape_payload: list) -> bytes:
    """An index file from its three sections as JSON-ready values (tests write odd files with it;
    writers use :class:`IndexBuilder`)."""
    return orjson.dumps({"meta": meta, "tensor_payload": tensor_payload, "shape_payload": shape_payload})


class IndexBuilder:
    """One step's index file as a writer fills it in: this class and :func:`decode_index` are the
    only code that knows the file's JSON keys. :meth:`encode` gives the file, :meth:`parsed` what
    :func:`decode_index` reads back from it (the consolidator takes that)."""

    __slots__ = ("mode", "mode_step", "event_file_name", "tags", "starts", "lengths", "crcs", "shapes")

    def __init__(self) -> None:
        self.mode: ModeKeys | None = None  # None: nothing written yet
        self.mode_step = 0
        self.event_file_name: str | None = None
        self.tags: list[str] = []
        self.starts: list[int] = []
        self.lengths: list[int] = []
        self.crcs: list[int] | None = None
        self.shapes: list[tuple] = []  # (name, original name, shape tuple), in the order written

    def records_in(self, event_file_name: str, mode: ModeKeys, mode_step: int) -> None:
        """The step's records are in ``event_file_name`` under ``mode``/``mode_step`` (the first
        record's mode wins, over the mode of shapes written before it)."""
        if self.event_file_name is None:
            self.mode, self.mode_step, self.event_file_name = mode, mode_step, event_file_name

    def shapes_of(self, mode: ModeKeys, mode_step: int) -> None:
        """Shapes written under ``mode``/``mode_step`` (used when no record is written)."""
        if self.mode is None:
            self.mode, self.mode_step = mode, mode_step

    def add(self, name: str, start: int, length: int) -> None:
        self.tags.append(name)
        self.starts.append(start)
        self.lengths.append(length)

    def add_all(self, names: list[str], start: int, lengths: list[int]) -> int:
        """Records of ``lengths`` bytes, one after the other from ``start``; the offset after them."""
        starts = self.starts
        for n in lengths:
            starts.append(start)
            start += n
        self.tags.extend(names)
        self.lengths.extend(lengths)
        return start

    def add_shape(self, name: str, original_name: str, shape: Iterable[int]) -> None:
        self.shapes.append((name, original_name, tuple(int(d) for d in shape)))

    @property
    def empty(self) -> bool:
        return self.mode is None or not (self.tags or self.shapes)

    def _written_mode(self) -> ModeKeys:
        if self.mode is None:
            raise IndexReaderException("an index with nothing written in it has no mode (records_in comes first)")
        return self.mode

    def encode(self) -> bytes:
        meta: dict = {"mode": self._written_mode().name, "mode_step": self.mode_step}
        if self.event_file_name is not None:
            meta["event_file_name"] = self.event_file_name
        if self.crcs is None:
            tp = [
                {"tensorname": n, "start_idx": s, "length": ln}
                for n, s, ln in zip(self.tags, self.starts, self.lengths)
            ]
        else:  # each payload's CRC32C: readers verify it (smdebug 1.0.34 ignores the key)
            tp = [
                {"tensorname": n, "start_idx": s, "length": ln, "crc32c": c}
                for n, s, ln, c in zip(self.tags, self.starts, self.lengths, self.crcs)
            ]
        sp = [{"tensorname": n, "originalname": o, "shape": list(shape)} for n, o, shape in self.shapes]
        return encode_index(meta, tp, sp)

    def parsed(self) -> ParsedIndex:
        shapes = {n: (shape, o) for n, o, shape in self.shapes}
        return ParsedIndex(
            self._written_mode(),
            self.mode_step,
            self.event_file_name if self.tags else None,
            tuple(self.tags),
            list(self.starts),
            list(self.lengths),
            shapes,
            list(self.crcs) if self.crcs is not None else None,
        )


_INT64_MAX = 2**63 - 1


def _short(value: object, limit: int = 120) -> str:
    """repr() for a message, cut so that a hostile file cannot make the message huge."""
    r = repr(value)
    return r if len(r) <= limit else f"{r[:limit]}... ({len(r)} characters)"


def _bad(where: str, what: str) -> IndexReaderException:
    return IndexReaderException(f"{where}: {what}")


def _whole(value: object, what: str, where: str, lo: int) -> int:
    """A JSON integer in [lo, 2**63 - 1]: floats (2.5, 1e308), strings and bools are refused."""
    if type(value) is not int or not lo <= value <= _INT64_MAX:
        raise _bad(where, f"{what} {_short(value)} is not a whole number in [{lo}, 2**63 - 1]")
    return value


def safe_relative_key(name: object, where: str) -> str:
    """``event_file_name`` must be a relative path that stays inside the trial folder."""
    if not isinstance(name, str) or not name or "\0" in name:
        raise _bad(where, f"event_file_name {_short(name)} is not a non-empty string without NUL")
    norm = posixpath.normpath(name.replace("\\", "/"))
    if norm.startswith("/") or norm == ".." or norm.startswith("../") or ":" in norm.split("/")[0]:
        raise _bad(where, f"event_file_name {_short(name)} points outside the trial folder")
    return norm


def _mode(meta: dict, where: str) -> ModeKeys:
    """meta's mode; meta must also hold a mode_step."""
    mode = ModeKeys.__members__.get(meta["mode"].strip()) if isinstance(meta.get("mode"), str) else None
    if mode is None or "mode_step" not in meta:
        raise _bad(where, f"meta needs a valid mode and mode_step, got {_short(meta)}")
    return mode


def _event_file(meta: dict, where: str) -> str | None:
    """The event file of an index with tensor entries. An empty name keeps the step and its
    tensors listed (as in 1.0.34): reading a value fails, naming the index."""
    if meta.get("event_file_name") == "":
        return None
    return safe_relative_key(meta.get("event_file_name"), where)


def decode_index(data: bytes, where: str) -> ParsedIndex:
    """Parse and check one index file; every defect raises IndexReaderException naming ``where``."""
    try:
        d = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise _bad(where, f"not valid JSON ({exc})") from None
    if not isinstance(d, dict):
        raise _bad(where, "top level is not a JSON object")
    meta = d.get("meta")
    if not isinstance(meta, dict) or not meta:
        raise _bad(where, "meta section is missing or empty")
    if "tensor_payload" not in d and "shape_payload" not in d:
        raise _bad(where, "neither tensor_payload nor shape_payload is present")
    mode = _mode(meta, where)
    mode_step = _whole(meta["mode_step"], "meta.mode_step", where, -_INT64_MAX - 1)
    tp = d.get("tensor_payload") or []
    sp = d.get("shape_payload") or []
    if not isinstance(tp, list) or not isinstance(sp, list):
        raise _bad(where, "tensor_payload and shape_payload must be lists")
    event_file_name = None
    try:
        tags = tuple([e["tensorname"] for e in tp])
        starts = [e["start_idx"] for e in tp]
        lengths = [e["length"] for e in tp]
        crcs = [e.get("crc32c") for e in tp] if tp and "crc32c" in tp[0] else None
    except (KeyError, TypeError):
        raise _bad(where, "a tensor_payload entry lacks tensorname, start_idx or length") from None
    if tags and set(map(type, tags)) != {str}:
        raise _bad(where, f"a tensorname is not a string: {_short([t for t in tags if type(t) is not str][0])}")
    if tp:
        # start_idx / length are checked when a record is read (IndexFile.location), so that
        # opening a trial does no per-entry work beyond collecting the tags
        event_file_name = _event_file(meta, where)
    shapes = {}
    for e in sp:
        try:
            name, dims, original = e["tensorname"], e["shape"], e.get("originalname", e["tensorname"])
        except (KeyError, TypeError, AttributeError):
            raise _bad(where, f"bad shape_payload entry {_short(e)}") from None
        if not isinstance(name, str) or not isinstance(original, str) or not isinstance(dims, list):
            raise _bad(where, f"bad shape_payload entry {_short(e)}")
        shapes[name] = (tuple(_whole(x, f"shape of {name!r}: dimension", where, 0) for x in dims), original)
    return ParsedIndex(mode, mode_step, event_file_name, tags, starts, lengths, shapes, crcs)


class _Payload:
    """Payload sections met before: their bytes and a file decoded with them."""

    __slots__ = ("tail", "parsed", "alone")

    def __init__(self, tail: bytes, parsed: ParsedIndex) -> None:
        self.tail, self.parsed = tail, parsed
        self.alone: bool | None = None  # no "meta" member in them (looked for at the first match)


class IndexDecoder:
    """:func:`decode_index` over many index files of one trial, with the same results and errors.
    A file whose payload sections (everything after its meta section) are byte for byte those of
    a file decoded before has only its meta section parsed and checked: a job's files of one
    tensor layout mostly are alike, records of the same sizes at the same offsets (files that
    carry payload CRCs differ; after ``give_up`` files in a row without a match the decoder stops
    looking). The split is used only where the file's bytes before the comma that precedes
    ``"tensor_payload"`` make a JSON object holding "meta" alone (closed by a "}"), and its bytes
    after it hold no "meta" and no \\u escape: the file's members are then that object's and the
    payload's. It keeps the last ``keep`` payloads, ``keep_bytes`` at most. Files that share
    payload sections share the lists parsed from them: read them only."""

    def __init__(self, keep: int = 16, keep_bytes: int = 8 << 20, give_up: int = 256) -> None:
        self._known: dict[tuple[int, int], _Payload] = {}  # by the payload's (length, crc32c)
        self._keep, self._keep_bytes, self._give_up = keep, keep_bytes, give_up
        self._bytes = 0  # of the payloads kept
        self._misses = 0

    def decode(self, data: bytes, where: str) -> ParsedIndex:
        comma = -1
        if self._misses < self._give_up:
            cut = data.find(b'"tensor_payload"', 0, 4096)
            comma = data.rfind(b",", 0, cut) if cut > 0 else -1
        if comma < 0:
            return decode_index(data, where)
        tail = data[comma + 1 :]
        key = (len(tail), crc32c(tail))
        known = self._known.get(key)
        head = _meta_alone(data, comma)
        if known is not None and known.alone is None and known.tail == tail:
            # no "meta" member, not even spelt with escapes (20 us each for 18 kB: once per payload)
            known.alone = b'"meta"' not in tail and b"\\u" not in tail
        if known is None or not known.alone or known.tail != tail or head is None:
            parsed = decode_index(data, where)
            self._misses += 1
            if known is None and head is not None and len(tail) <= self._keep_bytes:
                self._known[key] = _Payload(tail, parsed)
                self._bytes += len(tail)
                while len(self._known) > self._keep or self._bytes > self._keep_bytes:  # the oldest go
                    self._bytes -= len(self._known.pop(next(iter(self._known))).tail)
            return parsed
        self._misses = 0
        # decode_index's checks of the meta section, in its order (the payload passed them before)
        meta = head["meta"]
        if not isinstance(meta, dict) or not meta:
            raise _bad(where, "meta section is missing or empty")
        mode = _mode(meta, where)
        mode_step = _whole(meta["mode_step"], "meta.mode_step", where, -_INT64_MAX - 1)
        p = known.parsed
        event_file_name = _event_file(meta, where) if p.tags else None
        return ParsedIndex(mode, mode_step, event_file_name, p.tags, p.starts, p.lengths, p.shapes, p.crcs)


def _meta_alone(data: bytes, comma: int) -> dict | None:
    """``data[:comma] + "}"`` parsed, when it is a JSON object whose one member is "meta"."""
    try:
        head = orjson.loads(data[:comma] + b"}")
    except orjson.JSONDecodeError:
        return None
    return head if type(head) is dict and len(head) == 1 and "meta" in head else None


def _str_list(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(x, str) for x in value)


def _check_collection(name: str, c: object, where: str) -> None:
    if not isinstance(c, dict):
        raise _bad(where, f"collection {_short(name)} is {_short(c)}, not an object")
    if not isinstance(c.get("name"), str):
        raise _bad(where, f"collection {_short(name)}: name {_short(c.get('name'))} is not a string")
    for field in ("include_regex", "tensor_names"):
        if c.get(field) is not None and not _str_list(c[field]):
            raise _bad(where, f"collection {_short(name)}: {field} {_short(c[field])} is not a list of strings")
    for rx in c.get("include_regex") or ():
        try:
            re.compile(rx)
        except re.error as exc:
            raise _bad(where, f"collection {_short(name)}: include_regex {_short(rx)} is not a regex ({exc})") from None
    for field in ("reduction_config", "save_config"):
        if c.get(field) is not None and not isinstance(c[field], dict):
            raise _bad(where, f"collection {_short(name)}: {field} {_short(c[field])} is not an object")
    if not isinstance(c.get("save_histogram", True), bool):
        raise _bad(where, f"collection {_short(name)}: save_histogram {_short(c['save_histogram'])} is not a boolean")


def decode_collections_json(data: bytes, where: str) -> dict:
    """The collections JSON as a dict, checked for the two top-level keys 1.0.34 writes, the types of
    each collection's fields and ``_meta.num_workers`` (a whole number >= 1)."""
    try:
        d = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise IndexReaderException(f"{where}: not valid JSON ({exc})") from None
    if not isinstance(d, dict) or not isinstance(d.get("collections", {}), dict):
        raise IndexReaderException(f"{where}: expected {{'collections': {{...}}, '_meta': {{...}}}}")
    extra = set(d) - {"collections", "_meta"}
    if extra:
        raise IndexReaderException(f"{where}: unexpected keys {_short(sorted(extra))}")
    for name, c in d.get("collections", {}).items():
        _check_collection(name, c, where)
    meta = d.get("_meta", {})
    if not isinstance(meta, dict):
        raise _bad(where, f"_meta {_short(meta)} is not an object")
    if "num_workers" in meta:
        _whole(meta["num_workers"], "_meta.num_workers", where, 1)
    return d
