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

The same on Keras' jax and torch backends, under the same names (what differs is in
``backends.py``; custom loops and MirroredStrategy are TensorFlow's only).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import keras
import numpy as np

from smdebug.core.config.collection import CollectionKeys
from smdebug.core.config.hook_options import HookOptions, hook_init
from smdebug.core.engine.arguments import check_save_tensor
from smdebug.core.engine.guard import guarded
from smdebug.core.output.locations import CHIEF_WORKER
from smdebug.exceptions import SMDebugTypeError
from smdebug.modes import ModeKeys
from smdebug.tensorflow import backends, capture, names
from smdebug.tensorflow.collection import TF_COLLECTIONS
from smdebug.tensorflow.device import KerasDevice, log_collection
from smdebug.tensorflow.profiling import keras_profiling_for
from smdebug.tensorflow.replicas import Replica, tf_config_worker
from smdebug.tensorflow.stop import KerasStop
from smdebug.tensorflow.tape import CustomLoop, record
from smdebug.tensorflow.variables import ModelVariables, optimizer_variables

__all__ = ["KerasHook"]

logger = logging.getLogger("smdebug")

_K = CollectionKeys
_CAPTURED = {_K.GRADIENTS, _K.LAYERS}


def _on_batch_begin(mode: ModeKeys) -> Callable[..., None]:
    def on_batch_begin(self: KerasHook, batch: Any, logs: Any = None) -> None:
        self._batch_begin(mode)

    return on_batch_begin


def _on_batch_end(with_logs: bool) -> Callable[..., None]:
    def on_batch_end(self: KerasHook, batch: Any, logs: Any = None) -> None:
        self._batch_end({**(logs or {}), "batch": batch} if with_logs else {"batch": batch})

    return on_batch_end


@dataclass(kw_only=True)
class KerasHookOptions(HookOptions):
    """The KerasHook's options: every hook's, and its own (keyword-only)."""

    profiler_config: Any = None


