"""What a rule reads at a step, in one batched read per trial.

A rule over 50 tensors x 4 workers reads 200 records a step. Going through ``Tensor.value`` costs
a trial look-up, a storage call and a general protobuf decode per record; here the records of a
step are grouped by event file, each file's span is read with one ranged read, and the tensor is
taken out of each record by a short parser for the layout smdebug's writers produce (raw
little-endian content), learnt once per tensor position (a template) and then checked with a few
byte comparisons: the record header (length and its CRC, as the codec's ``unframe`` checks them),
the footer, and every length on the way to the content. Any record laid out otherwise goes to
the codec (``unframe`` and the general decoder), so nothing is lost and corruption is reported
as the codec reports it. The payload's CRC32C, when the index recorded one, is checked as
``Tensor.value`` checks it (``trials.records.check_payload``, the same error), before any decoding:
a rule never judges a record that ``smdebug show`` would refuse as corrupt.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

from smdebug.codec.crc import EVENTS_FOOTER, crc32c, masked_crc32c_bytes
from smdebug.codec.event import decode_tensor_record
from smdebug.codec.tensor import numpy_dtype
from smdebug.codec.tfrecord import RECORD_OVERHEAD, unframe
from smdebug.codec.wire import read_varint
from smdebug.core.reductions import get_numpy_reduction
from smdebug.exceptions import EventFileCorrupt, IndexReaderException, ObjectNotFound
from smdebug.trials.records import RecordCheck, Where, check_payload

__all__ = ["ValueKey", "StepValue", "StepReader", "numeric", "scalar", "mean_abs", "close_each", "decode_record_tensor"]

_SPAN_SLACK = 64 * 1024  # records of one file closer than this are fetched in one range
_LEN = struct.Struct("<Q")


@dataclass(frozen=True)
class ValueKey:
    """One saved value to read: a tensor at a global step, of one worker (None: every worker)."""

    name: str
    step: int
    worker: str | None = None


@dataclass
class StepValue:
    """A value read back: the tensor, global step, worker, and the numeric array (or reduction)."""

    name: str
    step: int
    worker: str
    value: np.ndarray
    from_reduction: bool = False  # the value is a saved reduction, not the tensor itself


def numeric(value: Any) -> np.ndarray | None:
    """``value`` as a numeric array (bfloat16 and friends as float32); None for strings and objects."""
    arr = np.asarray(value)
    kind = arr.dtype.kind
    if kind in "biufc":
        return arr
    if kind == "V":  # ml_dtypes (bfloat16, float8 ...) report kind 'V'
        try:
            return arr.astype(np.float32)
        except (TypeError, ValueError):
            return None
    return None


def scalar(value: Any) -> float:
    """The one number of a reduction (saved as shape (1,) or computed as a 0-d array)."""
    return float(np.asarray(value).reshape(-1)[0])


def mean_abs(values: list[StepValue]) -> np.ndarray:
    """mean(|x|) of each value, vectorized: saved reductions (``from_reduction``) are taken as
    they are, raw values reduced together (empty ones give NaN)."""
    out = np.full(len(values), np.nan)
    red = [i for i, v in enumerate(values) if v.from_reduction]
    if red:
        out[red] = np.concatenate([values[i].value.reshape(-1)[:1] for i in red]).astype(np.float64)
    raw = [i for i, v in enumerate(values) if not v.from_reduction and v.value.size]
    if raw:
        arrays = [values[i].value.reshape(-1) for i in raw]
        sizes = np.array([a.size for a in arrays])
        offsets = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        flat = np.abs(np.concatenate(arrays).astype(np.float64, copy=False))
        with np.errstate(all="ignore"):
            out[raw] = np.add.reduceat(flat, offsets) / sizes
    return out


def close_each(olds: list, news: list, rtol: float, atol: float, equal_nan: bool) -> np.ndarray:
    """``numpy.allclose(old, new)`` of each pair (same shapes), vectorized over all pairs."""
    out = np.ones(len(olds), dtype=bool)
    keep = [i for i, a in enumerate(olds) if a.size]
    if not keep:
        return out
    a = np.concatenate([olds[i].reshape(-1) for i in keep])
    b = np.concatenate([news[i].reshape(-1) for i in keep])
    if a.dtype.kind not in "fc" or b.dtype.kind not in "fc":
        a, b = a.astype(np.float64), b.astype(np.float64)
    sizes = np.array([olds[i].size for i in keep])
    offsets = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    with np.errstate(all="ignore"):
        close = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    out[keep] = np.logical_and.reduceat(close, offsets)
    return out


# ---------------------------------------------------------------------- decoding
def _varint(p: bytes, pos: int) -> tuple[int, int]:
    """One byte inline (nearly every length here); longer ones through the codec's checked reader."""
    b = p[pos]
    if b < 0x80:
        return b, pos + 1
    return read_varint(p, pos, len(p))


