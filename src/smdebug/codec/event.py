"""Event / Summary protobufs: smdebug's tensor records and TensorBoard scalars and histograms."""

from __future__ import annotations

import struct
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from smdebug.codec.crc import EVENTS_FOOTER, crc32c, mask, masked_crc32c_bytes
from smdebug.codec.tensor import DT, decode_tensor, dtype_code, encode_tensor, tensor_content, tensor_head
from smdebug.codec.wire import I32, I64, LEN, VARINT, Span, double, iter_fields, key, ld, varint
from smdebug.exceptions import EventFileCorrupt
from smdebug.modes import ModeKeys

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = [
    "SummaryValue",
    "Event",
    "mode_metadata",
    "encode_tensor_event",
    "encode_summary_event",
    "scalar_value",
    "histogram_value",
    "decode_event",
]

_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")


@dataclass
class SummaryValue:
    tag: str
    mode: ModeKeys = ModeKeys.GLOBAL
    mode_step: int | None = None
    tensor: np.ndarray | None = None
    simple_value: float | None = None
    histogram: dict | None = None


@dataclass
class Event:
    step: int = 0
    wall_time: float = 0.0
    values: list[SummaryValue] = field(default_factory=list)
    file_version: str | None = None


def mode_metadata(mode: ModeKeys, mode_step: int) -> bytes:
    """SummaryMetadata with smdebug's two plugin_data entries: mode_step, then mode."""
    return ld(1, ld(1, b"mode_step") + ld(2, str(int(mode_step)).encode())) + ld(
        1, ld(1, b"mode") + ld(2, str(mode.value).encode())
    )


def _event(step: int, summary: bytes, wall_time: float | None) -> bytes:
    wt = time.time() if wall_time is None else float(wall_time)
    return double(1, wt) + key(2, VARINT) + varint(int(step)) + ld(5, summary)


def encode_tensor_event(tag: str, arr: np.ndarray, step: int, metadata: bytes, wall_time: float | None = None) -> bytes:
    """The payload of one smdebug tensor record (``metadata`` from :func:`mode_metadata`)."""
    value = ld(1, tag.encode("utf-8")) + ld(8, encode_tensor(arr)) + ld(9, metadata)
    return _event(step, ld(1, value), wall_time)


_TEMPLATES: dict[tuple, tuple[bytes, bytes]] = {}
_LEN = struct.Struct("<Q")


def encode_tensor_record_chunks(
    tag: str,
    arr: np.ndarray,
    step: int,
    metadata: bytes,
    wall_time: float | None = None,
    payload_crc: bool = False,
) -> list:
    """The record as [bytes before the content, the content, bytes after]: the content is a
    zero-copy view of the array when it can be, so a large tensor is not copied on its way to
    the file. The bytes around the content depend only on (tag, dtype, shape, metadata) and are
    built once and reused: this is the writer's hot path."""
    dt = arr.dtype
    tkey = (tag, dt, arr.shape, metadata)
    tpl = _TEMPLATES.get(tkey)
    if tpl is None:
        if dtype_code(dt) == DT.STRING:
            from smdebug.codec.tfrecord import frame

            return [frame(encode_tensor_event(tag, arr, step, metadata, wall_time), payload_crc)]
        if len(_TEMPLATES) > 50_000:
            _TEMPLATES.clear()
        head = tensor_head(arr)
        tag_b = ld(1, tag.encode("utf-8"))
        md = ld(9, metadata)
        tensor_len = len(head) + arr.nbytes
        value_len = len(tag_b) + 1 + len(varint(tensor_len)) + tensor_len + len(md)
        value_head = key(1, LEN) + varint(value_len)
        summary_len = len(value_head) + value_len
        before = b"".join((key(5, LEN), varint(summary_len), value_head, tag_b, key(8, LEN), varint(tensor_len), head))
        tpl = _TEMPLATES[tkey] = (before, md)
    content = tensor_content(arr)
    wt = time.time() if wall_time is None else float(wall_time)
    head = b"".join((b"\x09", _F64.pack(wt), b"\x10", varint(int(step)), tpl[0]))
    length = _LEN.pack(len(head) + arr.nbytes + len(tpl[1]))
    if payload_crc:
        crc = crc32c(tpl[1], crc32c(content, crc32c(head)))
        footer = struct.pack("<I", mask(crc))
    else:
        footer = EVENTS_FOOTER
    return [b"".join((length, masked_crc32c_bytes(length), head)), content, tpl[1] + footer]


def scalar_value(tag: str, value: float) -> bytes:
    return ld(1, tag.encode("utf-8")) + key(2, I32) + _F32.pack(float(value))