class KerasHook(keras.callbacks.Callback, KerasDevice):
    """Saves a Keras model's tensors while it trains: ``model.fit(..., callbacks=[hook])``.

    Also a callback of ``evaluate`` and ``predict``. The hook stays open across calls; it writes
    what it holds at the end of each and marks the end of training at ``hook.close()`` (or when
    the program exits).
    """

    collection_defaults = TF_COLLECTIONS
    make_adapter = staticmethod(backends.make_adapter)  # TF tensors on TensorFlow, numpy arrays on jax/torch

    @hook_init(KerasHookOptions)
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        o = KerasHookOptions.from_call(type(self).__name__, args, kwargs)
        keras.callbacks.Callback.__init__(self)
        self._profiler_config = o.profiler_config  # a smdebug.profiler.ProfilerConfig, or None: the config file
        KerasDevice.__init__(self, **o.kwargs())

    def _configure(self, options: Any) -> None:
        self._options = options
        super()._configure(options)
        self._profiler = keras_profiling_for(getattr(self, "_profiler_config", None), self.out_dir)
        self._replicas: list = []  # Replica hooks of the other devices (MirroredStrategy, "all")
        self._n_replicas = 1
        self._chief = True
        self._stash = capture.Stash(capture.HostValues())  # one HostValues for every thread (jax)
        self._variables: list = []  # Watched model variables, read at the end of a saved step
        self._model_vars: list = []  # ModelVariables of each registered model
        self._optimizer_vars: dict = {}  # id(optimizer) -> its Watched variables
        self._models: list = []
        self._in_fit = False
        self._stop = KerasStop(self.stop_watcher)  # a rule's stop request (see stop.py)
        self._loop = CustomLoop(self._tape_begin, self._tape_gradient, self._optimizer_applied)  # see tape.py
        self._capture_colls: set = set()  # collections whose regexes match gradients or layers
        cannot = backends.limits()
        if cannot:  # one warning, when the hook is made
            logger.warning(
                "smdebug: on Keras' %s backend the KerasHook cannot save %s", backends.name(), "; ".join(cannot)
            )

    # ---------------------------------------------------------------- collections
    def _wants(self, coll: str) -> bool:
        return self.save_all or coll in self.include_collections or _K.ALL in self.include_collections

    def _assign(self, name: str, coll: str) -> None:
        for h in (self, *self._replicas):
            h.assign(name, coll)

    def _save(self, name: str, coll: str | None, value: Any, per_replica: bool = False) -> None:
        """Save ``value`` in every writing replica; ``per_replica``: its first axis is the replica."""
        if per_replica:
            value = backends.to_numpy(value)
            for i, h in enumerate((self, *self._replicas)):
                h.save_value(name, coll, value[i])
        else:
            value = backends.as_value(value)
            for h in (self, *self._replicas):
                h.save_value(name, coll, value)

    # ---------------------------------------------------------------- workers
    def _get_worker_name(self) -> str:
        return tf_config_worker() or CHIEF_WORKER

    def _get_num_workers(self) -> int:
        return max(self._n_replicas, 1)

    @property
    def writes(self) -> bool:
        return not self.dry_run and (self.save_all_workers or self._chief)

    def _setup_replicas(self, model: Any) -> None:
        """Under MirroredStrategy, workers are the devices (1.0.34's GPU naming,
        ``/job:localhost/replica:0/task:0/device:CPU:0``); the hook writes the first, and with
        include_workers="all" one Replica per other device."""
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
            self._replicas = [Replica(self._options, d, len(devices)) for d in devices[1:]]
            for h in self._replicas:
                h.set_mode(self.mode)

    def _due(self) -> set:
        return {c.name for c in self._collections_for_step()}

    # ---------------------------------------------------------------- model
    def set_model(self, model: Any) -> None:
        super().set_model(model)
        self._register_model(model)

    def register_model(self, model: Any) -> None:
        """Make ``model`` known to the hook before ``fit`` (1.0.34's method; ``fit`` registers
        the model it trains by itself). Its weights and biases are read at the end of each saved
        step of ``fit``/``evaluate``/``predict``, its gradients and layers captured in ``fit``,
        also when it is compiled after this call. In a custom loop the wrapped tape saves the
        weights it differentiates; layer inputs/outputs of eager loops are not captured."""
        if not isinstance(model, keras.Model):
            raise SMDebugTypeError(f"register_model expects a keras.Model, got {type(model).__name__}")
        self._register_model(model)

    @guarded()
    def _register_model(self, model: Any) -> None:
        if model not in self._models:
            self._models.append(model)
            self._model_vars.append(ModelVariables(model))
            self._setup_replicas(model)
            self._refresh_variables()
        if getattr(model, "optimizer", None) is None:
            return  # not compiled yet: captured once fit sets it as the callbacks' model
        top = model.name
        # a collection's regex sees the captured tensors too (``include("dense_1/")``: its gradients)
        layers = model._flatten_layers(include_self=False, recursive=True)
        grad_probes = [names.gradient_name(v, top) for v in model.trainable_weights] or [
            f"gradients/{la.name}/{var}Grad" for la in layers for var in ("kernel", "bias")
        ]  # not built yet
        by_regex_g = self._regex_collections(grad_probes)
        by_regex_l = self._regex_collections([f"{la.name}/{io}" for la in layers for io in ("inputs", "outputs")])
        self._capture_colls |= by_regex_g | by_regex_l
        want_grads = self._wants(_K.GRADIENTS) or bool(by_regex_g)
        want_layers = self._wants(_K.LAYERS) or bool(by_regex_l)
        if self._wants(_K.GRADIENTS):
            for v in model.trainable_weights:
                self._assign(names.gradient_name(v, top), _K.GRADIENTS)
        if want_grads or want_layers:
            capture.install(
                model,
                self._stash,
                gradients=want_grads,
                layers=want_layers,
                grad_name=lambda v, _top=top: names.gradient_name(v, _top),
                wants_capture=self._wants_capture,
                receive=self._receive,
            )

    def _refresh_variables(self) -> None:
        """Pick up variables Keras built since the last look (a model built inside ``fit``)."""
        for mv in self._model_vars:
            for w in mv.refresh():
                self._assign(w.name, w.collection)
                self._variables.append(w)

    def _regex_collections(self, probes: list) -> set:
        """The saved collections whose regexes match one of ``probes`` (tensor names)."""
        colls = self.collection_manager.get_collections()
        return {
            name
            for name in self.include_collections
            if (c := colls.get(name)) is not None and c.include_regex and any(c.matches(p) for p in probes)
        }

    @guarded(default=False)
    def _wants_capture(self, mode: str) -> bool:
        """Whether the step about to run saves gradients or layers, or a collection whose regex
        matches them (then the instrumented function runs)."""
        return bool(self._due() & (_CAPTURED | self._capture_colls))

    @guarded()
    def _receive(self, mode: str, captured: dict) -> None:
        split = self._n_replicas > 1
        for name, value in captured.items():
            self._save(name, _K.GRADIENTS if name.startswith("gradients/") else _K.LAYERS, value, per_replica=split)

    def _optimizer_variables(self, optimizer: Any) -> list:
        """``optimizer``'s own variables (looked up once it is built)."""
        found = self._optimizer_vars.get(id(optimizer))
        if not found:
            found = self._optimizer_vars[id(optimizer)] = optimizer_variables(optimizer)
            for w in found:
                self._assign(w.name, w.collection)
        return found

    def _save_watched(self, watched: Any) -> None:
        """Save the variables that a collection due at this step holds (by name or regex)."""
        plan_at = self.planner.plan_at_step
        mode, step = self.mode, self.mode_steps[self.mode]
        due = [w for w in watched if plan_at(w.name, mode, step) is not None]
        if due:
            for m in self._models:  # on jax, the step's state back into the variables first
                backends.sync_state(m)
        for w in due:
            self._save(w.name, None, w.var)

    # ---------------------------------------------------------------- callback
    def _batch_begin(self, mode: ModeKeys) -> None:
        self._begin_steps(mode)
        self._stop.at_batch(self.model, mode, self._in_fit)  # outside the guard: also on a disabled hook

    @guarded()
    def _begin_steps(self, mode: ModeKeys) -> None:
        for h in (self, *self._replicas):
            h.begin_batch(mode, self._in_fit)
        if self._profiler is not None:
            self._profiler.batch_begin(mode, self.mode_steps[mode])

    @guarded()
    def _batch_end(self, logs: Any) -> None:
        if self._profiler is not None:
            self._profiler.batch_end()
        if logs and "loss" in logs:  # the non-finite watch: its first NaN/inf loss saves this step and the next few
            self._watch_value("loss", logs["loss"])
        if not self._due():
            return
        for key, value in (logs or {}).items():
            if key != "outputs":
                self._save(key, log_collection(key), np.asarray(value))
        self._refresh_variables()
        self._save_watched(self._variables)
        if self.mode == ModeKeys.TRAIN and self._models:
            opt = getattr(self._models[0], "optimizer", None)
            if opt is not None:
                self._save_watched(self._optimizer_variables(opt))

    # Keras' batch callbacks: a step of the batch's mode begins (and a rule's stop request is looked
    # for, on a disabled hook too); at its end the batch's logs are saved (predict's: ``batch`` alone)
    on_train_batch_begin = _on_batch_begin(ModeKeys.TRAIN)
    on_test_batch_begin = _on_batch_begin(ModeKeys.EVAL)
    on_predict_batch_begin = _on_batch_begin(ModeKeys.PREDICT)
    on_train_batch_end = on_test_batch_end = _on_batch_end(with_logs=True)
    on_predict_batch_end = _on_batch_end(with_logs=False)

    def on_epoch_begin(self, epoch: Any, logs: Any = None) -> Any:
        if self._profiler is not None:
            self._profiler.epoch_begin(epoch)

    @guarded()
    def on_epoch_end(self, epoch: Any, logs: Any = None) -> Any:
        """The epoch's logs (loss, metrics, ``val_loss``, ``val_*``) go to the epoch's last TRAIN
        step, whatever the save schedule (as 1.0.34); a name that step saved already keeps its
        value (the same: Keras' epoch logs are its last batch's), and ``batch`` is not saved."""
        if self._profiler is not None:
            self._profiler.epoch_end()
        logs = {k: np.asarray(v) for k, v in (logs or {}).items() if k not in ("outputs", "batch")}
        for h in (self, *self._replicas):
            h.save_epoch_logs(logs)

    def on_train_begin(self, logs: Any = None) -> Any:
        self._in_fit = True

    def on_train_end(self, logs: Any = None) -> Any:
        self._in_fit = False
        if self._profiler is not None:
            self._profiler.train_end()
        self._write_held()

    def on_test_end(self, logs: Any = None) -> Any:
        if not self._in_fit:  # validation inside fit is written with the training steps
            self._write_held()

    def on_predict_end(self, logs: Any = None) -> Any:
        self._write_held()

    # ---------------------------------------------------------------- custom loops
    def wrap_optimizer(self, optimizer: Any) -> Any:
        """In a custom loop (``wrap_tape``), save the optimizer's own variables after each update
        of a step that saves (``optimizer_variables``); inside ``fit`` they are read at the end of
        the batch, wrapped or not. Returns ``optimizer``."""
        return self._loop.wrap_optimizer(optimizer)

    def wrap_tape(self, tape_: Any) -> Any:
        """Save the loss, weights and gradients of each ``tape.gradient`` call of an eager loop.

        Each ``with tape:`` block starts a step (in the hook's mode; TRAIN when none was set).
        Inside a ``tf.function`` the values are symbolic and nothing is saved (as 1.0.34).
        After a rule's stop request, the next eager ``with`` block (outside ``fit``) raises
        TrainingStopRequested before its step starts (see ``stop.py``).
        """
        return self._loop.wrap_tape(tape_)

    def _tape_begin(self) -> None:
        """A wrapped tape's ``with`` block starts a step; after a rule's stop request, an eager one
        outside ``fit`` raises TrainingStopRequested before it does (see stop.py)."""
        import tensorflow as tf

        if not self._in_fit and tf.executing_eagerly():
            self._stop.at_tape_step(self._write_held)
        self._tape_step()

    @guarded()
    def _tape_step(self) -> None:
        if self.mode == ModeKeys.GLOBAL:  # TRAIN when the hook has no mode yet
            self.set_mode(ModeKeys.TRAIN)
        self._begin_step()

    @guarded()
    def _tape_gradient(self, target: Any, sources: Any, grads: Any) -> None:
        """After ``tape.gradient``, on a step that saves: the loss, weights and gradients (tape.record)."""
        if self._due() and hasattr(target, "numpy"):
            record(self._save, target, sources, grads)

    @guarded()
    def _optimizer_applied(self, optimizer: Any) -> None:
        """After an eager update outside ``fit``: the optimizer's variables, on a step that saves."""
        if not self._in_fit and self._due():
            self._save_watched(self._optimizer_variables(optimizer))

    # ---------------------------------------------------------------- user tensors
    @guarded(check=check_save_tensor)
    def save_tensor(
        self, tensor_name: Any, tensor_value: Any, collections_to_write: Any = CollectionKeys.DEFAULT
    ) -> None:
        super().save_tensor(tensor_name, backends.to_numpy(tensor_value), collections_to_write)

    def _write_held(self) -> None:
        for h in self._replicas:
            h.write_held()
        super()._write_held()

    def close(self) -> None:
        self._write_held()
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
