"""KerasHook profiling: batches, epochs, the wait for the next batch, and detailed profiling
through TensorFlow's own profiler.

* Steps: ``Step:ModeKeys.<MODE>`` from ``on_*_batch_begin`` to ``on_*_batch_end``; epochs:
  ``Epoch`` spans (both as 1.0.34's KerasHook wrote them).
* **The wait for the next batch** (``DataIterator`` / ``IteratorGetNextOp::DoCompute``, the phase
  AWS's patched TensorFlow wrote into ``model_timeline.json``; stock TensorFlow writes none): while
  a profiling hook is open, Keras' ``TFEpochIterator`` hands ``fit``/``evaluate``/``predict`` an
  iterator that times each ``next()``: the time the training loop blocks on the input pipeline
  (tf.data's prefetching included). Keras then runs its step function on the fetched batch
  (the same compiled function as its own path for one step per execution) instead of fetching
  inside the graph. With ``steps_per_execution > 1`` Keras fetches inside a graph loop and there
  are no DataIterator events (logged once). The event lies inside its step and carries its
  ``step_num``; ``DataloaderProfilingConfig`` (steps or time, ``MetricsRegex``) selects them.
* **Detailed profiling** (``DetailedProfilingConfig``): ``tf.profiler.experimental.start`` at the
  first configured TRAIN step and ``stop`` at the first TRAIN step after the range (or at the
  end of ``fit``, or at close), as 1.0.34 did, logging to
  ``<root>/framework/tensorflow/detailed_profiling/<YYYYMMDDHH>/<first step:09d>/`` (TensorFlow's
  ``plugins/profile/<run>/<host>.xplane.pb``), with ``<node>_<start_us>_<end_us>.metadata`` (empty)
  in that folder, 1.0.34's record of the profiled time. Another TensorFlow profile already
  running (e.g. TensorBoard's callback) makes the range be skipped with a warning.

Every entry point follows the hooks' error policy (an error disables the profiler, training goes
on), see smdebug.profiler.recording.session. TensorFlow is imported when first needed, as in the hook.
"""

from __future__ import annotations

import logging
import os
import threading
import time

from smdebug.modes import ModeKeys
from smdebug.profiler.recording.session import profiler_for_hook
from smdebug.profiler.recording.timeline import now_us

__all__ = ["KerasProfiling", "TFDetailedProfiling", "keras_profiling_for"]

logger = logging.getLogger("smdebug")
DATA_PHASE = "DataIterator"
DATA_NAME = "IteratorGetNextOp::DoCompute"

_active: KerasProfiling | None = None  # the profiling whose fits are timed
_patch_lock = threading.Lock()
_original_get_iterator = None
_warned: set = set()


def _warn_once(key: str, msg: str, *args) -> None:
    if key not in _warned:
        _warned.add(key)
        logger.warning(msg, *args)


# ---------------------------------------------------------------------------- the data wait
class _TimedIterator:
    """The epoch's iterator, each ``next()`` timed. Running out raises OutOfRangeError, which
    Keras' ``catch_stop_iteration`` ends the epoch with (its graph path does the same)."""

    def __init__(self, iterator):
        self._it = iterator

    def __iter__(self):
        return self

    def __next__(self):
        start = now_us()
        try:
            return next(self._it)
        except StopIteration:
            import tensorflow as tf

            raise tf.errors.OutOfRangeError(None, None, "End of sequence") from None
        finally:  # a wait that found the data exhausted was waited too
            prof = _active
            if prof is not None:
                prof.data_wait(start, now_us())


class _TimedDataset:
    def __init__(self, dataset):
        self._dataset = dataset

    def __iter__(self):
        return _TimedIterator(iter(self._dataset))


def _get_iterator(self):
    dataset = _original_get_iterator(self)
    if _active is None:
        return dataset
    if getattr(self, "steps_per_execution", 1) != 1:
        _warn_once(
            "spe",
            "smdebug: profiler: steps_per_execution=%s: Keras fetches batches inside its graph "
            "loop, no DataIterator events are recorded",
            getattr(self, "steps_per_execution", None),
        )
        return dataset
    return _TimedDataset(dataset)


def _install_patch() -> bool:
    global _original_get_iterator
    with _patch_lock:
        if _original_get_iterator is not None:
            return True
        try:
            from keras.src.backend.tensorflow.trainer import TFEpochIterator
        except ImportError:
            _warn_once(
                "keras",
                "smdebug: profiler: this Keras has no TensorFlow TFEpochIterator: no DataIterator events are recorded",
            )
            return False
        _original_get_iterator = TFEpochIterator._get_iterator
        TFEpochIterator._get_iterator = _get_iterator
        return True


def _remove_patch() -> None:
    global _original_get_iterator
    with _patch_lock:
        if _original_get_iterator is not None:
            from keras.src.backend.tensorflow.trainer import TFEpochIterator

            TFEpochIterator._get_iterator = _original_get_iterator
            _original_get_iterator = None