def histogram_value(tag: str, values: ArrayLike, bucket_limits: ArrayLike, bucket_counts: ArrayLike) -> bytes:
    """A ``HistogramProto`` summary value (TensorBoard's histograms plugin reads these)."""
    v = np.asarray(values, dtype=np.float64).ravel()
    histo = b"".join(
        (
            double(1, float(v.min()) if v.size else 0.0),
            double(2, float(v.max()) if v.size else 0.0),
            double(3, float(v.size)),
            double(4, float(v.sum())),
            double(5, float(np.dot(v, v))),
            ld(6, np.asarray(bucket_limits, dtype="<f8").tobytes()),
            ld(7, np.asarray(bucket_counts, dtype="<f8").tobytes()),
        )
    )
    return ld(1, tag.encode("utf-8")) + ld(5, histo)


def encode_summary_event(values: list[bytes], step: int, wall_time: float | None = None) -> bytes:
    return _event(step, b"".join(ld(1, v) for v in values), wall_time)


def encode_file_version_event(wall_time: float | None = None) -> bytes:
    wt = time.time() if wall_time is None else float(wall_time)
    return double(1, wt) + ld(3, b"brain.Event:2")


def _decode_metadata(buf: bytes, span: Span) -> tuple[ModeKeys, int | None]:
    mode = ModeKeys.GLOBAL
    mode_step: int | None = None
    for f, wt, v in iter_fields(buf, span[0], span[1]):
        if f != 1 or wt != LEN:
            continue
        name = content = b""
        for f2, wt2, v2 in iter_fields(buf, v[0], v[1]):
            if f2 == 1 and wt2 == LEN:
                name = buf[v2[0] : v2[1]]
            elif f2 == 2 and wt2 == LEN:
                content = buf[v2[0] : v2[1]]
        try:
            if name == b"mode_step":
                mode_step = int(content)
            elif name == b"mode":
                mode = ModeKeys(int(content))
        except ValueError as exc:
            raise EventFileCorrupt(f"bad {bytes(name).decode(errors='replace')} metadata: {exc}") from None
    return mode, mode_step


def _decode_value(buf: bytes, span: Span, step: int) -> SummaryValue:
    sv = SummaryValue(tag="")
    for f, wt, v in iter_fields(buf, span[0], span[1]):
        if f == 1 and wt == LEN:
            sv.tag = bytes(buf[v[0] : v[1]]).decode("utf-8", errors="replace")
        elif f == 2 and wt == I32:
            sv.simple_value = _F32.unpack(v)[0]
        elif f == 8 and wt == LEN:
            sv.tensor = decode_tensor(buf, v)
        elif f == 9 and wt == LEN:
            sv.mode, sv.mode_step = _decode_metadata(buf, v)
        elif f == 5 and wt == LEN:
            sv.histogram = _decode_histogram(buf, v)
    if sv.mode_step is None:
        sv.mode_step = step
    return sv


def _decode_histogram(buf: bytes, span: Span) -> dict:
    h: dict = {"bucket_limit": [], "bucket": []}
    names = {1: "min", 2: "max", 3: "num", 4: "sum", 5: "sum_squares"}
    for f, wt, v in iter_fields(buf, span[0], span[1]):
        if f in names and wt == I64:
            h[names[f]] = _F64.unpack(v)[0]
        elif f in (6, 7):
            target = h["bucket_limit" if f == 6 else "bucket"]
            if wt == LEN:
                if (v[1] - v[0]) % 8:
                    raise EventFileCorrupt("histogram buckets are not a whole number of doubles")
                target.extend(np.frombuffer(buf[v[0] : v[1]], dtype="<f8").tolist())
            elif wt == I64:
                target.append(_F64.unpack(v)[0])
    return h


def decode_event(payload: bytes) -> Event:
    """Any Event; summaries are decoded, other kinds (graphs, run metadata) are skipped."""
    ev = Event()
    summary: Span | None = None
    for f, wt, v in iter_fields(payload):
        if f == 1 and wt == I64:
            ev.wall_time = _F64.unpack(v)[0]
        elif f == 2 and wt == VARINT:
            ev.step = v - (1 << 64) if v >= (1 << 63) else v
        elif f == 3 and wt == LEN:
            ev.file_version = bytes(payload[v[0] : v[1]]).decode(errors="replace")
        elif f == 5 and wt == LEN:
            summary = v
    if summary is not None:
        for f, wt, v in iter_fields(payload, summary[0], summary[1]):
            if f == 1 and wt == LEN:
                ev.values.append(_decode_value(payload, v, ev.step))
    return ev


