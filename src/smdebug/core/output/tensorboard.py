"""TensorBoard export: event files per mode (each named after its first step), scalars and histograms.

A hook's steps go to one file per mode (:class:`TensorBoardFiles`), rewritten with what it holds every
few seconds and replaced by a new file after a minute or 10,000 records: TensorBoard reads every file of a
folder, and a long run is a few files, not one per saved step.

The file is named as smdebug 1.0.34 names it (``<MODE>/<step:012d>_<pid>_<host>.tfevents`` under
the TensorBoard folder), records carry their real payload CRC (TensorBoard's reader drops a file's
remaining records at the first bad one), and the whole file is written atomically on close.
"""

from __future__ import annotations

import os
import re
import socket
import threading
from functools import lru_cache

import numpy as np

from smdebug.codec.event import encode_file_version_event, encode_summary_event, histogram_value, scalar_value
from smdebug.codec.tfrecord import frame
from smdebug.core.modes import ModeKeys, str_to_mode_keys
from smdebug.core.output.locations import TENSORBOARD_PREFIX, tensorboard_key
from smdebug.exceptions import SMDebugRuntimeError, SMDebugValueError
from smdebug.storage import Store, open_store

__all__ = ["TensorBoardWriter", "TensorBoardFiles", "default_bins", "clean_tag", "histogram_buckets"]

_INVALID_TAG_CHARACTERS = re.compile(r"[^-/\w.]")
_DBL_MAX = float(np.finfo(np.float64).max)


@lru_cache(maxsize=1)
def default_bins() -> np.ndarray:
    """TensorFlow's default bucket edges (``InitDefaultBucketsInner``), as tensorboardX and
    smdebug 1.0.34 use them: ``-1e20 < ... -1e-12, 0, 1e-12 ... < 1e20``, growing by 1.1.
    Read-only: the array is shared."""
    v = 1e-12
    pos = []
    while v < 1e20:
        pos.append(v)
        v *= 1.1
    edges = np.array([-x for x in reversed(pos)] + [0.0] + pos, dtype=np.float64)
    edges.flags.writeable = False
    return edges


def clean_tag(name: str) -> str:
    """Tags as TensorFlow's summary ops (and smdebug 1.0.34) clean them: characters other than
    letters, digits, ``_ - / .`` become ``_``; leading slashes are dropped."""
    return _INVALID_TAG_CHARACTERS.sub("_", str(name)).lstrip("/")


def histogram_buckets(values: np.ndarray, bins="default") -> tuple[np.ndarray, np.ndarray]:
    """``(bucket_limit, bucket)`` of finite float64 ``values`` (non-empty), as smdebug 1.0.34 and
    tensorboardX lay them out: bucket limits are right edges; empty buckets after the last
    non-empty one are dropped, and those before the first non-empty one are replaced by one empty
    bucket whose limit is that bucket's left edge (so TensorBoard sees where the data starts)."""
    if isinstance(bins, str):
        if bins != "default":
            counts, edges = np.histogram(values, bins=bins)
        else:
            edges = default_bins()
            lo, hi = float(values.min()), float(values.max())
            # Only the edges around [lo, hi]: same counts as the full edge list, far less work.
            i = max(int(np.searchsorted(edges, lo, side="right")) - 1, 0)
            j = int(np.searchsorted(edges, hi, side="right"))
            edges = edges[i : j + 1]
            if lo < edges[0]:
                edges = np.concatenate(([-_DBL_MAX], edges))
            if hi > edges[-1]:  # beyond 1e20: one open-ended bucket, as TF's DBL_MAX limit
                edges = np.concatenate((edges, [_DBL_MAX]))
            if edges.size < 2:  # lo == hi == the last edge: numpy's closed last bin holds it
                edges = default_bins()[-2:]
            counts, edges = np.histogram(values, bins=edges)
    else:
        counts, edges = np.histogram(values, bins=bins)
    nonzero = np.flatnonzero(counts)
    if nonzero.size == 0:  # every value outside caller-given edges: TF's single empty bucket
        return np.array([_DBL_MAX]), np.array([0.0])
    first, last = int(nonzero[0]), int(nonzero[-1])
    limits = np.asarray(edges[first : last + 2], dtype=np.float64)
    return limits, np.concatenate(([0.0], counts[first : last + 1].astype(np.float64)))


