"""The decoder of smdebug's tensor records: framed TFRecord bytes -> the tensor they hold.

Every reader of tensor records (``Tensor.value``, ``Trial.read``, the rules, the command line)
decodes through :class:`RecordDecoder`. A record holding an ``Event{wall_time, step,
summary{value{tag, tensor, metadata}}}`` whose TensorProto is dtype, shape and raw content (what
smdebug's writers produce) is read by a short parser; the bytes from the value's first field to
the content (tag, tensor header, dtype, shape) are the same at every step, so the decoder learns
them once per caller-given key (a *template*, e.g. one per tensor position of an index layout)
and each later record costs a few byte comparisons: the record header (length and its CRC, as
:func:`~smdebug.codec.tfrecord.unframe` checks them), the footer, and every length on the way to
the content. Anything laid out otherwise goes through ``unframe`` and the general Event decoder
(:func:`~smdebug.codec.event.decode_event`), so nothing is lost and corruption is reported alike.

Arrays decoded by the short parser are read-only views into the buffer given; the general
decoder's are copies.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Hashable

import numpy as np

from smdebug.codec.crc import EVENTS_FOOTER, masked_crc32c_bytes
from smdebug.codec.event import decode_event
from smdebug.codec.tensor import numpy_dtype
from smdebug.codec.tfrecord import RECORD_OVERHEAD, unframe
from smdebug.codec.wire import read_varint
from smdebug.exceptions import EventFileCorrupt

__all__ = ["RecordDecoder", "decode_tensor_record", "HEADER_BYTES"]

HEADER_BYTES = 12  # u64 payload length + u32 masked CRC of it
_LEN = struct.Struct("<Q")
_MAX_TEMPLATES = 100_000


def decode_tensor_record(payload: bytes) -> np.ndarray:
    """The tensor of an smdebug tensor record's payload (its first summary value holding one)."""
    got = _short_parse(payload)
    if got is not None:
        return got[0]
    return _general(payload)


def _general(payload: bytes) -> np.ndarray:
    ev = decode_event(payload)
    for sv in ev.values:
        if sv.tensor is not None:
            return sv.tensor
    raise EventFileCorrupt("record holds no tensor")


def _varint(p: bytes, pos: int) -> tuple[int, int]:
    """One or two bytes inline (nearly every length here); longer ones through the checked reader."""
    b = p[pos]
    if b < 0x80:
        return b, pos + 1
    b2 = p[pos + 1]
    if b2 < 0x80:
        return (b & 0x7F) | (b2 << 7), pos + 2
    return read_varint(p, pos, len(p))


# smdebug's mode metadata, as its writers (ours and 1.0.34) lay it out: plugin_data{mode_step},
# plugin_data{mode}. Laid out otherwise, the general decoder reads it (or refuses it).
_METADATA = re.compile(rb"\x0a(.)\x0a\x09mode_step\x12(.)(-?[0-9]{1,20})\x0a\x09\x0a\x04mode\x12\x01[1-4]", re.S)


_PLAIN: set[bytes] = set()  # metadata bytes found plain (a step's records share theirs)


def _plain_metadata(p: bytes, start: int, end: int) -> bool:
    """Whether ``p[start:end]`` is empty or smdebug's mode metadata with every length right."""
    if start == end:
        return True
    md = p[start:end]
    if md in _PLAIN:
        return True
    m = _METADATA.fullmatch(md)
    if m is None or m.group(1)[0] != 13 + len(m.group(3)) or m.group(2)[0] != len(m.group(3)):
        return False
    if len(_PLAIN) >= 10_000:
        _PLAIN.clear()
    _PLAIN.add(bytes(md))
    return True


class _Template:
    """Where a tensor's content lies in the records of one key: the bytes from the value's first
    field to the content, and the content's dtype, shape, count and length."""

    __slots__ = ("marker", "dtype", "shape", "count", "c_len")

    def __init__(self, marker: bytes, dtype: np.dtype, shape: tuple[int, ...], count: int, c_len: int) -> None:
        self.marker, self.dtype, self.shape, self.count, self.c_len = marker, dtype, shape, count, c_len


def _with_template(p: bytes, first: int, size: int, t: _Template) -> np.ndarray | None:
    """The tensor of the payload ``p[first:size]`` laid out as ``t`` says, every length checked
    (a view into ``p``); None if it is not laid out so."""
    if size - first < 12 or p[first] != 0x09:
        return None
    pos = first + 9
    if p[pos] == 0x10:  # the step (absent when 0, as protobuf writes it)
        pos += 1
        while p[pos] & 0x80:
            pos += 1
        pos += 1
    if p[pos] != 0x2A:
        return None
    n, pos = _varint(p, pos + 1)
    if pos + n != size or p[pos] != 0x0A:
        return None
    n, pos = _varint(p, pos + 1)
    if pos + n != size or not p.startswith(t.marker, pos):
        return None
    c = pos + len(t.marker)
    after = c + t.c_len
    if after != size:  # the mode metadata follows the tensor
        if after > size or p[after] != 0x4A:
            return None
        m, q = _varint(p, after + 1)
        if q + m != size or not _plain_metadata(p, q, size):
            return None
    return np.frombuffer(p, dtype=t.dtype, count=t.count, offset=c).reshape(t.shape)


def _shape(p: bytes, pos: int, s_end: int, shape: list[int]) -> int:
    """Parse TensorShapeProto{dim{size, name}} into ``shape``; the end position, or -1."""
    while pos < s_end:
        if p[pos] != 0x12:
            return -1
        n, pos = _varint(p, pos + 1)
        d_end, size = pos + n, 0
        while pos < d_end:
            if p[pos] == 0x08:
                size, pos = _varint(p, pos + 1)
            elif p[pos] == 0x12:  # the dimension's name (smdebug 1.0.34 writes one)
                n, pos = _varint(p, pos + 1)
                pos += n
            else:
                return -1
        if pos != d_end or size >= 1 << 63:
            return -1
        shape.append(size)
    return pos