class _Template:
    """Where a tensor's content lies in the records of one (index layout, position): everything from
    the value's first field to the content (tag, tensor header, dtype, shape) is the same bytes at
    every step; only the wall time, step and mode step around it change."""

    __slots__ = ("marker", "dtype", "shape", "count", "c_len")

    def __init__(self, marker: Any, dtype: Any, shape: Any, count: Any, c_len: Any) -> None:
        self.marker, self.dtype, self.shape, self.count, self.c_len = marker, dtype, shape, count, c_len


def _with_template(p: bytes, first: int, size: int, t: _Template) -> Any:
    """The tensor of the payload ``p[first:size]`` laid out as ``t`` says, every length checked
    (a view into ``p``, not a copy); None if it is not laid out so."""
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
        if q + m != size:
            return None
    return np.frombuffer(p, dtype=t.dtype, count=t.count, offset=c).reshape(t.shape)


def _fast_tensor(p: bytes) -> Any:
    """(tensor, template or None) of an Event{wall_time, step, summary{value{tag, tensor,
    metadata}}} record whose TensorProto holds dtype, shape and raw content only; None otherwise."""
    if len(p) < 12 or p[0] != 0x09:
        return None
    pos = _varint(p, 10)[1] if p[9] == 0x10 else 9  # the step, absent when 0
    if p[pos] != 0x2A:  # summary
        return None
    _, pos = _varint(p, pos + 1)
    if p[pos] != 0x0A:  # its first value
        return None
    n, pos = _varint(p, pos + 1)
    end = pos + n
    first = pos
    fields = []
    t_start = t_end = -1
    while pos < end:
        k = p[pos]
        fields.append(k)
        n, pos = _varint(p, pos + 1)
        if k == 0x42:  # field 8: the tensor
            t_start, t_end = pos, pos + n
        elif k not in (0x0A, 0x4A):  # tag, metadata
            return None
        pos += n
    if t_start < 0 or pos != end:
        return None
    pos, code, shape, c_start, c_len = t_start, -1, [], -1, 0
    while pos < t_end:
        k = p[pos]
        if k == 0x08:
            code, pos = _varint(p, pos + 1)
        elif k == 0x12:  # TensorShapeProto{dim{size}}
            n, pos = _varint(p, pos + 1)
            s_end = pos + n
            while pos < s_end:
                if p[pos] != 0x12:
                    return None
                n, pos = _varint(p, pos + 1)
                d_end, size = pos + n, 0
                while pos < d_end:
                    if p[pos] == 0x08:
                        size, pos = _varint(p, pos + 1)
                    elif p[pos] == 0x12:  # the dimension's name (smdebug 1.0.34 writes one)
                        n, pos = _varint(p, pos + 1)
                        pos += n
                    else:
                        return None
                if pos != d_end:
                    return None
                if size >= 1 << 63:
                    return None
                shape.append(size)
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
    if count * dt.itemsize != c_len or c_start + c_len > len(p):
        return None
    arr = np.frombuffer(p, dtype=dt, count=count, offset=c_start).reshape(shape)
    template = None
    if fields[:2] == [0x0A, 0x42] and fields[2:] in ([], [0x4A]):
        template = _Template(bytes(p[first:c_start]), dt, tuple(shape), count, c_len)
    return arr, template


def decode_record_tensor(payload: bytes, templates: dict | None = None, key: Any = None) -> np.ndarray:
    """The tensor of a record's payload: by the template of ``key`` when it fits, else the short
    parser (learning the template), else the codec's general decoder."""
    if templates is not None:
        t = templates.get(key)
        if t is not None:
            arr = _with_template(payload, 0, len(payload), t)
            if arr is not None:
                return arr
    got = _fast_tensor(payload)
    if got is None:
        return decode_tensor_record(payload)
    arr, t = got
    if templates is not None and t is not None:
        templates[key] = t
    return arr


