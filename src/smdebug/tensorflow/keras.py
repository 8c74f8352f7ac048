"""``smdebug.tensorflow.KerasHook``: a Keras 3 callback over the framework-agnostic BaseHook.

Steps: every train batch is a TRAIN step, every test batch (``evaluate``, and validation inside
``fit``) an EVAL step, every predict batch a PREDICT step; one global step counter runs across
them. What is saved, and where the names come from:

- losses (``loss``) and metrics (the other keys of the batch logs, plus ``batch`` as 1.0.34
  wrote it) from ``on_*_batch_end``;
- weights and biases (``dense/weights/dense/kernel:0``) and optimizer variables, read at the end
  of the batch (after the update, as 1.0.34);
- gradients (``gradients/dense/kernelGrad``) and layer inputs/outputs (``dense/inputs``,
  ``dense/outputs``) captured inside the compiled train/test step (see ``capture.py``), only on
  steps that save them;
- in a custom loop: ``hook.wrap_tape(tf.GradientTape())`` saves the loss, the weights before the
  update and the gradients of each ``tape.gradient`` call (eager loops only).
"""

from __future__ import annotations

import inspect
import logging

import keras
import numpy as np

from smdebug.core.adapter import NumpyAdapter
from smdebug.core.collection import CollectionKeys
from smdebug.core.guard import guarded
from smdebug.core.hook import BaseHook
from smdebug.core.hook_options import options_signature
from smdebug.core.locations import CHIEF_WORKER, worker_name
from smdebug.exceptions import SMDebugTypeError
from smdebug.modes import ModeKeys
from smdebug.profiler.session import profiler_for_hook
from smdebug.tensorflow import capture, names
from smdebug.tensorflow.collection import TF_COLLECTIONS

__all__ = ["KerasHook"]

logger = logging.getLogger("smdebug")

_K = CollectionKeys
_CAPTURED = {_K.GRADIENTS, _K.LAYERS}


def _numpy(value) -> np.ndarray:
    if hasattr(value, "numpy"):
        value = value.numpy()
    return np.asarray(value)


def _assign(hook: BaseHook, name: str, coll: str) -> None:
    """Put ``name`` into collection ``coll`` of ``hook`` (whether it is saved is the plan's)."""
    known = hook.__dict__.setdefault("_known", set())
    if name in known or not coll:
        return
    known.add(name)
    hook.collection_manager.get(coll).add_tensor_name(name)
    hook.planner.forget(name)


def _save(hook: BaseHook, name: str, coll: str, value) -> None:
    _assign(hook, name, coll)
    hook._save_for_tensor(name, value)


def _tf_config_worker() -> str | None:
    """``worker_<task index>`` for multi-worker training configured by $TF_CONFIG."""
    import json
    import os

    try:
        task = json.loads(os.environ.get("TF_CONFIG", "") or "{}").get("task") or {}
    except ValueError:
        return None
    index = task.get("index")
    return worker_name(int(index)) if isinstance(index, int) else None


class _Replica(BaseHook):
    """What one more device of a MirroredStrategy writes (include_workers="all"): the same steps
    as the hook, under the device's worker name. Built by the hook, never the active hook."""

    collection_defaults = TF_COLLECTIONS
    make_adapter = NumpyAdapter

    def __init__(self, options, device: str, workers: int):
        self._configure(options)
        self.worker = device
        self._workers = workers

    def _get_num_workers(self) -> int:
        return self._workers

    @property
    def writes(self) -> bool:
        return not self.dry_run