# ---------------------------------------------------------------------------- detailed
class TFDetailedProfiling:
    """TensorFlow's profiler over the configured TRAIN steps (``config_range``: a ProfilingRange)."""

    def __init__(self, root: str, node_id: str, config_range, on_file=None):
        self.root = root
        self.node_id = node_id
        self.range = config_range
        self.on_file = on_file  # called with each file written (the profiler uploads it)
        self._log_dir: str | None = None
        self._start_us: int | None = None
        self._refused = False  # TensorFlow's profiler was taken by someone else: not tried again
        self.folders: list[str] = []

    @property
    def running(self) -> bool:
        return self._log_dir is not None

    def boundary(self, step: int | None) -> None:
        """TRAIN step ``step`` starts (None: training ended): start or stop the profile."""
        wanted = step is not None and self.range.has_step(step, time.time())
        if self.running and not wanted:
            self.stop()
        if wanted and not self.running and not self._refused:
            start = now_us()
            hour = time.strftime("%Y%m%d%H", time.gmtime(start / 1e6))
            log_dir = os.path.join(self.root, "framework", "tensorflow", "detailed_profiling", hour, f"{step:09d}")
            os.makedirs(log_dir, exist_ok=True)
            import tensorflow as tf

            try:
                tf.profiler.experimental.start(log_dir)
            except (tf.errors.AlreadyExistsError, tf.errors.UnavailableError) as exc:
                logger.warning(
                    "smdebug: profiler: detailed profiling from step %s is skipped: another TensorFlow "
                    "profile is running (%s)",
                    step,
                    exc,
                )
                self._refused = True
                return
            self._log_dir, self._start_us = log_dir, start

    def stop(self) -> None:
        log_dir, self._log_dir = self._log_dir, None
        if log_dir is None:
            return
        import tensorflow as tf

        tf.profiler.experimental.stop()
        marker = os.path.join(log_dir, f"{self.node_id}_{self._start_us}_{now_us()}.metadata")
        open(marker, "w").close()
        self.folders.append(log_dir)
        if self.on_file is not None:
            for folder, _, files in os.walk(log_dir):
                for name in sorted(files):
                    self.on_file(os.path.join(folder, name))


# ---------------------------------------------------------------------------- the hook's side
class KerasProfiling:
    """What a KerasHook reports to its Profiler."""

    def __init__(self, profiler):
        global _active
        self.profiler = profiler
        self.detailed = None
        cfg = profiler.config
        if cfg.detailed is not None and not cfg.disabled:
            self.detailed = TFDetailedProfiling(
                profiler.root, profiler.node_id, cfg.detailed, on_file=profiler.file_done
            )
        if profiler.timeline is not None and _install_patch():
            _active = self

    def batch_begin(self, mode, step: int) -> None:
        self.profiler.step_start(mode, step)
        if self.detailed is not None and mode == ModeKeys.TRAIN:
            self._guard(self.detailed.boundary, step)

    def batch_end(self) -> None:
        self.profiler.step_end()

    def epoch_begin(self, epoch: int) -> None:
        self.profiler.span_start("epoch", "Epoch", "Epoch", {"epoch": str(epoch)})

    def epoch_end(self) -> None:
        self.profiler.span_end("epoch")

    def train_end(self) -> None:
        if self.detailed is not None:
            self._guard(self.detailed.boundary, None)

    def data_wait(self, start_us: int, end_us: int) -> None:
        self._guard(self._data_wait, start_us, end_us)

    def _data_wait(self, start_us: int, end_us: int) -> None:
        p = self.profiler
        if p.dataloader_wanted(DATA_NAME):
            p.record(DATA_PHASE, DATA_NAME, start_us, end_us)

    def _guard(self, fn, *args) -> None:
        """The profiler's error policy for our own parts (it disables the profiler, not training)."""
        p = self.profiler
        if p.disabled:
            return
        try:
            fn(*args)
        except Exception:
            if p.propagate_errors:
                raise
            p.disabled = True
            logger.exception(
                "smdebug: profiler: %s failed; the profiler is disabled, training goes on", getattr(fn, "__name__", fn)
            )

    def close(self) -> None:
        global _active
        if _active is self:
            _active = None
            _remove_patch()
        if self.detailed is not None:
            try:
                self.detailed.stop()
            except Exception:  # noqa: BLE001 - closing goes on: the timeline must be finished
                logger.exception("smdebug: profiler: the detailed profile could not be stopped at close")
        self.profiler.close()


def keras_profiling_for(config, out_dir: str) -> KerasProfiling | None:
    """The hook's profiling: ``config`` (a ProfilerConfig or SageMaker's JSON as a dict), else the
    profiler config file; None when nothing asks for profiling (then nothing is patched)."""
    profiler = profiler_for_hook(config, out_dir, "tensorflow")
    return KerasProfiling(profiler) if profiler is not None else None