def _short_parse(p: bytes, first: int = 0, size: int | None = None) -> tuple[np.ndarray, _Template | None] | None:
    """(tensor, template or None) of the payload ``p[first:size]`` when it is an Event{wall_time,
    step, summary{value{tag, tensor, metadata}}} whose TensorProto holds dtype, shape and raw
    content only; None otherwise (then the general decoder reads it, or says what is wrong)."""
    try:
        return _parse(p, first, size)
    except (IndexError, EventFileCorrupt):  # a length running past the bytes, a varint cut short
        return None


def _parse(p: bytes, first: int, size: int | None) -> tuple[np.ndarray, _Template | None] | None:
    if size is None:
        size = len(p)
    if size - first < 12 or p[first] != 0x09:
        return None
    pos = _varint(p, first + 10)[1] if p[first + 9] == 0x10 else first + 9  # the step, absent when 0
    if pos >= size or p[pos] != 0x2A:  # summary
        return None
    n, pos = _varint(p, pos + 1)
    if pos + n != size or p[pos] != 0x0A:  # its one value, the last field
        return None
    n, pos = _varint(p, pos + 1)
    end = pos + n
    if end != size:
        return None
    start = pos
    fields: list[int] = []
    t_start = t_end = -1
    while pos < end:
        k = p[pos]
        fields.append(k)
        n, pos = _varint(p, pos + 1)
        if k == 0x42:  # field 8: the tensor (a second one: the general decoder decodes both)
            if t_start >= 0:
                return None
            t_start, t_end = pos, pos + n
        elif k == 0x4A:  # field 9: the mode metadata
            if not _plain_metadata(p, pos, pos + n):
                return None
        elif k != 0x0A:  # field 1: the tag
            return None
        pos += n
    if t_start < 0 or pos != end:
        return None
    shape: list[int] = []
    pos, code, c_start, c_len = t_start, -1, -1, 0
    while pos < t_end:
        k = p[pos]
        if k == 0x08:
            code, pos = _varint(p, pos + 1)
        elif k == 0x12:
            n, pos = _varint(p, pos + 1)
            if _shape(p, pos, pos + n, shape) != pos + n:
                return None
            pos += n
        elif k == 0x22:
            c_len, pos = _varint(p, pos + 1)
            c_start = pos
            pos += c_len
        else:
            return None
    if code <= 0 or c_start < 0 or code == 7 or c_start + c_len != t_end:
        return None
    try:
        dt = numpy_dtype(code)
    except EventFileCorrupt:
        return None
    count = math.prod(shape)
    if count * dt.itemsize != c_len or t_end > size:
        return None
    try:
        arr = np.frombuffer(p, dtype=dt, count=count, offset=c_start).reshape(shape)
    except ValueError:  # a shape numpy cannot make ([0, 2**62] floats): the general decoder says so
        return None
    template = None
    if fields[:2] == [0x0A, 0x42] and fields[2:] in ([], [0x4A]):
        template = _Template(bytes(p[start:c_start]), dt, tuple(shape), count, c_len)
    return arr, template


class RecordDecoder:
    """Decodes framed tensor records, learning a template per key (keys are the caller's: one per
    tensor position of a record layout), so that each later record of a key costs a few byte
    comparisons. One decoder serves a trial; it holds no bytes, only the templates."""

    def __init__(self) -> None:
        self._templates: dict[Hashable, _Template] = {}
        self._headers: dict[int, bytes] = {}  # record length -> its 12 header bytes (payload length, its masked CRC)

    @property
    def learnt(self) -> int:
        """How many templates the decoder has learnt (the short path's use shows here)."""
        return len(self._templates)

    def decode(self, buf: bytes, off: int, length: int, key: Hashable, where: object, at: int) -> np.ndarray:
        """The tensor of the record of ``length`` bytes at ``buf[off:]`` (bytes), which lies at
        byte ``at`` of the file ``where`` names; a defect raises EventFileCorrupt naming both."""
        head = self._headers.get(length)
        if head is None:
            n = _LEN.pack(length - RECORD_OVERHEAD)
            head = self._headers[length] = n + masked_crc32c_bytes(n)
        end = off + length - 4
        t = self._templates.get(key)
        if t is not None and buf.startswith(head, off) and buf.startswith(EVENTS_FOOTER, end):
            try:
                arr = _with_template(buf, off + HEADER_BYTES, end, t)
            except (IndexError, EventFileCorrupt):
                arr = None
            if arr is not None:
                return arr
        if buf.startswith(head, off) and buf.startswith(EVENTS_FOOTER, end):
            got = _short_parse(buf, off + HEADER_BYTES, end)
            if got is not None:
                self._learn(key, got[1])
                return got[0]
        # the general path: the record's own bytes only (its header may not claim more than the index gave)
        payload, _ = unframe(buf[off : off + length], 0, where, base=at)
        got = _short_parse(payload)
        if got is not None:
            self._learn(key, got[1])
            return got[0]
        try:
            return _general(payload)
        except EventFileCorrupt as exc:
            raise EventFileCorrupt(f"{where}: record at byte {at}: {exc}") from None

    def _learn(self, key: Hashable, template: _Template | None) -> None:
        if template is None or key is None:
            return
        if len(self._templates) >= _MAX_TEMPLATES:
            self._templates.clear()
        self._templates[key] = template
