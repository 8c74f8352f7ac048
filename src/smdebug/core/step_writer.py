"""Writing a hook's steps off the training thread.

The training thread hands over one :class:`StepRecords` per saved step (numpy arrays it already
copied); a single background thread encodes them and writes the event file, the index and the
TensorBoard files. The queue is bounded, so a slow disk slows training down instead of filling
memory, and nothing handed over is dropped.
"""

from __future__ import annotations

import logging
import os
import queue
import sys
import threading
from dataclasses import dataclass, field

import numpy as np

from smdebug.core.consolidate import BucketConsolidator
from smdebug.core.modes import ModeKeys
from smdebug.core.writer import FileWriter
from smdebug.exceptions import StorageError

__all__ = ["StepRecords", "StepWriter", "SWITCH_INTERVAL_ENV"]

logger = logging.getLogger("smdebug")
SWITCH_INTERVAL_ENV = "SMDEBUG_GIL_SWITCH_INTERVAL"
_DEFAULT_SWITCH_INTERVAL = 0.001


class _SwitchInterval:
    """While a background writer runs, Python's thread switch interval is at most 1 ms (default
    5 ms): when the writer holds the GIL and the training thread wants it back, training waits
    at most that long. Measured on the hook benchmark (reductions): 1.18x -> 1.10x the hookless
    step time.
    ``$SMDEBUG_GIL_SWITCH_INTERVAL`` sets another value in seconds; 0 leaves it alone. The
    previous value comes back when the last writer closes, unless someone changed it since."""

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
            if self._users == 0 and self._saved is not None:
                if abs(sys.getswitchinterval() - self._set) < 1e-9:
                    sys.setswitchinterval(self._saved)
                self._saved = self._set = None


switch_interval = _SwitchInterval()


@dataclass
class StepRecords:
    """Everything one worker saves for one global step."""

    step: int
    mode: ModeKeys
    mode_step: int
    tensors: list = field(default_factory=list)  # (name, ndarray, wall_time or None)
    shapes: list = field(default_factory=list)  # (name, shape tuple)
    tb_scalars: list = field(default_factory=list)  # (tag, float, wall_time or None)
    tb_histograms: list = field(default_factory=list)  # (tag, ndarray)
    pending: list = field(default_factory=list)  # (kind, name, lazy value, extra) from the hook
    adapter: object = None  # turns the lazy values into numpy arrays
    held: list = field(default_factory=list)  # buffers to give back to the adapter once written

    def __bool__(self):
        return bool(self.pending or self.tensors or self.shapes or self.tb_scalars or self.tb_histograms)

    def materialize(self) -> None:
        """Turn the hook's pending entries into arrays (on the writer thread)."""
        pending, self.pending = self.pending, []
        if not pending:
            return
        lazy = [p[2] for p in pending if p[0] != "shape"]
        it = iter(self.adapter.materialize(lazy, self.held) if lazy else [])
        tensors = []
        for kind, name, _obj, extra in pending:
            if kind == "shape":
                self.shapes.append((name, extra))
                continue
            value = next(it)
            if kind == "tensor":
                tensors.append((name, value, extra))
            elif kind == "hist":
                self.tb_histograms.append((name, value))
            elif kind == "tb_scalar":
                self.tb_scalars.append((name, float(np.asarray(value).ravel()[0]), None))
        self.tensors[:0] = tensors


class StepWriter:
    """Writes StepRecords for one worker, in order, on a background thread (or inline)."""

    def __init__(self, out_dir: str, worker: str, tensorboard_dir: str | None = None,
                 background: bool = True, max_pending: int = 4):
        from smdebug.storage import open_store

        self.out_dir = out_dir
        self.worker = worker
        self.tensorboard_dir = tensorboard_dir
        self.store = open_store(out_dir)
        self.consolidator = BucketConsolidator(self.store, worker)  # an index object per 1000 steps
        self.tb_store = open_store(tensorboard_dir) if tensorboard_dir else None
        self.errors: list[BaseException] = []  # failures that disable the hook
        self.failed_steps: list[int] = []  # steps the store could not take (storage errors)
        self._queue: queue.Queue | None = None
        self._thread: threading.Thread | None = None
        self.gate: threading.Event | None = None  # see open_gate
        if background:
            self._queue = queue.Queue(maxsize=max_pending)
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
            self.gate = threading.Event()
        self.gate.set()

    def submit(self, rec: StepRecords) -> None:
        if not rec:
            return
        if self._queue is None:
            self._write(rec)
        else:
            if self.gate is not None:
                self.gate.clear()
            self._queue.put(rec)

    def _run(self) -> None:
        q = self._queue
        while True:
            rec = q.get()
            try:
                if rec is None:
                    return
                gate = self.gate
                if gate is not None and q.empty():
                    gate.wait(self.GATE_TIMEOUT)
                self._write(rec)
            finally:
                q.task_done()

    def _write(self, rec: StepRecords) -> None:
        try:
            rec.materialize()
            if rec.tensors or rec.shapes:
                fw = FileWriter(self.out_dir, worker=self.worker, step=rec.step, store=self.store,
                                consolidator=self.consolidator)
                fw.write_tensors(rec.tensors, mode=rec.mode, mode_step=rec.mode_step)
                for name, shape in rec.shapes:
                    fw.write_shape(name, shape, mode=rec.mode, mode_step=rec.mode_step)
                fw.close()
            if self.tb_store is not None and (rec.tb_scalars or rec.tb_histograms):
                from smdebug.core.tensorboard import TensorBoardWriter

                tb = TensorBoardWriter(self.tensorboard_dir, rec.mode, rec.step, store=self.tb_store)
                for tag, value, wall_time in rec.tb_scalars:
                    tb.write_scalar(tag, value, rec.step, wall_time=wall_time)
                for tag, values in rec.tb_histograms:
                    tb.write_histogram(tag, np.asarray(values), rec.step)
                tb.close()
            if rec.held:
                rec.adapter.release(rec.held)
                rec.held = []
        except StorageError as exc:
            # the store already retried; the storage may come back, so later steps are still tried
            if not self.failed_steps:
                logger.error("smdebug: could not write step %s of %s (later steps are still tried): %s",
                             rec.step, self.worker, exc)
            self.failed_steps.append(rec.step)
        except Exception as exc:  # noqa: BLE001 - the hook sees self.errors; training goes on
            if not self.errors:
                logger.exception("smdebug: could not write step %s of %s to %s", rec.step, self.worker, self.out_dir)
            self.errors.append(exc)

    def flush(self) -> None:
        """Wait until everything submitted is written."""
        if self._queue is not None:
            if self.gate is not None:
                self.gate.set()
            self._queue.join()

    def close(self) -> None:
        if self.gate is not None:
            self.gate.set()
        if self._queue is not None and self._thread is not None and self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()
        self.consolidator.close()
        if self._queue is not None and self._thread is not None:
            switch_interval.release()
        self._queue = None