def _spans(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted (start, length) ranges merged into spans where the gaps are small."""
    out: list[list[int]] = []
    for start, length in sorted(ranges):
        if out and start <= out[-1][1] + _SPAN_SLACK:
            out[-1][1] = max(out[-1][1], start + length)
        else:
            out.append([start, start + length])
    return [(s, e - s) for s, e in out]


class StepReader:
    """Reads what rules need, batched; keeps the record templates it learns (one per tensor
    position of an index layout), so each later record costs a few byte comparisons."""

    def __init__(self) -> None:
        self._templates: dict = {}  # (index layout, position) -> _Template
        self._headers: dict = {}  # record length -> its 12 header bytes (payload length, its masked CRC)

    def _tensors(self, store: Any, picks: Any) -> list:
        """Tensors of ``picks`` (index file, position, tensor name), one ranged read per span of an
        event file; each payload checked against the CRC32C its index entry recorded."""
        by_key: dict = {}
        for i, (f, pos, _name) in enumerate(picks):
            start, length = f.location(pos, f.key)
            group = by_key.get(f.event_key)
            if group is None:
                group = by_key[f.event_key] = []
            group.append((start, length, i, (f.layout, pos)))
        keys = list(by_key)
        spans = [_spans([(s, n) for s, n, _, _ in by_key[k]]) for k in keys]
        results = store.read_ranges_many(list(zip(keys, spans)))
        out: list = [None] * len(picks)
        templates, headers = self._templates, self._headers
        for ekey, sp, res in zip(keys, spans, results):
            where = store.describe(ekey)
            if isinstance(res, ObjectNotFound):
                raise EventFileCorrupt(f"{where} is missing, but the trial's index points to it")
            if isinstance(res, Exception):
                raise res
            views = [memoryview(b) for b in res]
            for start, length, i, tkey in by_key[ekey]:
                j = len(sp) - 1
                while sp[j][0] > start:
                    j -= 1
                buf, off = res[j], start - sp[j][0]
                f, pos, name = picks[i]
                crc = f.crc(pos)
                if crc is not None and off + length <= len(buf):  # (a short buffer: unframe says truncated)
                    body = views[j][off + 12 : off + length - 4]
                    if crc32c(body) != crc:
                        check_payload(body, RecordCheck(f.step, name, crc, Where(store, f.key)),  # type: ignore[arg-type]
                                      where, start)
                # the framing: the 12-byte header (length and its CRC) is the same bytes for every
                # record of this length, and smdebug's footer is a constant; anything else goes
                # through the codec's unframe, which checks the payload's own CRC
                head = headers.get(length)
                if head is None:
                    n = _LEN.pack(length - RECORD_OVERHEAD)
                    head = headers[length] = n + masked_crc32c_bytes(n)
                end = off + length - 4
                t = templates.get(tkey)
                arr = None
                if t is not None and buf.startswith(head, off) and buf.startswith(EVENTS_FOOTER, end):
                    arr = _with_template(buf, off + 12, end, t)
                if arr is None:
                    payload, _ = unframe(buf, off, where)
                    try:
                        arr = decode_record_tensor(payload, templates, tkey)
                    except EventFileCorrupt as exc:
                        raise EventFileCorrupt(f"{where}: record at byte {start}: {exc}") from None
                out[i] = arr
        return out

    def fetch(self, trial: Any, keys: Any, reduction: Any = None, abs: Any = False, reductions_if_no_value: Any = False,
              compute: Any = True) -> list[StepValue]:
        """Read ``keys`` (ValueKey) in one batched read; what is not saved is left out.

        With ``reduction``, the saved reduction when there is one, else computed from the raw
        value (or, with ``compute=False``, the raw value, ``from_reduction`` False, for the caller
        to reduce). With ``reductions_if_no_value``, a tensor saved only as reductions gives those.
        """
        by_step = trial._index.by_step
        red_key = (reduction, bool(abs))
        picks = []  # (index file, position, tensor name)
        meta = []  # (name, step, worker, compute the reduction, is a reduction)
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
                if reduction is not None:
                    pos = reds.get(red_key)
                    if pos is not None:
                        picks.append((f, pos, name))
                        meta.append((name, step, w, False, True))
                    elif raw >= 0:
                        picks.append((f, raw, name))
                        meta.append((name, step, w, compute, False))
                elif raw >= 0:
                    picks.append((f, raw, name))
                    meta.append((name, step, w, False, False))
                elif reductions_if_no_value:
                    for pos in reds.values():
                        picks.append((f, pos, name))
                        meta.append((name, step, w, False, True))
        if not picks:
            return []
        try:
            got = self._tensors(trial.store, picks)
        except (EventFileCorrupt, IndexReaderException):
            # a consolidated object made before a step was rewritten: it then answers from the per-step files
            if not trial._stale_chunks([f for f, _pos, _name in picks]):
                raise
            got = self._tensors(trial.store, picks)
        out = []
        for (name, step, w, compute, is_red), v in zip(meta, got):
            if v.dtype.kind not in "biufc":
                v = numeric(v)
                if v is None:
                    continue
            if compute:
                if v.size == 0:
                    continue
                with np.errstate(all="ignore"):  # inf and NaN give NaN or inf, quietly
                    v = get_numpy_reduction(reduction, v, abs)
            out.append(StepValue(name, step, w, v, is_red))
        return out

    def step(self, trial: Any, step: Any, names: Any, *, reduction: Any = None, abs: Any = False, reductions_if_no_value: Any = False,
             compute: Any = True) -> list[StepValue]:
        """Every worker's value of each of ``names`` at global ``step``, in one batched read."""
        return self.fetch(trial, [ValueKey(n, step) for n in names], reduction, abs, reductions_if_no_value, compute)

    def values(self, trial: Any, keys: Any) -> list[StepValue]:
        """The raw values of ``keys`` (ValueKey), in one batched read."""
        return self.fetch(trial, keys)
