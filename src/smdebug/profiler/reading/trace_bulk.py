"""Framework timeline files read in bulk: many files' events decoded into columns by numpy, with
no Python object per event.

The timeline files written here (:class:`~smdebug.profiler.recording.timeline.TimelineWriter`) and by
1.0.34 are JSON arrays with one event a line, every complete event with the same keys in the same
order and the same separators (``{"name":"Net","ph":"X","pid":3,"ts":...}`` or 1.0.34's
``{"name": "Net", "pid": 3, "ph": "X", "ts": ...}``). A batch of such files is joined into one
buffer; the first complete event gives the templates (:mod:`~smdebug.profiler.reading.trace_lines`:
keys, value kinds, separators, with and without its ``args``) that every other line must follow
exactly, which numpy checks for all lines at once (:mod:`~smdebug.profiler.reading.byte_columns`:
each key, separator and ``"X"`` at its place, the integers parsed eight digits at a time, the
names grouped by their bytes and decoded once each). The ``args`` of the events that follow the
template are kept as its columns (:class:`~smdebug.profiler.reading.args_column.ArgsTable`) when
its values are integers, else as their bytes in the file; both give 1.0.34's dicts when asked.
The lines that do not follow a template must be metadata lines (``"ph": "M"``, a few a file),
decoded one by one by orjson, or events whose ``args`` have another shape, whose ``args`` orjson
decodes. The batch's events are written, sorted by file then start, into the rows of the read's
table (:mod:`~smdebug.profiler.reading.arena`) after the batch before; each file's events are a
range of its rows (:meth:`~smdebug.profiler.reading.frames.FrameworkEvents.rows`, views), which
:meth:`~smdebug.profiler.reading.frames.FrameworkEvents.concat` takes back as one range.

A file that does not fit (a backslash or a control character anywhere, another layout, another
key order, a non-integer number, ``B``/``E``/``i`` events, a truncated line...) is left to the
general reader (:func:`~smdebug.profiler.reading.trace_files.parse_trace_file`), which decodes it
with orjson, gives the same columns and reports what is wrong. An ``args`` that does not fit its
template is decoded by orjson on its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np
import orjson

from smdebug.profiler.reading.arena import Arena, Arenas
from smdebug.profiler.reading.args_column import NONE, ArgsTable
from smdebug.profiler.reading.byte_columns import JoinedLines, clean_text
from smdebug.profiler.reading.file_batch import FileBatch
from smdebug.profiler.reading.frames import FrameworkEvents
from smdebug.profiler.reading.trace_lines import (
    LineTemplate,
    Meta,
    Templates,
    int_or_minus_one,
    meta_line,
    step_of,
    templates,
)

__all__ = ["parse_trace_batch"]

_NL = 10
_NO_ARGS, _AS_BYTES, _IN_TABLE = 0, 1, 2  # how an event's args are kept
_SHARED = ("table", "names")  # _Piece's fields that are not a column
_MORE_SHAPES, _MANY = 3, 32  # other args shapes read in bulk: at most, and when that many events have one


def parse_trace_batch(
    files: FileBatch | list[bytes], node_ids: list[str], suffixes: list[str], arenas: Arenas | None = None
) -> list[FrameworkEvents | None]:
    """The events of each file of the batch (or of each file's bytes), or None for a file the bulk
    path does not read (the general reader must). Files are read together, with the templates of
    the first complete event; those that do not follow them are tried again together (joined
    anew), with the templates of the first of them. The events go into ``arenas`` (the read's,
    when it has more batches: see :mod:`~smdebug.profiler.reading.arena`)."""
    batch = files if isinstance(files, FileBatch) else FileBatch.of(files)
    arenas = arenas if arenas is not None else Arenas(len(batch))
    batch.finish()
    out: list[FrameworkEvents | None] = [None] * len(batch)
    todo = [k for k, e in enumerate(batch.ends) if e]
    b = JoinedLines.of_buffer(batch.buf, [batch.offsets[k] for k in todo], [batch.ends[k] for k in todo], batch.size)
    while todo:
        got = _parse(b, [node_ids[i] for i in todo], [suffixes[i] for i in todo], arenas)
        failed = [i for i, ev in zip(todo, got) if ev is None]
        for i, ev in zip(todo, got):
            out[i] = ev
        if len(failed) == len(todo):
            break
        todo = failed
        b = JoinedLines([batch.data(i) for i in todo], [batch.ends[i] for i in todo])
    return out


# ---------------------------------------------------------------------- one batch
@dataclass
class _Piece:
    """The events of a batch read with one template: their event-line indexes (``row``) and values."""

    row: np.ndarray
    ts: np.ndarray
    dur: np.ndarray
    ev_pid: np.ndarray  # the event's "pid": its phase in the file
    ev_tid: np.ndarray
    name: np.ndarray  # codes into ``names``
    step: np.ndarray
    pid: np.ndarray
    tid: np.ndarray
    args: np.ndarray  # int8: how the event's args are kept (_NO_ARGS, _AS_BYTES, _IN_TABLE)
    args_lo: np.ndarray  # _AS_BYTES: where they are in the joined bytes
    args_hi: np.ndarray
    table: dict[str, np.ndarray] = field(default_factory=dict)  # _IN_TABLE: the args template's values by key
    names: list[str] = field(default_factory=list)

    def select(self, idx: np.ndarray) -> _Piece:
        return _Piece(
            **{f.name: getattr(self, f.name)[idx] for f in fields(self) if f.name not in _SHARED},
            table={k: v[idx] for k, v in self.table.items()},
            names=self.names,
        )

    @classmethod
    def merge(cls, pieces: list[_Piece]) -> _Piece:
        """One piece, in line order."""
        if len(pieces) == 1:
            return pieces[0]
        keys = {k for p in pieces for k in p.table}
        at = np.cumsum([0] + [len(p.names) for p in pieces[:-1]]).tolist()  # each piece's names, one list
        merged = cls(
            **{
                f.name: np.concatenate([getattr(p, f.name) for p in pieces])
                for f in fields(cls)
                if f.name not in _SHARED
            },
            table={
                k: np.concatenate([p.table.get(k, np.zeros(len(p.row), dtype=np.int64)) for p in pieces]) for k in keys
            },
            names=[text for p in pieces for text in p.names],
        )
        merged.name = np.concatenate([p.name + a for p, a in zip(pieces, at)])
        return merged.select(np.argsort(merged.row, kind="stable"))


class _Lines:
    """The event lines of a batch; ``done``: those read as complete events, in ``pieces``."""

    def __init__(self, b: JoinedLines, line: np.ndarray, file: np.ndarray, start: np.ndarray, stop: np.ndarray):
        self.b, self.line, self.file, self.start, self.stop = b, line, file, start, stop
        self.done = np.zeros(len(line), dtype=bool)
        self.pieces: list[_Piece] = []

    def read(self, t: LineTemplate, rows: np.ndarray, whole: bool = True) -> tuple[_Piece, dict]:
        """Match ``rows`` against ``t`` (``whole``: the line is exactly ``t``); the rows that match
        are done, their values a new piece. Returns it with the args' values and ``"end"``."""
        ok, out = self.b.match(t, self.start[rows], self.stop[rows], whole, interned=("name",))
        hit = rows[ok]
        self.done[hit] = True
        n = len(hit)
        ev_pid = out["pid"][ok]
        ev_tid = out["tid"][ok] if "tid" in out else np.zeros(n, dtype=np.int64)
        zeros = np.zeros(n, dtype=np.int64)
        piece = _Piece(
            hit,
            out["ts"][ok],
            out["dur"][ok],
            ev_pid,
            ev_tid,
            out["name"][0][ok],
            np.full(n, -1, dtype=np.int64),
            ev_pid.copy(),
            ev_tid.copy(),
            np.full(n, _NO_ARGS, dtype=np.int8),
            zeros,
            zeros.copy(),
            names=out["name"][1],
        )
        self.pieces.append(piece)
        return piece, {
            k: (v[0][ok], v[1][ok]) if isinstance(v, tuple) else v[ok]
            for k, v in out.items()
            if k == "end" or k.startswith("args")
        }


def _parse(b: JoinedLines, node_ids: list[str], suffixes: list[str], arenas: Arenas) -> list[FrameworkEvents | None]:
    body = b.buf[: b.size]
    file_ok = np.ones(len(b.offsets), dtype=bool)
    nl = np.flatnonzero(body.view(np.int8) < 32)  # newlines, control characters, non-ASCII (< 0 as int8)
    if not (body[nl] == _NL).all():
        for k in range(len(file_ok)):
            file_ok[k] = clean_text(b.file_bytes(k))
        nl = nl[body[nl] == _NL]
    # lines: each file is "[", one event a line (",\n" between), "]"
    ls = np.concatenate(([0], nl[:-1] + 1))
    first = np.searchsorted(ls, b.offsets)
    last = np.append(first[1:], len(ls)) - 1
    is_event = np.ones(len(ls), dtype=bool)
    is_event[first] = is_event[last] = False
    lines = np.flatnonzero(is_event)
    ev_file = np.repeat(np.arange(len(first)), last - first - 1)  # each file's lines between its first and last
    start, nlpos = ls[lines], nl[lines]
    comma = b.byte(nlpos - 1) == ord(",")
    stop = nlpos - comma  # the end of the event's JSON object
    good = (comma != (lines == last[ev_file] - 1)) & (b.byte(start) == ord("{")) & (b.byte(stop - 1) == ord("}"))
    file_ok[ev_file[~good]] = False
    t = _first_templates(b, ev_file, start, stop, file_ok)
    if t is None:
        return [FrameworkEvents.empty() if ok and not np.any(ev_file == k) else None for k, ok in enumerate(file_ok)]
    ev = _Lines(b, lines, ev_file, start, stop)
    if t.full is not None:
        _args_from_template(b, t, *ev.read(t.full, np.arange(len(lines))))
    ev.read(t.bare, np.flatnonzero(~ev.done))
    left = _other_args_shapes(b, ev, t, file_ok)
    if len(left):
        _args_by_orjson(b, ev, *ev.read(t.head, left, whole=False), file_ok)
    meta = Meta()  # the lines left must be metadata lines
    other = np.flatnonzero(~ev.done & file_ok[ev_file])
    meta.read_lines(b, lines[other], ev_file[other], start[other], stop[other], file_ok)
    return _assemble(ev, t, meta, file_ok, node_ids, suffixes, arenas)


def _first_templates(
    b: JoinedLines, ev_file: np.ndarray, start: np.ndarray, stop: np.ndarray, file_ok: np.ndarray
) -> Templates | None:
    """The templates of the first complete event of the first file that has one (files whose first
    lines are neither metadata nor such an event are not for the bulk path)."""
    bounds = np.searchsorted(ev_file, np.arange(len(file_ok) + 1)).tolist()
    for f in range(len(file_ok)):
        for r in range(bounds[f], bounds[f + 1]):
            raw = bytes(b.big[int(start[r]) : int(stop[r])])
            t = templates(raw)
            if t is not None:
                return t
            if meta_line(raw) is None:
                file_ok[f] = False
                break
    return None


def _args_from_template(b: JoinedLines, t: Templates, piece: _Piece, out: dict) -> None:
    """Step, pid and thread id of the events read with the full template; their args are kept as
    the template's columns when its values are all integers, else as their bytes."""
    if t.table is not None:
        piece.args[:] = _IN_TABLE
        piece.table = {key: out["args." + key] for key in t.table.keys}
    else:
        piece.args[:], piece.args_lo, piece.args_hi = _AS_BYTES, out["args"], out["end"] - 1
    if "args.pid" in out:
        piece.pid = out["args.pid"]
    if "args.thread_id" in out:
        piece.tid = out["args.thread_id"]
    if "args.step_num" in out:
        step = out["args.step_num"]
        if isinstance(step, tuple):  # a string: int() of it, in bulk when it is only digits
            lo, hi = step
            step, n, plain = b.digits(lo, strict=False)
            plain &= lo + n == hi
            for i in np.flatnonzero(~plain).tolist():  # " 5", "+5", "5_0"...
                step[i] = step_of({"step_num": b.big[int(lo[i]) : int(hi[i])].decode()})
        piece.step = step


def _other_args_shapes(b: JoinedLines, ev: _Lines, t: Templates, file_ok: np.ndarray) -> np.ndarray:
    """Events whose args have another shape than the first event's (a job's first events often
    have no step yet): when many are left, the shape of the first of them is read in bulk too
    (its args kept as bytes), a few shapes at most. Returns the lines left that begin as events
    (``t.head``), for orjson."""
    for shape in range(_MORE_SHAPES + 1):
        rest = np.flatnonzero(~ev.done & file_ok[ev.file])
        ok, _ = b.match(t.head, ev.start[rest], ev.stop[rest])
        left = rest[ok]
        if len(left) < _MANY:
            break
        r = int(left[0])
        other = templates(bytes(b.big[int(ev.start[r]) : int(ev.stop[r])]))
        if other is None or other.full is None or other.bare.steps != t.bare.steps or shape == _MORE_SHAPES:
            break
        piece, out = ev.read(other.full, left)
        if not len(piece.row):
            break
        _args_from_template(b, replace(other, table=None), piece, out)
    return left[~ev.done[left]]


def _args_by_orjson(b: JoinedLines, ev: _Lines, piece: _Piece, out: dict[str, Any], file_ok: np.ndarray) -> None:
    """Step, pid and thread id of events whose args do not fit the template, from orjson."""
    files = ev.file[piece.row].tolist()
    for i, (f, lo, hi) in enumerate(zip(files, out["end"].tolist(), (ev.stop[piece.row] - 1).tolist())):
        try:
            args = orjson.loads(b.big[lo:hi])
        except orjson.JSONDecodeError:
            args = ()  # not JSON: the general reader reports it
        if args is not None and not isinstance(args, dict):
            file_ok[f] = False
            continue
        piece.args[i], piece.args_lo[i], piece.args_hi[i] = (_NO_ARGS if args is None else _AS_BYTES), lo, hi
        piece.step[i] = step_of(args)
        if args:
            piece.pid[i] = int_or_minus_one(args.get("pid", int(piece.ev_pid[i])))
            piece.tid[i] = int_or_minus_one(args.get("thread_id", int(piece.ev_tid[i])))


def _bases(fx: np.ndarray, line: np.ndarray, nfiles: int, meta: Meta) -> np.ndarray | int:
    """Each event's time base: the last ``start_time_since_epoch_in_micros`` before it in its file."""
    if not meta.base_line or not len(fx):
        return 0
    files = np.array(meta.base_file, dtype=np.int64)
    firsts = np.minimum(np.searchsorted(fx, files), len(fx) - 1)  # each of those files' first event
    before = (fx[firsts] != files) | (np.array(meta.base_line) < line[firsts])  # no event, or all after it
    if len(set(meta.base_file)) == len(files) and bool(before.all()):
        per_file = np.zeros(nfiles, dtype=np.int64)  # one base a file, before its events: the usual
        per_file[files] = meta.base_value
        return per_file[fx]
    j = np.searchsorted(np.array(meta.base_line, dtype=np.int64), line, side="right") - 1
    jc = np.maximum(j, 0)
    return np.where((j >= 0) & (files[jc] == fx), np.array(meta.base_value, dtype=np.int64)[jc], 0)


def _phases(fx: np.ndarray, line: np.ndarray, ev_pid: np.ndarray, nfiles: int, meta: Meta) -> tuple[np.ndarray, list]:
    """Each event's phase as codes into a list of names: the name of the latest ``process_name``
    line of its pid before it in its file ("Unknown" when there is none, or when that line has no
    name), as 1.0.34's parser names it. Lines are numbered across the batch, in file order, so the
    latest announcement of the pid before the event is found by one search over (pid, line)."""
    phases = ["Unknown", *meta.ann_names]
    codes = np.zeros(len(line), dtype=np.int64)
    if not len(meta.ann_file) or not len(line):
        return codes, phases
    pids = np.array(sorted(set(meta.ann_pid.tolist())), dtype=np.int64)
    span = int(max(int(meta.ann_line.max()), int(line.max()))) + 1
    a_rank = np.searchsorted(pids, meta.ann_pid)
    a_key = a_rank * span + meta.ann_line
    order = np.argsort(a_key, kind="stable")
    e_rank = np.minimum(np.searchsorted(pids, ev_pid), len(pids) - 1)
    pos = np.searchsorted(a_key[order], e_rank * span + line, side="left") - 1  # the last one before
    j = order[np.maximum(pos, 0)]
    ok = (pids[e_rank] == ev_pid) & (pos >= 0) & (a_rank[j] == e_rank) & (meta.ann_file[j] == fx)
    return np.where(ok, meta.ann_name[j] + 1, 0), phases


def _args_into(
    ev: _Lines,
    t: Templates,
    piece: _Piece,
    fx: np.ndarray,
    put: Callable[[np.ndarray, np.ndarray], None],
    arena: Arena,
    cut: slice,
) -> None:
    """The batch's args into the arena: the template's columns as one ArgsTable (a row's ``lo`` is
    its row in it), the others as bytes of their file (kept only for the files that have such
    rows; the joined copy is dropped)."""
    kind = piece.args
    n = len(kind)
    if t.table is not None and bool((kind == _IN_TABLE).all()):  # the usual: all in the table
        arena.source[cut] = len(arena.buffers)
        arena.buffers.append(ArgsTable(t.table.keys, t.table.text, [piece.table[k] for k in t.table.keys]))
        put(arena.lo[cut], np.arange(n, dtype=np.int64))
        arena.hi[cut] = 0
        return
    as_bytes = kind == _AS_BYTES
    files = set(
        np.flatnonzero(np.bincount(fx[as_bytes], minlength=len(ev.b.offsets))).tolist()
    )  # (np.unique imports numpy.ma)
    first = len(arena.buffers)
    arena.buffers.extend(ev.b.file_bytes(k) if k in files else None for k in range(len(ev.b.offsets)))
    base = np.array(ev.b.offsets, dtype=np.int64)[fx]
    source = np.where(as_bytes, fx + first, NONE).astype(np.int32)
    lo, hi = piece.args_lo - base, piece.args_hi - base
    if t.table is not None and bool(np.any(kind == _IN_TABLE)):
        in_table = kind == _IN_TABLE
        source[in_table] = len(arena.buffers)
        lo[in_table] = np.arange(n)[in_table]
        arena.buffers.append(ArgsTable(t.table.keys, t.table.text, [piece.table[k] for k in t.table.keys]))
    put(arena.source[cut], source)
    put(arena.lo[cut], lo)
    put(arena.hi[cut], hi)


def _by_file_then_start(fx: np.ndarray, ts: np.ndarray) -> np.ndarray:
    """The stable order by file, then start, of rows whose files ``fx`` are sorted (events are
    written child before parent): one stable argsort of ``file * span + start`` when that fits in
    int64 (timsort: fast on the sorted runs), else a lexsort."""
    low, span = int(ts.min()), int(ts.max()) - int(ts.min()) + 1
    if int(fx[-1]) * span + span < 1 << 62:
        return np.argsort(fx * span + (ts - low), kind="stable")
    return np.lexsort((ts, fx))


def _assemble(
    ev: _Lines,
    t: Templates,
    meta: Meta,
    file_ok: np.ndarray,
    node_ids: list[str],
    suffixes: list[str],
    arenas: Arenas,
) -> list[FrameworkEvents | None]:
    pieces = [p for p in ev.pieces if len(p.row)]
    nfiles = len(file_ok)
    if pieces:
        piece = _Piece.merge(pieces)
        fx = ev.file[piece.row]
        if not file_ok.all():  # files found wrong late (in their args) drop out here
            piece = piece.select(file_ok[fx])
            fx = ev.file[piece.row]
    if not pieces or not len(fx):
        return [FrameworkEvents.empty() if ok else None for ok in file_ok.tolist()]
    n = len(fx)
    line = ev.line[piece.row]
    ts = piece.ts + _bases(fx, line, nfiles, meta)
    phase_code, phases = _phases(fx, line, piece.ev_pid, nfiles, meta)
    order = None
    if n > 1 and bool(np.any((ts[1:] < ts[:-1]) & (fx[1:] == fx[:-1]))):
        order = _by_file_then_start(fx, ts)

    def put(dst: np.ndarray, src: np.ndarray) -> None:  # the rows in the table's order
        if order is None:
            dst[:] = src
        else:
            np.take(src, order, out=dst)

    arena, at = arenas.room(n, nfiles)
    cut = slice(at, at + n)
    ints = arena.ints
    for column, values in (
        ("start_us", ts),
        ("end_us", ts + piece.dur),
        ("step", piece.step),
        ("pid", piece.pid),
        ("tid", piece.tid),
        ("phase_pid", piece.ev_pid),
    ):
        put(ints[column][cut], values)
    put(arena.codes["phase"][cut], arena.vocab["phase"].codes(phases)[phase_code])
    put(arena.codes["name"][cut], arena.vocab["name"].codes(piece.names)[piece.name])
    counts = np.bincount(fx, minlength=nfiles)  # fx is sorted: each file's rows are together
    arena.codes["node_id"][cut] = np.repeat(arena.vocab["node_id"].codes(node_ids), counts)
    arena.codes["file_suffix"][cut] = np.repeat(arena.vocab["file_suffix"].codes(suffixes), counts)
    _args_into(ev, t, piece, fx, put, arena, cut)
    bounds = (at + np.concatenate(([0], np.cumsum(counts)))).tolist()
    return [
        None
        if not fine
        else FrameworkEvents.empty()
        if bounds[k] == bounds[k + 1]
        else arena.table.rows(bounds[k], bounds[k + 1])
        for k, fine in enumerate(file_ok.tolist())
    ]
