"""ProfileFolder: a job's profiler folder (local or ``s3://``) read into columns, the reading
room's engine: :class:`smdebug.profiler.trial.ProfilerTrial` (what ``create_trial(path,
profiler=True)`` returns, and what the rules, views and CLI read) is one, and 1.0.34's readers
(:mod:`smdebug.profiler.metrics_reader_base`) read through one.

::

    t = ProfileFolder("/opt/ml/output/profiler")         # or s3://bucket/job/profiler-output
    t.system_series(type="cpu", dimension="CPUUtilization")   # list[Series], one per core and node
    t.framework_events(start_us, end_us)                  # FrameworkEvents overlapping the window
    t.steps("TRAIN")                                       # StepSpans
    t.refresh()                                            # pick up files written since

Files are listed once at construction and again at :meth:`refresh`; each file is parsed the
first time a query needs it and kept (a local file is parsed again when its size or modification
time changed; on object storage the newest system file of each node, the only one still growing,
is read again at refresh). A window query parses only the files whose names can hold rows of the
window: system files are named by their minute, framework files by their last event's end
(1.0.34's layout), with 1.0.34's 3-minute margin for events logged out of order. Framework files
are parsed together, in bulk (:mod:`~smdebug.profiler.reading.trace_bulk`); when queries walk
through the run window after window, as a rule does, the files after the window are parsed along
(twice as many each time, up to ``AHEAD_FILES``), so that the walk costs a few large batches.

Nothing here sleeps or waits: a folder without profiler data gives empty results, and
:attr:`first_timestamp` is None until data exists. A timeline still being written
(``framework/<node>_pythontimeline.json.tmp``) is not read, as in 1.0.34: its events appear when
the writer rotates or closes it (every 60 s by default). Not read yet: the TF profiler's
``trace.json.gz`` files and the Python profiler's stats (``framework/<framework>/cprofile/...``).
"""

from __future__ import annotations

import bisect
import functools
import logging
import os
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Literal, cast, overload

import numpy as np

from smdebug.exceptions import ObjectNotFound
from smdebug.profiler.locations import END_MARKER
from smdebug.profiler.reading.arena import Arenas
from smdebug.profiler.reading.file_batch import FileBatch
from smdebug.profiler.reading.file_list import File as _File
from smdebug.profiler.reading.file_list import FileList
from smdebug.profiler.reading.frames import FrameworkEvents, Series, StepSpans
from smdebug.profiler.reading.system_files import SystemChunk, parse_system_file, system_file_info
from smdebug.profiler.reading.trace_bulk import parse_trace_batch
from smdebug.profiler.reading.trace_files import node_id_from_trace_name, parse_trace_file, trace_file_info
from smdebug.storage import is_remote, open_store
from smdebug.storage.local import LocalStore  # (see below)

# LocalStore is imported with this module, not at the first ProfileFolder (open_store imports it
# lazily, for the other users of smdebug.storage): a local folder is what a trial reads most,
# and the store module needs nothing that is not loaded already (os and the storage base).

__all__ = ["ProfileFolder", "MARGIN_US", "MINUTE_US"]

logger = logging.getLogger("smdebug")

MINUTE_US = 60_000_000
MARGIN_US = 3 * MINUTE_US  # 1.0.34's TIME_BUFFER_DEFAULT
STEP_LOOKBACK_FILES = 4  # a node's newest framework files searched for its newest step event
AHEAD_FILES = 64  # at most, parsed ahead of a rule walking through the run
BATCH_BYTES = 4 << 20  # framework files read together, about (larger batches run out of the caches)


_OPEN_TIMELINE = re.compile(r"framework/[^/]+_[a-z_]*timeline\.json\.tmp")
_BASE = re.compile(rb'"start_time_since_epoch_in_micros"\s*:\s*(\d+)')


@functools.lru_cache(maxsize=4096)  # the same names in every query
def _natural(text: str) -> tuple[int | str, ...]:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text))


