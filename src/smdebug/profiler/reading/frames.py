"""Columnar profiler data: what the readers produce and what the profiler rules, the timeline and
the report consume.

Everything here is plain numpy (no pandas): times are absolute microseconds since the epoch
(int64), as in 1.0.34's files after decoding. A reader builds these once per file and caches
them; windowing is ``np.searchsorted`` on sorted times, so a rule over a 24-hour profile touches
only the rows of its window.

* :class:`Series` — one system metric of one node: ``(node_id, type, name, dimension)`` with its
  samples, sorted by time (e.g. ``("algo-1", "cpu", "cpu3", "CPUUtilization")``).
* :class:`FrameworkEvents` — framework trace events (complete events: a start and an end), one
  row each, sorted by ``start_us``. ``phase`` is the process name of 1.0.34's files (its
  ``event_phase``: ``"Step:ModeKeys.TRAIN"``, ``"Forward"``, ``"DataLoaderIter"``...), ``name``
  the event's name, ``step`` the ``args.step_num`` as int (-1 when absent).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from smdebug.profiler.reading.args_column import ArgsColumn, concat_args, take_args

__all__ = ["Series", "FrameworkEvents", "StepSpans", "phase_mask", "Vocab", "Coded"]

_INT_COLUMNS = ("start_us", "end_us", "step", "pid", "tid")  # FrameworkEvents' int64 columns (and phase_pid)
_OBJECT_COLUMNS = ("phase", "name", "node_id")  # its str columns (and file_suffix)


def phase_mask(phases: np.ndarray, keep: Callable[[str], bool]) -> np.ndarray:
    """``keep(phase)`` of each row of ``phases`` (framework events' phase column), asked once per
    distinct phase (a few) rather than once per event."""
    mask = np.zeros(len(phases), dtype=bool)
    for p in set(phases.tolist()):
        if keep(p):
            mask |= phases == p
    return mask


def _window(times: np.ndarray, start_us: int | None, end_us: int | None) -> slice:
    lo = 0 if start_us is None else int(np.searchsorted(times, start_us, side="left"))
    hi = len(times) if end_us is None else int(np.searchsorted(times, end_us, side="right"))
    return slice(lo, hi)


@dataclass(frozen=True)
class Series:
    """One system metric of one node, sorted by ``timestamp_us`` (int64) with ``value`` (float64)."""

    node_id: str
    type: str  # "cpu", "gpu", "memory", "i/o", "network" (1.0.34's Type)
    name: str  # "cpu0".., "gpu0".., or the metric's own name for device-less rows
    dimension: str  # "CPUUtilization", "GPUUtilization", "GPUMemoryUtilization", "MemoryUsedPercent"...
    timestamp_us: np.ndarray
    value: np.ndarray
    # the file's own Timestamp (epoch seconds, float64) when read from a file: 1.0.34's
    # ProfilerSystemEvent.timestamp, kept so that the compatibility API returns it unchanged
    timestamp_s: np.ndarray | None = None

    def window(self, start_us: int | None = None, end_us: int | None = None) -> Series:
        """The samples with ``start_us <= timestamp_us <= end_us`` (inclusive, as 1.0.34)."""
        s = _window(self.timestamp_us, start_us, end_us)
        return Series(
            self.node_id,
            self.type,
            self.name,
            self.dimension,
            self.timestamp_us[s],
            self.value[s],
            None if self.timestamp_s is None else self.timestamp_s[s],
        )

    @property
    def key(self) -> tuple[str, str, str, str]:
        """``(node_id, type, name, dimension)``: what names this series."""
        return (self.node_id, self.type, self.name, self.dimension)

    def __len__(self) -> int:
        return len(self.timestamp_us)


def _none() -> None:
    return None


@dataclass(frozen=True)
class FrameworkEvents:
    """Framework events, one row each, sorted by ``start_us``. All columns have the same length."""

    phase: np.ndarray  # str (object array): the process name, 1.0.34's event_phase
    name: np.ndarray  # str (object array): the event name
    start_us: np.ndarray  # int64
    end_us: np.ndarray  # int64
    step: np.ndarray  # int64, -1 when the event names no step
    node_id: np.ndarray  # str (object array)
    pid: np.ndarray  # int64
    tid: np.ndarray  # int64
    # dict | None per row (kept for the compatibility API): a list, or an ArgsColumn (a read-only
    # sequence that decodes each row when asked, as the bulk reader gives); empty: no args kept.
    # Typed Any: both are read with len(), iteration and [i] (an int or a numpy integer).
    args: Any = field(default_factory=list)
    # where a row came from, for 1.0.34's TraceEvent (None when unknown): the pid of its phase in
    # the file (the event's "pid") and the file's suffix ("pythontimeline.json", "model_timeline.json"...)
    # (defaults from a factory: a default value would also be a class attribute, which a range made
    # by rows() would read instead of its own column, made by __getattr__)
    phase_pid: np.ndarray | None = field(default_factory=_none)  # int64
    file_suffix: np.ndarray | None = field(default_factory=_none)  # str (object array)

    def __len__(self) -> int:
        span = self.__dict__.get("_rows_of")
        return len(self.start_us) if span is None else span[2] - span[1]

    @property
    def duration_us(self) -> np.ndarray:
        return self.end_us - self.start_us

    @classmethod
    def empty(cls) -> FrameworkEvents:
        obj = np.empty(0, dtype=object)
        i64 = np.empty(0, dtype=np.int64)
        return cls(obj, obj.copy(), i64, i64.copy(), i64.copy(), obj.copy(), i64.copy(), i64.copy(), [])

    @classmethod
    def concat(cls, parts: list[FrameworkEvents]) -> FrameworkEvents:
        """The rows of all ``parts``, sorted by ``start_us`` (stable: equal starts keep their order).
        Consecutive parts that are adjacent :meth:`rows` of one table (the files of a batch of the
        bulk reader) are taken as one slice of it, not copied part by part."""
        parts = [p for p in parts if len(p)]
        if not parts:
            return cls.empty()
        if len(parts) == 1:
            return parts[0]
        runs: list[list] = []  # [table, start, stop] of adjacent row ranges, or [part, None, None]
        for p in parts:
            span = p.__dict__.get("_rows_of")
            if span is not None and runs and runs[-1][0] is span[0] and runs[-1][2] == span[1]:
                runs[-1][2] = span[2]
            else:
                runs.append(list(span) if span is not None else [p, None, None])
        joined = [p if lo is None else p.rows(lo, hi) for p, lo, hi in runs]
        merged = joined[0] if len(joined) == 1 else cls._join(joined)
        if len(merged.start_us) > 1 and bool(np.any(merged.start_us[1:] < merged.start_us[:-1])):
            return merged.take(np.argsort(merged.start_us, kind="stable"))
        return merged

    @classmethod
    def _join(cls, parts: list[FrameworkEvents]) -> FrameworkEvents:
        """The rows of ``parts`` one after the other. The integer columns are rows of one 2-D
        block, and so are the object columns: a large block is eligible for the kernel's huge
        pages (numpy asks for them from 4 MiB on), which a million-row result faults in by the
        dozen instead of 4 KiB at a time."""
        pieces = {f: [getattr(p, f) for p in parts] for f in _INT_COLUMNS + _OBJECT_COLUMNS}
        for f, fill, dtype in (("phase_pid", -1, np.int64), ("file_suffix", None, object)):
            if any(getattr(p, f) is not None for p in parts):
                pieces[f] = [
                    np.full(len(p), fill, dtype=dtype) if getattr(p, f) is None else getattr(p, f) for p in parts
                ]
        n = sum(len(p) for p in parts)
        cols: dict = {}
        for wanted, dtype in ((_INT_COLUMNS + ("phase_pid",), np.int64), (_OBJECT_COLUMNS + ("file_suffix",), object)):
            names = [f for f in wanted if f in pieces]
            if all(a.dtype == dtype for f in names for a in pieces[f]):
                block = np.empty((len(names), n), dtype=dtype)
                for row, f in zip(block, names):
                    cols[f] = np.concatenate(pieces[f], out=row)
            else:  # (columns of another integer type: each its own array, as numpy promotes them)
                cols.update({f: np.concatenate(pieces[f]) for f in names})
        return cls(args=concat_args([p.args for p in parts], [len(p) for p in parts]), **cols)

    def rows(self, start: int, stop: int) -> FrameworkEvents:
        """Rows ``start`` to ``stop`` (views, no copy), in their order; :meth:`concat` takes
        adjacent ranges of one table back as one range."""
        start, stop, _ = slice(start, stop).indices(len(self))
        stop = max(start, stop)
        table, at = self.__dict__.get("_rows_of", (self, 0, 0))[:2]
        if table is not self:  # a range of a range: a range of the table itself
            return table.rows(start + at, stop + at)
        out = object.__new__(FrameworkEvents)  # its columns sliced when first read (__getattr__)
        out.__dict__["_rows_of"] = (self, start, stop)  # not a field: replace() and take() drop it
        return out

    def __getattr__(self, name: str) -> Any:  # a column: an array, or the args (typed Any above)
        """A column made when it is first read: of a range made by :meth:`rows`, from its table
        (the bulk reader makes a range per file, and a query over many files reads none of them:
        :meth:`concat` takes the ranges back as one); of a table whose str columns are kept as
        codes (:class:`Coded`, as the bulk reader's arena keeps them), from the codes."""
        d = self.__dict__
        span = d.get("_rows_of")
        if name not in _FIELDS or (span is None and name not in d.get("_coded", ())):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        value = d["_coded"][name].values() if span is None else span[0]._column(name, span[1], span[2])
        d[name] = value
        return value

    def _column(self, name: str, start: int, stop: int) -> Any:  # (as __getattr__)
        """Rows ``start`` to ``stop`` of column ``name`` (views, but for coded columns)."""
        coded = self.__dict__.get("_coded")
        if coded is not None and name in coded and name not in self.__dict__:
            return coded[name].values(start, stop)
        col = getattr(self, name)
        if name == "args":
            return col.rows(start, stop) if isinstance(col, ArgsColumn) else col[start:stop]
        return None if col is None else col[start:stop]

    def take(self, index: np.ndarray) -> FrameworkEvents:
        """The rows at ``index`` (an int array or a boolean mask), order kept."""
        idx = np.flatnonzero(index) if index.dtype == bool else index
        return FrameworkEvents(
            self.phase[idx],
            self.name[idx],
            self.start_us[idx],
            self.end_us[idx],
            self.step[idx],
            self.node_id[idx],
            self.pid[idx],
            self.tid[idx],
            take_args(self.args, idx),
            None if self.phase_pid is None else self.phase_pid[idx],
            None if self.file_suffix is None else self.file_suffix[idx],
        )

    def overlapping(self, start_us: int | None = None, end_us: int | None = None) -> FrameworkEvents:
        """The events that overlap ``[start_us, end_us]`` inclusively (1.0.34's semantics)."""
        mask = np.ones(len(self), dtype=bool)
        if start_us is not None:
            mask &= self.end_us >= start_us
        if end_us is not None:
            mask &= self.start_us <= end_us
        return self if bool(mask.all()) else self.take(mask)  # all of them: no copy

    def _prefix_mask(self, prefix: str) -> np.ndarray:
        return phase_mask(self.phase, lambda p: str(p).startswith(prefix))

    def last_end_of_phase(self, prefix: str) -> int | None:
        """The latest end of the events whose phase starts with ``prefix`` (None: no such event)."""
        mask = self._prefix_mask(prefix)
        return int(self.end_us[mask].max()) if mask.any() else None

    def of_phase(self, prefix: str) -> FrameworkEvents:
        """The events whose phase (process name) starts with ``prefix``."""
        return self.take(self._prefix_mask(prefix))


_FIELDS = frozenset(f.name for f in dataclasses.fields(FrameworkEvents))


class Vocab:
    """Distinct strings, each with a code (its index), for :class:`Coded` columns."""

    def __init__(self) -> None:
        self._code: dict[str, int] = {}
        self._objects = np.empty(0, dtype=object)

    def codes(self, texts: list[str]) -> np.ndarray:
        """The codes of ``texts`` (int32), new ones added."""
        code = self._code
        return np.array([code.setdefault(t, len(code)) for t in texts], dtype=np.int32)

    def objects(self) -> np.ndarray:
        """The strings by code, as an object array."""
        if len(self._objects) != len(self._code):
            self._objects = np.array(list(self._code), dtype=object)
        return self._objects


@dataclass(frozen=True)
class Coded:
    """A str column kept as codes into a :class:`Vocab`."""

    codes: np.ndarray
    vocab: Vocab

    def values(self, start: int | None = None, stop: int | None = None) -> np.ndarray:
        return self.vocab.objects()[self.codes[start:stop]]


@dataclass(frozen=True)
class StepSpans:
    """The training steps of one mode: one row per (node, step), sorted by ``start_us``."""

    mode: str  # "TRAIN", "EVAL", "PREDICT", "GLOBAL"
    step: np.ndarray  # int64
    start_us: np.ndarray  # int64
    end_us: np.ndarray  # int64
    node_id: np.ndarray  # str (object array)

    def __len__(self) -> int:
        return len(self.step)

    @property
    def duration_us(self) -> np.ndarray:
        return self.end_us - self.start_us

    @classmethod
    def from_events(cls, events: FrameworkEvents, mode: str = "TRAIN") -> StepSpans:
        """The ``Step:ModeKeys.<mode>`` events of ``events`` as spans."""
        sel = events.take(np.array([p == f"Step:ModeKeys.{mode}" for p in events.phase], dtype=bool))
        return cls(mode, sel.step, sel.start_us, sel.end_us, sel.node_id)