class TensorBoardWriter:
    """One TensorBoard event file for one mode, named like smdebug 1.0.34 names them:
    ``<tensorboard_dir>/<MODE>/<step:012d>_<pid>_<hostname>.tfevents``.

    Records are kept in memory and the whole file is written atomically by :meth:`close` (so it
    also works on object storage); the first record is the file_version event ``brain.Event:2``;
    every record carries its real payload CRC. Tags are cleaned as TensorFlow cleans them.
    """

    def __init__(self, tensorboard_dir: str, mode: ModeKeys, step: int, store: Store | None = None):
        if not isinstance(mode, ModeKeys):
            mode = str_to_mode_keys(mode)
        self.tensorboard_dir = tensorboard_dir
        self.mode = mode
        self.step = int(step)
        self._store = store if store is not None else open_store(tensorboard_dir)
        full = tensorboard_key(mode.name, self.step, os.getpid(), socket.gethostname())
        self._key = full[len(TENSORBOARD_PREFIX) :] if full.startswith(TENSORBOARD_PREFIX) else full
        # The file_version event leads the file; its time is the writer's creation time.
        self._records: list[bytes] = [frame(encode_file_version_event(), payload_crc=True)]
        self._lock = threading.Lock()
        self._closed = False

    @property
    def key(self) -> str:
        """The file's key relative to ``tensorboard_dir``."""
        return self._key

    @property
    def closed(self) -> bool:
        return self._closed

    def name(self) -> str:
        """The file's full path or URL."""
        return self._store.describe(self._key)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()

    def _add(self, payload: bytes) -> None:
        record = frame(payload, payload_crc=True)
        with self._lock:
            if self._closed:
                raise SMDebugRuntimeError(f"TensorBoardWriter for {self.name()} is closed")
            self._records.append(record)

    def write_scalar(self, tag: str, value, step: int, wall_time: float | None = None) -> None:
        """A ``simple_value`` scalar (float32, as TensorBoard's scalars plugin reads it)."""
        arr = np.asarray(value)
        if arr.size != 1:
            raise SMDebugValueError(f"scalar summary {tag!r} needs one value, got shape {arr.shape}")
        if arr.dtype.kind not in "biuf":
            raise SMDebugValueError(f"scalar summary {tag!r} needs a real number, got dtype {arr.dtype}")
        with np.errstate(over="ignore"):
            v = float(np.float32(arr.reshape(-1)[0]))
        self._add(encode_summary_event([scalar_value(clean_tag(tag), v)], step, wall_time))

    def write_histogram(self, tag: str, values, step: int, bins="default", wall_time: float | None = None) -> None:
        """A ``HistogramProto`` of the finite values (nan and inf are left out); empty, boolean
        and non-numeric arrays are skipped silently. ``bins``: ``"default"`` (TensorFlow's
        buckets), an int, a numpy bin rule name, or a sequence of edges."""
        arr = np.asarray(values)
        if arr.size == 0 or arr.dtype.kind not in "iuf":
            return
        v = arr.astype(np.float64, copy=False).reshape(-1)
        finite = np.isfinite(v)
        if not finite.all():
            v = v[finite]
            if v.size == 0:
                return
        limits, counts = histogram_buckets(v, bins)
        with np.errstate(over="ignore"):  # sum_squares of huge values is inf, as in TF
            value = histogram_value(clean_tag(tag), v, limits, counts)
        self._add(encode_summary_event([value], step, wall_time))

    @property
    def records(self) -> int:
        """Records held (the file_version event included)."""
        return len(self._records)

    def flush(self) -> None:
        """Write the file (atomically) with every record so far; the writer stays open."""
        with self._lock:
            if self._closed:
                return
            data = b"".join(self._records) if len(self._records) > 1 else b""
        if data:
            self._store.write(self._key, data)

    def close(self) -> None:
        """Write the file (atomically) if anything was recorded; later calls do nothing."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            records, self._records = self._records, []
        if len(records) > 1:
            self._store.write(self._key, b"".join(records))


class TensorBoardFiles:
    """The TensorBoard files of one hook's steps: one open :class:`TensorBoardWriter` per mode, its
    file rewritten (atomically, whole) at most every ``flush_s`` seconds and on :meth:`flush`, and
    closed for a new one once it is ``roll_s`` seconds old or holds ``roll_records`` records."""

    def __init__(
        self,
        tensorboard_dir: str,
        store: Store,
        *,
        flush_s: float = 5.0,
        roll_s: float = 60.0,
        roll_records: int = 10_000,
        clock=None,
    ):
        import time

        self.tensorboard_dir, self.store = tensorboard_dir, store
        self.flush_s, self.roll_s, self.roll_records = flush_s, roll_s, roll_records
        self._clock = clock or time.monotonic
        self._open: dict = {}  # mode -> [writer, opened at, flushed at]

    def writer(self, mode: ModeKeys, step: int) -> TensorBoardWriter:
        """The open file of ``mode`` (a new one, named after ``step``, when there is none)."""
        entry = self._open.get(mode)
        if entry is None:
            now = self._clock()
            entry = self._open[mode] = [TensorBoardWriter(self.tensorboard_dir, mode, step, store=self.store), now, now]
        return entry[0]

    def step_written(self, mode: ModeKeys) -> None:
        """After a step's records went to ``writer(mode, ...)``: write the file when it is due, and
        close it when it is old or large enough."""
        entry = self._open.get(mode)
        if entry is None:
            return
        writer, opened, flushed = entry
        now = self._clock()
        if now - opened >= self.roll_s or writer.records >= self.roll_records:
            writer.close()
            del self._open[mode]
        elif now - flushed >= self.flush_s:
            writer.flush()
            entry[2] = now

    def flush(self) -> None:
        for writer, *_ in list(self._open.values()):
            writer.flush()

    def close(self) -> None:
        open_, self._open = self._open, {}
        for writer, *_ in open_.values():
            writer.close()
