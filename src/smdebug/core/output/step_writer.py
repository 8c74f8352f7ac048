"""Writing a hook's steps off the training thread.

The training thread hands over one :class:`StepRecords` per saved step (the values its adapter
snapshotted or reduced); a single background thread turns them into numpy arrays with the same
adapter, encodes them and writes the event file, the index and the TensorBoard files. The
hand-off is bounded, so a slow disk slows training down instead of filling memory, and nothing
handed over is dropped. The training thread's side of it (core.output.handoff) survives a
KeyboardInterrupt landing in it: the hook still closes at exit.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from smdebug.core.modes import ModeKeys
from smdebug.core.output.consolidate import BucketConsolidator
from smdebug.core.output.handoff import STOP, BoundedHandoff, Gate
from smdebug.core.output.records import LAZY_KINDS, PendingRecord, RecordKind
from smdebug.core.output.writer import FileWriter
from smdebug.core.tensors.adapter import NumpyAdapter, TensorAdapter
from smdebug.exceptions import StorageError

if TYPE_CHECKING:
    from smdebug.core.output.tensorboard import TensorBoardFiles

__all__ = ["StepRecords", "StepWriter", "SWITCH_INTERVAL_ENV"]

_REDUCTIONS = RecordKind.REDUCTIONS

logger = logging.getLogger("smdebug")
SWITCH_INTERVAL_ENV = "SMDEBUG_GIL_SWITCH_INTERVAL"
_DEFAULT_SWITCH_INTERVAL = 0.0  # leave it alone unless $SMDEBUG_GIL_SWITCH_INTERVAL asks


class _SwitchInterval:
    """Python's thread switch interval while a background writer runs, when the user asks for it.

    A library leaves its host's interpreter settings alone unless asked: by default nothing
    changes. ``$SMDEBUG_GIL_SWITCH_INTERVAL`` (seconds, e.g. ``0.001``) lowers the interval
    (Python's default is 5 ms) while a writer runs: when the writer holds the GIL and the training
    thread wants it back, training waits at most that long. Measured on the hook benchmark
    (reductions): 1.18x -> 1.10x the hookless step time with 0.001. It is never raised above the
    current value, and the previous value comes back when the last writer closes, unless someone
    changed it since."""

    def __init__(self):
        self._lock = threading.Lock()
        self._users = 0
        self._saved: float | None = None
        self._set: float | None = None

    def acquire(self) -> None:
        with self._lock:
            self._users += 1
            if self._users > 1:
                return
            raw = os.getenv(SWITCH_INTERVAL_ENV, "").strip()
            try:
                want = float(raw) if raw else _DEFAULT_SWITCH_INTERVAL
            except ValueError:
                logger.warning("smdebug: ignoring %s=%r (not a number of seconds)", SWITCH_INTERVAL_ENV, raw)
                want = _DEFAULT_SWITCH_INTERVAL
            current = sys.getswitchinterval()
            if want > 0 and want < current:
                self._saved, self._set = current, want
                sys.setswitchinterval(want)

    def release(self) -> None:
        with self._lock:
            self._users = max(self._users - 1, 0)
            if self._users == 0 and self._saved is not None and self._set is not None:  # (set together)
                if abs(sys.getswitchinterval() - self._set) < 1e-9:
                    sys.setswitchinterval(self._saved)
                self._saved = self._set = None


switch_interval = _SwitchInterval()


@dataclass
class TensorBoardScalar:
    """A scalar for TensorBoard: ``step`` None means the step it is written with."""

    tag: str
    value: float
    wall_time: float | None = None
    step: int | None = None


@dataclass
class StepRecords:
    """Everything one worker saves for one global step: the hook's records (values as the
    adapter left them), turned by :meth:`materialize` into what FileWriter and TensorBoardWriter
    take (on the writer thread)."""

    step: int
    mode: ModeKeys
    mode_step: int
    records: list[PendingRecord] = field(default_factory=list)
    tensors: list = field(default_factory=list)  # (name, ndarray, wall_time or None), FileWriter.write_tensors
    shapes: list = field(default_factory=list)  # (name, shape tuple)
    tb_scalars: list = field(default_factory=list)  # TensorBoardScalar
    tb_histograms: list = field(default_factory=list)  # (tag, ndarray)
    held: list = field(default_factory=list)  # buffers to give back to the adapter once written

    def __bool__(self):
        return bool(self.records or self.tensors or self.shapes or self.tb_scalars or self.tb_histograms)

    def materialize(self, adapter: TensorAdapter) -> None:
        """Turn the records into arrays: one ``adapter.materialize`` call for the step. Tensors
        keep their order, scalars (save_scalar) come after them; TensorBoard scalars of
        save_scalar come before those of tensors."""
        records, self.records = self.records, []
        if not records:
            return
        lazy: list = []
        for r in records:
            kind = r.kind
            if kind is _REDUCTIONS:
                if type(r.value) is list:  # one object per reduction
                    lazy.extend(r.value)
                else:  # one object for all: a row
                    lazy.append(r.value)
            elif kind in LAZY_KINDS:
                lazy.append(r.value)
        values = iter(adapter.materialize(lazy, self.held) if lazy else [])
        tensors, scalars, tb_scalars = [], [], []
        for r in records:
            kind = r.kind
            if kind is _REDUCTIONS:
                if type(r.value) is list:
                    tensors.extend([(tag, next(values), None) for tag in r.tags])
                else:
                    row = next(values)
                    tensors.extend([(tag, row[j, ...], None) for j, tag in enumerate(r.tags)])
            elif kind is RecordKind.SHAPE:
                self.shapes.append((r.name, r.shape))
            elif kind is RecordKind.SCALAR:
                scalars.append((r.name, r.value, r.wall_time))
                self.tb_scalars.append(TensorBoardScalar(r.name, float(r.value.ravel()[0]), r.wall_time, r.step))
            else:
                value = next(values)
                if kind is RecordKind.TENSOR:
                    tensors.append((r.name, value, None))
                elif kind is RecordKind.HISTOGRAM:
                    self.tb_histograms.append((r.name, value))
                else:
                    tb_scalars.append(TensorBoardScalar(r.name, float(np.asarray(value).ravel()[0])))
        self.tensors[:0] = tensors
        if len(scalars) > 1:  # saved at several steps before this saved one: the trial keeps the last value
            last = {sc[0]: i for i, sc in enumerate(scalars)}
            scalars = [sc for i, sc in enumerate(scalars) if last[sc[0]] == i]
        self.tensors.extend(scalars)
        self.tb_scalars.extend(tb_scalars)


class StepWriter:
    """Writes StepRecords for one worker, in order, on a background thread (or inline)."""

    def __init__(
        self,
        out_dir: str,
        worker: str,
        tensorboard_dir: str | None = None,
        background: bool = True,
        max_pending: int = 4,
        adapter: TensorAdapter | None = None,
        store=None,
    ):
        """``store``: the store of ``out_dir`` the hook opened (opened here when None)."""
        from smdebug.storage import open_store

        self.adapter = adapter if adapter is not None else NumpyAdapter()
        self.out_dir = out_dir
        self.worker = worker
        self.tensorboard_dir = tensorboard_dir
        self.store = store if store is not None else open_store(out_dir)
        self.consolidator = BucketConsolidator(self.store, worker)  # an index object per 1000 steps
        self.tb_store = open_store(tensorboard_dir) if tensorboard_dir else None
        self._tb: TensorBoardFiles | None = None  # made at the first step with TensorBoard records
        self.errors: list[BaseException] = []  # failures that disable the hook
        self.failed_steps: list[int] = []  # steps the store could not take (storage errors)
        self._queue: BoundedHandoff | None = None
        self._thread: threading.Thread | None = None
        self.gate: Gate | None = None  # see open_gate
        if background:
            self._queue = BoundedHandoff(max_pending)
            self._thread = threading.Thread(target=self._run, name="smdebug-writer", daemon=True)
            self._thread.start()
            switch_interval.acquire()

    GATE_TIMEOUT = 0.05  # seconds a step waits for the gate (a training loop with no backward)

    def open_gate(self) -> None:
        """Tell the background thread that now is a good time to work: the training thread is in
        a stretch that hardly needs the GIL (PyTorch: backward, which runs in C++). Once a
        framework hook calls this, each handed-over step waits for the next call (at most
        GATE_TIMEOUT, and not at all when more steps are queued), so that the writer's Python does
        not run while the model's Python-heavy forward pass does."""
        if self.gate is None:
            self.gate = Gate()
        self.gate.set()

    def submit(self, rec: StepRecords) -> None:
        if not rec:
            return
        if self._queue is None:
            self._write(rec)
        else:
            if self.gate is not None:
                self.gate.clear()
            if not self._queue.put(rec, self._alive):  # the writer thread is gone: written here
                self._write(rec)

    def _alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _run(self) -> None:
        q = self._queue
        assert q is not None
        while True:
            rec = q.get()
            if rec is STOP:
                return
            try:
                gate = self.gate
                if gate is not None and q.empty():
                    gate.wait(self.GATE_TIMEOUT)
                self._write(rec)
            finally:
                q.done()

    def _write(self, rec: StepRecords) -> None:
        try:
            rec.materialize(self.adapter)
            if rec.tensors or rec.shapes:
                fw = FileWriter(
                    self.out_dir, worker=self.worker, step=rec.step, store=self.store, consolidator=self.consolidator
                )
                fw.write_tensors(rec.tensors, mode=rec.mode, mode_step=rec.mode_step)
                for name, shape in rec.shapes:
                    fw.write_shape(name, shape, mode=rec.mode, mode_step=rec.mode_step)
                fw.close()
            if self.tb_store is not None and (rec.tb_scalars or rec.tb_histograms):
                if self._tb is None:
                    from smdebug.core.output.tensorboard import TensorBoardFiles

                    self._tb = TensorBoardFiles(self.tensorboard_dir or "", self.tb_store)
                tb = self._tb.writer(rec.mode, rec.step)
                for sc in rec.tb_scalars:
                    tb.write_scalar(sc.tag, sc.value, rec.step if sc.step is None else sc.step, wall_time=sc.wall_time)
                for tag, values in rec.tb_histograms:
                    tb.write_histogram(tag, np.asarray(values), rec.step)
                self._tb.step_written(rec.mode)
            if rec.held:
                self.adapter.release(rec.held)
                rec.held = []
        except StorageError as exc:
            # the store already retried; the storage may come back, so later steps are still tried
            if not self.failed_steps:
                logger.error(
                    "smdebug: could not write step %s of %s (later steps are still tried): %s",
                    rec.step,
                    self.worker,
                    exc,
                )
            self.failed_steps.append(rec.step)
        except Exception as exc:  # noqa: BLE001 - the hook sees self.errors; training goes on
            if not self.errors:
                logger.exception("smdebug: could not write step %s of %s to %s", rec.step, self.worker, self.out_dir)
            self.errors.append(exc)

    def flush(self) -> None:
        """Wait until everything submitted is written (the TensorBoard files too)."""
        if self._queue is not None:
            if self.gate is not None:
                self.gate.set()
            self._queue.wait_until_done(self._alive)
        if self._tb is not None:
            self._tb.flush()

    def close(self) -> None:
        if self.gate is not None:
            self.gate.set()
        thread = self._thread
        if self._queue is not None and thread is not None and thread.is_alive():
            self._queue.stop()
            thread.join()
        self.consolidator.close()
        if self._tb is not None:
            self._tb.close()
        if self._queue is not None and self._thread is not None:
            switch_interval.release()
        self._queue = None