class ProfileFolder:
    """The profiler data under ``path`` (``<root>/system/...`` and ``<root>/framework/...``)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        name: str | None = None,
        output_dir: str | None = None,
        *,
        streams: Iterable[str] = ("system", "framework"),
    ) -> None:
        path = os.fspath(path) if hasattr(path, "__fspath__") else str(path)
        path = path.strip()
        if not is_remote(path):
            path = os.path.expanduser(path)
        self.path = path
        self.name = name if name is not None else os.path.basename(path.rstrip("/"))
        self.output_dir = output_dir
        self._store = open_store(path)
        self._streams = tuple(streams)
        self._system = FileList(system_file_info)
        self._framework = FileList(trace_file_info)
        self._first: int | None = None
        self._read_on: dict[
            str, tuple[int, int]
        ] = {}  # node -> (index a sequential query reads next, files read ahead)
        self._batch = FileBatch()  # framework files are read into its buffer, reused from batch to batch
        self._open_timelines: dict[str, str] = {}  # node -> its timeline being written (framework/<node>_*.tmp)
        self._open_bases: dict[str, int | None] = {}  # such a file's key -> its time base (its first line)
        self.refresh()
        if not self.has_data():
            if not is_remote(path) and not os.path.exists(path):
                logger.warning("smdebug: profiler: %s does not exist: no profiler data (yet)", path)
            else:
                logger.info("smdebug: profiler: no profiler files under %s (yet)", path)

    # ------------------------------------------------------------------ listing
    def refresh(self) -> None:
        """List the files again: new files become visible; local files that changed since they
        were parsed (size or mtime) and, on object storage, each node's newest system file are
        parsed again when next needed."""
        listed = {stream: self._store.list(stream) for stream in self._streams}
        present = {k for keys in listed.values() for k in keys} if len(self._system) or len(self._framework) else None
        self._system.update(listed.get("system", ()), present)
        self._framework.update(listed.get("framework", ()), present)
        self._open_timelines = {
            node_id_from_trace_name("0_" + k.rsplit("/", 1)[-1]): k
            for k in listed.get("framework", ())
            if _OPEN_TIMELINE.fullmatch(k)
        }
        if self._store.remote:
            for key in self._system.first_per_node(newest=True):
                if key in self._system.opened:
                    self._system.opened[key].parsed = None
        else:
            for files in (self._system, self._framework):
                for f in files.opened.values():
                    if f.parsed is not None and self._stamp(f.key) != f.stamp:
                        f.parsed = None
                        f.stamp = None
        self._first = None

    def _stamp(self, key: str) -> tuple[int, int] | None:
        try:
            st = os.stat(self._store.describe(key))
        except OSError:
            return None
        return (st.st_size, st.st_mtime_ns)

    def _read(self, f: _File) -> bytes:
        try:
            if isinstance(self._store, LocalStore):  # the stamp from the open file (no second path lookup)
                data, f.stamp = self._store.read_stamped(f.key)
                return data
            f.stamp = None if self._store.remote else self._stamp(f.key)
            return self._store.read(f.key)
        except ObjectNotFound:  # removed since it was listed
            f.stamp = None
            logger.warning("smdebug: profiler: %s was listed but is gone", self._store.describe(f.key))
            return b""

    def _read_into(self, f: _File, reserve: Callable[[int], memoryview]) -> int:
        """:meth:`_read` into the memory ``reserve(n)`` gives (a local file with no copy): the length."""
        if isinstance(self._store, LocalStore):
            try:
                n, f.stamp = self._store.read_into(f.key, reserve)
                return n
            except ObjectNotFound:
                pass  # (_read says so)
        data = self._read(f)
        with reserve(len(data)) as view:
            view[:] = data
        return len(data)

    @overload
    def _load(self, f: _File, framework: Literal[True]) -> FrameworkEvents: ...
    @overload
    def _load(self, f: _File, framework: Literal[False]) -> SystemChunk: ...
    def _load(self, f: _File, framework: bool) -> SystemChunk | FrameworkEvents:
        if framework:
            return self._load_framework([f])[0]
        if f.parsed is None:
            data = self._read(f)
            f.parsed = parse_system_file(data, self._store.describe(f.key))
        return cast(SystemChunk, f.parsed)

    def _load_framework(self, files: list[_File], ahead: Sequence[_File] = ()) -> list[FrameworkEvents]:
        """The events of ``files``: those not parsed yet are read together, with the ``ahead``
        files (parsed now as they are likely wanted next: the bulk reader's cost is mostly per
        batch), in batches of about ``BATCH_BYTES``. A file of ``ahead`` that only the general
        reader reads is left for when it is wanted (so that its error, if any, comes then)."""
        wanted = [(f, True) for f in files if f.parsed is None] + [(f, False) for f in ahead if f.parsed is None]
        arenas = Arenas(len(wanted))  # the batches' events, one after the other (no copy to join them)
        todo = iter(wanted)
        batch = self._batch
        while True:
            batch.clear()
            opened: list[_File] = []
            needed: list[bool] = []
            for f, need in todo:
                if not batch.add(functools.partial(self._read_into, f)):  # empty: not added
                    f.parsed = FrameworkEvents.empty()
                    continue
                opened.append(f)
                needed.append(need)
                if batch.read >= BATCH_BYTES:
                    break
            if not opened:
                break
            parsed = parse_trace_batch(batch, [f.node_id for f in opened], [f.suffix for f in opened], arenas)
            for k, (f, ev, need) in enumerate(zip(opened, parsed, needed)):
                if ev is None and need:
                    ev = parse_trace_file(batch.data(k), self._store.describe(f.key), f.node_id, f.suffix)
                f.parsed = ev
        return [cast(FrameworkEvents, f.parsed) for f in files]

    def _ahead(self, files: list[_File], suffixes: Iterable[str] | None) -> list[_File]:
        """The files to parse along with ``files`` (those of a query): when a query reads on from
        where the one before stopped (a rule walking through the run), the next files of the node,
        twice as many as the time before (at most ``AHEAD_FILES``); else none."""
        out: list[_File] = []
        ends = None if suffixes is None else tuple(suffixes)
        listing = self._framework
        for node, (_, node_keys) in listing.by_node().items():
            todo = [f for f in files if f.node_id == node and f.parsed is None]
            if not todo:
                continue
            first, last = listing.position(todo[0].key), listing.position(todo[-1].key)
            expected, before = self._read_on.get(node, (-1, 0))
            count = min(max(2 * before, len(todo)), AHEAD_FILES) if first == expected else 0
            more = [
                f
                for f in listing.files(node_keys[last + 1 : last + 1 + count])
                if f.parsed is None and (ends is None or f.key.endswith(ends))
            ]
            out += more
            self._read_on[node] = (last + 1 + count, count)
        return out

    # ------------------------------------------------------------------ system metrics
    def _system_files(self, start_us: int | None, end_us: int | None, node_id: str | None = None) -> list[_File]:
        """The files of ``node_id`` (None: all) whose minute is within ``MARGIN_US`` of the window,
        or the minute before it (the file of that minute holds the minute's samples), by (minute, key)."""
        out: list[str] = []
        for node, (times, keys) in self._system.by_node().items():
            if node_id is None or node == node_id:
                lo = 0 if start_us is None else bisect.bisect_left(times, start_us - MINUTE_US - MARGIN_US)
                hi = len(times) if end_us is None else bisect.bisect_right(times, end_us + MARGIN_US)
                out += keys[lo:hi]
        time = self._system.time
        out.sort(key=lambda k: (time[k], k))
        return self._system.files(out)

    def system_series(
        self,
        start_us: int | None = None,
        end_us: int | None = None,
        *,
        type: str | None = None,
        dimension: str | None = None,
        node_id: str | None = None,
    ) -> list[Series]:
        """The system metrics with ``start_us <= timestamp_us <= end_us`` (None: unbounded), one
        :class:`Series` per ``(node_id, type, name, dimension)``, optionally only of one ``type``
        (``"cpu"``, ``"gpu"``...), ``dimension`` or ``node_id``; sorted by node, type, name
        (``cpu2`` before ``cpu10``) and dimension. Series with no sample in the window are left out."""
        pieces: dict[tuple, list] = {}  # key -> the times and values of its pieces, one after the other
        for f in self._system_files(start_us, end_us, node_id):
            chunk: SystemChunk = self._load(f, framework=False)
            for key, ts, val in zip(chunk.keys, chunk.timestamp_s, chunk.value):
                if (
                    (node_id is not None and key[0] != node_id)
                    or (type is not None and key[1] != type)
                    or (dimension is not None and key[3] != dimension)
                ):
                    continue
                parts = pieces.setdefault(key, [])
                parts.append(ts)
                parts.append(val)
        out = []
        for key, parts in pieces.items():
            # (a file's pieces may be strided views: a series' arrays are contiguous, as before)
            ts = np.concatenate(parts[0::2]) if len(parts) > 2 else np.ascontiguousarray(parts[0])
            val = np.concatenate(parts[1::2]) if len(parts) > 2 else np.ascontiguousarray(parts[1])
            if len(ts) > 1 and bool(np.any(ts[1:] < ts[:-1])):
                order = np.argsort(ts, kind="stable")
                ts, val = ts[order], val[order]
            series = Series(key[0], key[1], key[2], key[3], (ts * 1e6).astype(np.int64), val, ts)
            if start_us is not None or end_us is not None:
                series = series.window(start_us, end_us)
            if len(series):
                out.append(series)
        out.sort(key=lambda s: (_natural(s.node_id), s.type, _natural(s.name), s.dimension))
        return out

    # ------------------------------------------------------------------ framework events
    def _framework_files(
        self, start_us: int | None, end_us: int | None, suffixes: Iterable[str] | None = None
    ) -> list[_File]:
        ends = None if suffixes is None else tuple(suffixes)
        out = []
        for times, keys in self._framework.by_node().values():
            # files that end before the window hold none of its events
            first = 0 if start_us is None else bisect.bisect_left(times, start_us - MARGIN_US)
            for i in range(first, len(keys)):
                if ends is not None and not keys[i].endswith(ends):
                    continue
                out.append(keys[i])
                if end_us is not None and times[i] > end_us + MARGIN_US:
                    break  # later files hold events written after this one closed
        return self._framework.files(out)

    def framework_events(
        self, start_us: int | None = None, end_us: int | None = None, *, suffixes: Sequence[str] | None = None
    ) -> FrameworkEvents:
        """The framework events that overlap ``[start_us, end_us]`` inclusively (1.0.34's
        semantics: ``end >= start_us and start <= end_us``), all nodes, sorted by start.
        ``suffixes`` (e.g. ``["pythontimeline.json"]``) reads only the files whose names end so."""
        files = self._framework_files(start_us, end_us, suffixes)
        parts = self._load_framework(files, self._ahead(files, suffixes))
        events = FrameworkEvents.concat(parts)
        if start_us is not None or end_us is not None:
            events = events.overlapping(start_us, end_us)
        return events

    def steps(self, mode: str = "TRAIN") -> StepSpans:
        """The ``Step:ModeKeys.<mode>`` events of all nodes as spans, sorted by start."""
        return StepSpans.from_events(self.framework_events(), mode.upper())

    # ------------------------------------------------------------------ time bounds
    @property
    def first_timestamp(self) -> int | None:
        """The earliest time (µs) of any system sample or framework event; None without data.

        Read from the data, not from file names (1.0.34 took the first system file's minute and
        waited for system files forever when there were none)."""
        if self._first is None:
            candidates = []
            for f in self._system.files(self._system.first_per_node()):
                chunk = self._load(f, framework=False)
                if chunk.first_s is not None:
                    candidates.append(int(chunk.first_s * 1e6))
            for f in self._framework.files(self._framework.first_per_node()):
                ev = self._load(f, framework=True)
                if len(ev):
                    candidates.append(int(ev.start_us[0]))
            self._first = min(candidates) if candidates else None
        return self._first

    def _latest_system_us(self) -> int | None:
        lasts = []
        for f in self._system.files(self._system.first_per_node(newest=True)):
            chunk = self._load(f, framework=False)
            lasts.append(int(chunk.last_s * 1e6) if chunk.last_s is not None else f.time_us)
        return min(lasts) if lasts else None

    def _latest_framework_us(self) -> int | None:
        newest = [self._framework.time[k] for k in self._framework.first_per_node(newest=True)]
        return min(newest) if newest else None

    def get_complete_timestamp(self) -> int | None:
        """The time (µs) before which every event that started is in the listed files, as far as
        the files tell: :meth:`get_latest_timestamp`, but no later than the end of a node's newest
        step event when its newest framework files hold steps. An event is written when it ends,
        so a stalled step comes after the events inside it, and maybe in a later file: a live rule
        that judged a window by the files' names alone would miss the stall."""
        latest = self.get_latest_timestamp()
        for _, keys in self._framework.by_node().values():  # each node's newest files, newest first
            for f in self._framework.files(keys[::-1][:STEP_LOOKBACK_FILES]):
                end = self._load(f, framework=True).last_end_of_phase("Step:")
                if end is not None:
                    latest = end if latest is None else min(latest, end)
                    break
        return latest

    def get_framework_horizon(self) -> int | None:
        """The time (µs) from which framework events may still be missing from the listed files
        because a node's first timeline is still being written
        (``framework/<node>_pythontimeline.json.tmp``, not read, its events after its time base):
        the earliest such base; None when no node is in that state. A live rule takes the events
        that start before it, and the others once they are there (their time has been judged on
        the system metrics meanwhile)."""
        by_node = self._framework.by_node()
        bases = [
            b
            for node, key in self._open_timelines.items()
            if node not in by_node and (b := self._open_base(key)) is not None
        ]
        return min(bases) if bases else None

    def _open_base(self, key: str) -> int | None:
        """The time base (µs) in the first line of a timeline being written (the writer's start:
        every event in it starts later); None when it cannot be read yet."""
        if key not in self._open_bases or self._open_bases[key] is None:
            try:
                head = self._store.read_ranges(key, [(0, 256)])[0]
                m = _BASE.search(head)
                self._open_bases[key] = int(m.group(1)) if m else None
            except Exception:  # noqa: BLE001 - renamed since it was listed: its events are in a listed file
                self._open_bases[key] = None
        return self._open_bases[key]

    def get_latest_timestamp(self) -> int | None:
        """The time (µs) up to which every node's streams have data: the smallest over nodes and
        streams of the newest system sample and of the newest framework file's last event end
        (streams that do not exist are left out); None without data. Call :meth:`refresh` first
        to see files written since."""
        found = [t for t in (self._latest_system_us(), self._latest_framework_us()) if t is not None]
        return min(found) if found else None

    def get_end_timestamp(self) -> int | None:
        """The time (µs) of the newest data of any node and stream (the largest, where
        :meth:`get_latest_timestamp` gives the smallest): once the job has finished, everything up to
        it is there. None without data."""
        newest = self._system.files(self._system.first_per_node(newest=True))
        ends = [int(c.last_s * 1e6) for f in newest if (c := self._load(f, framework=False)).last_s is not None]
        ends += self._framework.time.values()
        return max(ends) if ends else None

    def job_finished(self) -> bool:
        """True when the job's end marker exists (``system/`` or ``framework/training_job_end.ts``)."""
        return any(self._store.exists(f"{stream}/{END_MARKER}") for stream in ("system", "framework"))

    def file_timestamps(self, stream: str) -> list[int]:
        """The times (µs) in the names of the listed files of ``stream`` ("system": each file's
        minute; "framework": each file's last event end), sorted."""
        files = {"system": self._system, "framework": self._framework}[stream]
        return sorted(files.time.values())

    def has_data(self) -> bool:
        return bool(len(self._system) or len(self._framework))

    def __repr__(self) -> str:
        return (
            f"<{type(self).__name__} {self.name!r} at {self.path}: {len(self._system)} system files, "
            f"{len(self._framework)} framework files>"
        )