class _StepLayout:
    """The bytes of a whole event file whose records have given (tag, dtype, shape)s, with the
    places that change from one step to the next: each record's wall time, the step, the mode
    metadata and the small tensors' contents. Large contents stay out of the buffer (written
    from the arrays themselves)."""

    LARGE = 4096  # contents of more bytes than this are separate chunks

    def __init__(self, tags: Sequence[str], arrays: Sequence[np.ndarray], step: int, metadata: bytes):
        buf = bytearray()
        wt: list[int] = []  # where each record's wall time lies in buf
        st: list[int] = []  # its step
        md: list[int] = []  # its mode metadata
        small: list[np.ndarray] = []  # the positions of the small contents' bytes
        self.large: list[tuple[int, int]] = []  # (position in buf, record number) of each large content
        self.lengths: list[int] = []
        for tag, arr in zip(tags, arrays):
            head, content, tail = encode_tensor_record_chunks(tag, arr, step, metadata, 0.0)
            start = len(buf)
            wt.append(start + 13)  # length (8), its crc (4), field 1 key: the wall time's 8 bytes
            st.append(start + 22)  # then field 2 key: the step's varint
            buf += head
            n = arr.nbytes
            if n > self.LARGE:
                self.large.append((len(buf), len(self.lengths)))
            else:
                small.append(np.arange(len(buf), len(buf) + n))
                buf += bytes(n)
            md.append(len(buf) + len(tail) - len(EVENTS_FOOTER) - len(metadata))  # tail: ld(9, md) + footer
            buf += tail
            self.lengths.append(len(head) + n + len(tail))
        self.template = np.frombuffer(bytes(buf), dtype=np.uint8)
        self.wt_idx = (np.asarray(wt)[:, None] + np.arange(8)).ravel()
        self.st_idx = (np.asarray(st)[:, None] + np.arange(len(varint(step)))).ravel()
        self.md_idx = (np.asarray(md)[:, None] + np.arange(len(metadata))).ravel()
        self.small_idx: np.ndarray | None = np.concatenate(small) if small else None
        large = {i for _pos, i in self.large}
        self.small_arrays = [i for i in range(len(self.lengths)) if i not in large]  # whose bytes go in buf
        self.n = len(self.lengths)

    def fill(self, arrays: Sequence[np.ndarray], wall_times: Sequence[float], step: int, metadata: bytes) -> list:
        b = self.template.copy()
        b[self.wt_idx] = np.asarray(wall_times, dtype="<f8").view(np.uint8)
        b[self.st_idx] = np.tile(np.frombuffer(varint(int(step)), dtype=np.uint8), self.n)
        b[self.md_idx] = np.tile(np.frombuffer(metadata, dtype=np.uint8), self.n)
        if self.small_idx is not None:
            b[self.small_idx] = np.frombuffer(_small_contents([arrays[i] for i in self.small_arrays]), dtype=np.uint8)
        chunks: list = []
        prev = 0
        for pos, i in self.large:
            chunks.append(b[prev:pos])
            chunks.append(tensor_content(arrays[i]))
            prev = pos
        chunks.append(b[prev:])
        return chunks


def _small_contents(arrays: list) -> bytes:
    """The bytes of many small arrays, one after the other (C order): one join when all of them
    are contiguous (a step's reductions: 0-d views of one host array), else array by array."""
    try:
        return b"".join(arrays)
    except TypeError:  # a non-contiguous array exposes no plain buffer
        return b"".join([a.tobytes() for a in arrays])  # tobytes: C order


_LAYOUTS: dict[tuple, _StepLayout] = {}


def encode_step_records(
    tags: Sequence[str],
    arrays: Sequence[np.ndarray],
    step: int,
    metadata: bytes,
    wall_times: Sequence[float | None] | None = None,
) -> tuple[list, list[int]] | None:
    """Many records of one step as file chunks, and each record's length; None where the
    records need the one-by-one path (string or big-endian tensors).

    Training saves the same tensors at every step, so an event file's bytes are the same from
    one step to the next but for the wall times, the step, the mode metadata and the contents:
    the layout is worked out once and each step fills it in with a few numpy operations (this
    is the hook writer's hot path: a hundred reductions a step cost microseconds, not a
    millisecond of Python)."""
    key = (tuple(tags), tuple([(a.dtype, a.shape) for a in arrays]), len(metadata), len(varint(int(step))))
    layout = _LAYOUTS.get(key)
    if layout is None:  # (a layout exists only for dtypes checked here: the dtypes are in the key)
        for a in arrays:
            if a.dtype.byteorder == ">" or dtype_code(a.dtype) == DT.STRING:
                return None
        if len(_LAYOUTS) >= 64:
            _LAYOUTS.clear()
        layout = _LAYOUTS[key] = _StepLayout(tags, arrays, step, metadata)
    walls: list[float]
    if wall_times is None:
        walls = [time.time()] * layout.n
    else:
        now = time.time()
        walls = [now if w is None else float(w) for w in wall_times]
    return layout.fill(arrays, walls, step, metadata), layout.lengths