class KerasHook(keras.callbacks.Callback, BaseHook):
    """Saves a Keras model's tensors while it trains: ``model.fit(..., callbacks=[hook])``.

    Also a callback of ``evaluate`` and ``predict``. The hook stays open across calls; it writes
    what it holds at the end of each and marks the end of training at ``hook.close()`` (or when
    the program exits).
    """

    collection_defaults = TF_COLLECTIONS
    make_adapter = NumpyAdapter

    def __init__(self, *args, profiler_config=None, **kwargs):
        keras.callbacks.Callback.__init__(self)
        self._profiler_config = profiler_config  # a smdebug.profiler.ProfilerConfig, or None: the config file
        BaseHook.__init__(self, *args, **kwargs)

    __init__.__signature__ = options_signature(
        (inspect.Parameter("profiler_config", inspect.Parameter.KEYWORD_ONLY, default=None),))

    def _configure(self, options) -> None:
        self._options = options
        super()._configure(options)
        self._profiler = profiler_for_hook(getattr(self, "_profiler_config", None), self.out_dir, "tensorflow")
        self._replicas: list = []  # _Replica hooks of the other devices (MirroredStrategy, "all")
        self._n_replicas = 1
        self._chief = True
        self._stash = capture.Stash()
        self._variables: list = []  # (tensor name, keras variable) read at batch end
        self._optimizer_vars: list = []
        self._models: list = []
        self._tape_in_step = False
        self._in_fit = False

    # ---------------------------------------------------------------- collections
    def _wants(self, coll: str) -> bool:
        return self.save_all or coll in self.include_collections or _K.ALL in self.include_collections

    def _assign(self, name: str, coll: str) -> None:
        for h in (self, *self._replicas):
            _assign(h, name, coll)

    def _save(self, name: str, coll: str, value, per_replica: bool = False) -> None:
        """Save ``value`` in every writing replica; ``per_replica``: its first axis is the replica."""
        value = _numpy(value)
        if per_replica:
            _save(self, name, coll, value[0])
            for i, h in enumerate(self._replicas, start=1):
                _save(h, name, coll, value[i])
        else:
            for h in (self, *self._replicas):
                _save(h, name, coll, value)

    # ---------------------------------------------------------------- workers
    def _get_worker_name(self) -> str:
        return _tf_config_worker() or CHIEF_WORKER

    def _get_num_workers(self) -> int:
        return max(self._n_replicas, 1)

    @property
    def writes(self) -> bool:
        return not self.dry_run and (self.save_all_workers or self._chief)

    def _setup_replicas(self, model) -> None:
        """Under MirroredStrategy, workers are the devices (1.0.34's GPU naming,
        ``/job:localhost/replica:0/task:0/device:CPU:0``); the hook writes the first, and with
        include_workers="all" one _Replica per other device."""
        try:
            devices = list(model.distribute_strategy.extended.worker_devices or ())
        except (RuntimeError, AttributeError):  # the default strategy has no devices to name
            devices = []
        if len(devices) < 2 or self._n_replicas > 1:
            return
        if self._writer is not None:
            raise SMDebugTypeError("a KerasHook that has written steps cannot start saving a distributed model")
        self._n_replicas = len(devices)
        self.worker = devices[0]
        if self.save_all_workers:
            self._replicas = [_Replica(self._options, d, len(devices)) for d in devices[1:]]
            for h in self._replicas:
                h.set_mode(self.mode)

    def _due(self) -> set:
        return {c.name for c in self._collections_for_step()}

    # ---------------------------------------------------------------- model
    def set_model(self, model) -> None:
        super().set_model(model)
        self._register_model(model)

    @guarded()
    def _register_model(self, model) -> None:
        if model in self._models:
            return
        self._models.append(model)
        self._setup_replicas(model)
        top = model.name
        for layer in model.layers:
            for v in layer.weights:
                name = names.callback_weight_name(layer.name, v, top)
                self._assign(name, _K.BIASES if names.is_bias(name) else _K.WEIGHTS)
                self._variables.append((name, v))
        want_grads, want_layers = self._wants(_K.GRADIENTS), self._wants(_K.LAYERS)
        if want_grads:
            for v in model.trainable_weights:
                self._assign(names.gradient_name(v, top), _K.GRADIENTS)
        if want_grads or want_layers:
            capture.install(
                model, self._stash, gradients=want_grads, layers=want_layers,
                grad_name=lambda v, _top=top: names.gradient_name(v, _top),
                wants_capture=self._wants_capture, receive=self._receive,
            )

    @guarded(default=False)
    def _wants_capture(self, mode: str) -> bool:
        """Whether the step about to run saves gradients or layers (then the instrumented function runs)."""
        return bool(self._due() & _CAPTURED)

    @guarded()
    def _receive(self, mode: str, captured: dict) -> None:
        split = self._n_replicas > 1
        for name, value in captured.items():
            self._save(name, _K.GRADIENTS if name.startswith("gradients/") else _K.LAYERS, value, per_replica=split)

    def _optimizer_variables(self) -> list:
        if not self._optimizer_vars and self._models:
            opt = getattr(self._models[0], "optimizer", None)
            if opt is not None and getattr(opt, "built", True):
                slots = {id(v) for v in getattr(opt, "_trainable_variables", ())}
                for v in opt.variables:
                    if id(v) not in slots:
                        name = names.optimizer_variable_name(v)
                        self._assign(name, _K.OPTIMIZER_VARIABLES)
                        self._optimizer_vars.append((name, v))
        return self._optimizer_vars

    # ---------------------------------------------------------------- callback
    def _batch_begin(self, mode: ModeKeys) -> None:
        for h in (self, *self._replicas):
            if h.mode != mode:
                h.set_mode(mode)
            h._begin_step()
        if self._profiler is not None:
            self._profiler.step_start(mode, self.mode_steps[mode])
        req = self.stop_requested()
        if req is not None and self.model is not None and mode == ModeKeys.TRAIN:
            self.model.stop_training = True

    def _batch_end(self, logs) -> None:
        if self._profiler is not None:
            self._profiler.step_end()
        due = self._due()
        if not due:
            return
        for key, value in (logs or {}).items():
            if key == "outputs":
                continue
            coll = _K.LOSSES if key == "loss" or key.endswith("_loss") else _K.METRICS
            self._save(key, coll, np.asarray(value))
        if due & {_K.WEIGHTS, _K.BIASES, _K.ALL, _K.DEFAULT}:
            for name, v in self._variables:
                self._save(name, None, v)
        if self.mode == ModeKeys.TRAIN and due & {_K.OPTIMIZER_VARIABLES, _K.ALL}:
            for name, v in self._optimizer_variables():
                self._save(name, None, v)

    @guarded()
    def on_train_batch_begin(self, batch, logs=None):
        self._batch_begin(ModeKeys.TRAIN)

    @guarded()
    def on_train_batch_end(self, batch, logs=None):
        self._batch_end({**(logs or {}), "batch": batch})

    @guarded()
    def on_test_batch_begin(self, batch, logs=None):
        self._batch_begin(ModeKeys.EVAL)

    @guarded()
    def on_test_batch_end(self, batch, logs=None):
        self._batch_end({**(logs or {}), "batch": batch})

    @guarded()
    def on_predict_batch_begin(self, batch, logs=None):
        self._batch_begin(ModeKeys.PREDICT)

    @guarded()
    def on_predict_batch_end(self, batch, logs=None):
        self._batch_end({"batch": batch})

    def on_epoch_begin(self, epoch, logs=None):
        if self._profiler is not None:
            self._profiler.span_start("epoch", "Epoch", "Epoch", {"epoch": str(epoch)})

    def on_epoch_end(self, epoch, logs=None):
        if self._profiler is not None:
            self._profiler.span_end("epoch")

    def on_train_begin(self, logs=None):
        self._in_fit = True

    def on_train_end(self, logs=None):
        self._in_fit = False
        self._write_held()

    def on_test_end(self, logs=None):
        if not self._in_fit:  # validation inside fit is written with the training steps
            self._write_held()

    def on_predict_end(self, logs=None):
        self._write_held()

    # ---------------------------------------------------------------- custom loops
    def wrap_optimizer(self, optimizer):
        """Kept for 1.0.34's scripts: Keras 3 gradients are captured without wrapping the
        optimizer (inside ``fit``) or through ``wrap_tape`` (custom loops); returns ``optimizer``."""
        return optimizer

    def wrap_tape(self, tape):
        """Save the loss, weights and gradients of each ``tape.gradient`` call of an eager loop.

        Each ``with tape:`` block starts a step (in the hook's mode; TRAIN when none was set).
        Inside a ``tf.function`` the values are symbolic and nothing is saved (as 1.0.34).
        """
        import tensorflow as tf

        if not isinstance(tape, tf.GradientTape):
            raise SMDebugTypeError(f"wrap_tape expects a tf.GradientTape, got {type(tape).__name__}")
        push, gradient = tape._push_tape, tape.gradient
        hook = self

        def _push_tape():
            if not hook._tape_in_step:
                hook._tape_in_step = True
                hook._tape_step()
            return push()

        def _gradient(target, sources, *args, **kwargs):
            grads = gradient(target, sources, *args, **kwargs)
            hook._tape_in_step = False
            hook._tape_record(target, sources, grads)
            return grads

        tape._push_tape = _push_tape
        tape.gradient = _gradient
        return tape

    @guarded()
    def _tape_step(self) -> None:
        if self.mode == ModeKeys.GLOBAL:
            self.set_mode(ModeKeys.TRAIN)
        self._begin_step()
        self.stop_requested()

    @guarded()
    def _tape_record(self, target, sources, grads) -> None:
        import tensorflow as tf

        if not self._due() or not hasattr(target, "numpy"):
            return
        if np.size(_numpy(target)) == 1:
            self._save("loss", _K.LOSSES, target)
        for v, g in zip(tf.nest.flatten(sources), tf.nest.flatten(grads)):
            if g is None or not hasattr(v, "path"):
                continue
            wname = names.tape_weight_name(v)
            self._save(wname, _K.BIASES if names.is_bias(wname) else _K.WEIGHTS, v)
            self._save(names.gradient_name(v), _K.GRADIENTS, tf.convert_to_tensor(g))

    # ---------------------------------------------------------------- user tensors
    @guarded()
    def save_tensor(self, tensor_name, tensor_value, collections_to_write=CollectionKeys.DEFAULT) -> None:
        super().save_tensor(tensor_name, _numpy(tensor_value), collections_to_write)

    def _write_held(self) -> None:
        for h in self._replicas:
            h._write_held()
        super()._write_held()

    def close(self) -> None:
        for h in self._replicas:  # each leaves its done-file; the chief then marks the end
            h.close()
        for m in self._models:
            try:
                capture.uninstall(m)
            except Exception:  # noqa: BLE001 - the model is being torn down
                logger.debug("smdebug: could not restore the model's functions", exc_info=True)
        super().close()
        if self._profiler is not None:
            self._profiler.close()
