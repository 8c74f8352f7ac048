"""BaseHook: everything a framework hook does that does not depend on the framework.

Steps and modes, the save API (save_tensor, save_scalar), handing saved steps to the writer,
the collections file, the end of training and stop requests. It is composed of a Planner
(core.engine.save_plan: what is saved at a step), a StepBuffer (core.engine.step_buffer: what the step
holds), a StepWriter (core.output.step_writer: the writer thread) and a TensorAdapter (core.tensors.adapter:
the framework's tensors). How a framework's Hook uses it: see the docstring of smdebug.core.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from smdebug.core.config.collection import Collection, CollectionKeys
from smdebug.core.config.collection_defaults import CollectionDefaults
from smdebug.core.config.hook_options import HookOptions, hook_init, tensorboard_dir_for
from smdebug.core.config.reduction_config import ReductionConfig
from smdebug.core.config.save_config import SaveConfig
from smdebug.core.engine import active_hook
from smdebug.core.engine.arguments import check_mode, check_save_tensor, scalar_value
from smdebug.core.engine.end_of_job import SavedSteps, mark_end_of_training, say_close_line
from smdebug.core.engine.guard import guarded, propagate_default
from smdebug.core.engine.held_step import HeldStep
from smdebug.core.engine.module_tensors import ModuleTensors, tensors_in
from smdebug.core.engine.nonfinite import NonFiniteWatch, VerdictWait, is_finite_number
from smdebug.core.engine.resume import resume_numbering
from smdebug.core.engine.save_plan import Planner, included_collections
from smdebug.core.engine.step_buffer import StepBuffer
from smdebug.core.engine.stop_request import StopRequest, StopRequestWatcher
from smdebug.core.modes import ModeKeys
from smdebug.core.output.locations import CHIEF_WORKER, END_OF_JOB, collections_file_name, is_chief_worker
from smdebug.core.output.step_writer import StepWriter
from smdebug.core.tensors.adapter import NumpyAdapter, TensorAdapter
from smdebug.exceptions import SMDebugRuntimeError, SMDebugTypeError, SMDebugValueError

__all__ = ["BaseHook"]

logger = logging.getLogger("smdebug")
_H = TypeVar("_H", bound="BaseHook")


class BaseHook:
    GRADIENT_PREFIX = "gradient/"
    SCALAR_PREFIX = "scalar/"
    INPUT_TENSOR_SUFFIX = "_input_"
    OUTPUT_TENSOR_SUFFIX = "_output_"
    INIT_STEP = -1
    collection_defaults = CollectionDefaults(created={CollectionKeys.ALL: None, CollectionKeys.DEFAULT: None})
    make_adapter: Callable[[], TensorAdapter] = NumpyAdapter  # an adapter class, or a function picking one

    @hook_init(HookOptions)
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._configure(HookOptions.from_call(type(self).__name__, args, kwargs))
        active_hook.set_hook(self)
        active_hook.close_at_exit(self)

    def _configure(self, o: HookOptions) -> None:
        from smdebug.storage import is_remote, open_store

        if o.out_dir is None:
            raise SMDebugRuntimeError("out_dir is a required argument of the hook")
        out_dir = str(o.out_dir)
        self.out_dir = out_dir if is_remote(out_dir) else os.path.abspath(os.path.expanduser(out_dir))
        self.store = open_store(self.out_dir)
        if self.store.exists(END_OF_JOB):
            raise SMDebugRuntimeError(
                f"{self.out_dir} holds a finished trial ({END_OF_JOB} exists): "
                "give the hook a new out_dir, so that two jobs' tensors are not mixed"
            )
        if o.include_workers not in ("one", "all"):
            raise SMDebugValueError(f"include_workers={o.include_workers!r} must be 'one' or 'all'")
        self.tensorboard_dir = tensorboard_dir_for(o.export_tensorboard, o.tensorboard_dir, self.out_dir)
        self.export_tensorboard = bool(o.export_tensorboard or o.tensorboard_dir)
        self.dry_run = bool(o.dry_run)
        self.save_all = bool(o.save_all)
        self.save_all_workers = o.include_workers == "all"
        self.include_workers = o.include_workers
        defaults = self.collection_defaults
        self.collection_manager = cm = defaults.manager()
        self.include_collections = included_collections(
            cm, defaults, o.include_collections, o.include_regex, self.save_all
        )
        self.save_config = SaveConfig.parse(o.save_config)
        self.reduction_config = (
            o.reduction_config if o.reduction_config is not None else ReductionConfig(save_raw_tensor=True)
        )
        if not isinstance(self.reduction_config, ReductionConfig):
            raise SMDebugTypeError(f"reduction_config={o.reduction_config!r} must be a ReductionConfig")
        self.include_regex = o.include_regex
        self.planner = Planner(
            cm,
            defaults,
            self.include_collections,
            self.save_config,
            self.reduction_config,
            tensorboard=bool(self.tensorboard_dir),
        )
        self.adapter: TensorAdapter = self.make_adapter()
        self.buffer = StepBuffer(self.adapter)
        self.init_step = self.INIT_STEP
        self.step = self.init_step
        self.mode = ModeKeys.GLOBAL
        self.mode_steps = {ModeKeys.GLOBAL: self.init_step}
        self._rec_mode, self._rec_mode_step = ModeKeys.GLOBAL, self.init_step  # the step being recorded
        self.last_saved_step: int | None = None
        self._handed_step: int | None = None  # the last global step handed to the writer
        self._step_saves = False
        self._custom: dict = {}  # save_tensor before the first step
        self.module_tensors = ModuleTensors()
        self._module_names = self.module_tensors.names  # framework module -> its name in tensor names
        self.exported_collections = False
        self.disabled = False
        self.propagate_errors = propagate_default()
        self.worker = self._get_worker_name()
        self._writer: StepWriter | None = None
        self._closed = False
        self.stop_watcher = StopRequestWatcher(self.store)
        self.nonfinite = NonFiniteWatch()  # the first NaN/inf loss: that step and the next few saved in full
        self._verdicts = VerdictWait.from_env()  # under smdebug run: the live rules' progress
        self._saved = SavedSteps()  # the steps handed to the writer, for the close line
        self._training_ended = False  # see _end_training_run
        self._resume_checked = False  # see _resume
        self.resumed_from: int | None = None  # the last step the folder held of this worker
        self._state_file: Any = None  # the checkpoint folder's training state (core.engine.resume)
        logger.info("smdebug: saving to %s", self.out_dir)

    @classmethod
    def create_from_json_file(cls: type[_H], json_file_path: str | None = None) -> _H | None:
        """A hook configured by SageMaker's hook JSON: ``json_file_path``, else
        $SMDEBUG_CONFIG_FILE_PATH, else /opt/ml/input/config/debughookconfig.json; None when no
        file applies."""
        from smdebug.core.engine.from_json import create_hook

        return create_hook(cls, json_file_path)

    # ---------------------------------------------------------------- framework-specific
    def _get_worker_name(self) -> str:
        return CHIEF_WORKER

    def _get_num_workers(self) -> int:
        return 1

    def _writing_workers(self) -> int:
        """How many workers write into the folder (include_workers="one": the chief alone)."""
        return self._get_num_workers() if self.save_all_workers else 1

    def _is_tensor(self, value: Any) -> bool:
        """Whether a leaf of a layer's inputs / outputs is a tensor the hook saves."""
        return isinstance(value, np.ndarray)

    @property
    def prepared_collections(self) -> bool:
        return self.planner.prepared

    @property
    def writes(self) -> bool:
        """Whether this process writes (with include_workers='one', only the chief does)."""
        return not self.dry_run and (self.save_all_workers or is_chief_worker(self.worker))

    def _step_writer(self) -> StepWriter:
        if self._writer is None:
            self._writer = StepWriter(
                self.out_dir, self.worker, self.tensorboard_dir, adapter=self.adapter, store=self.store
            )
        return self._writer

    def open_writer_gate(self) -> None:
        """Tell the writer thread that training is in a stretch that hardly needs the GIL (see
        StepWriter.open_gate); from the first call on, handed-over steps wait for the next."""
        if self._writer is not None:
            self._writer.open_gate()

    # ---------------------------------------------------------------- collections
    def get_collection(self, name: str, create: bool = True) -> Collection:
        return self.collection_manager.get(name, create=create)

    def get_collections(self) -> dict[str, Collection]:
        return self.collection_manager.get_collections()

    def add_collection(self, collection: Collection) -> None:
        if not isinstance(collection, Collection):
            raise SMDebugTypeError(f"collection must be a Collection, not {type(collection).__name__}")
        self.collection_manager.add(collection)

    def _name_modules(self, top: str, model: Any, named_modules: Any) -> None:
        """Name a registered model ``top`` and its ``(name, module)`` descendants (ModuleTensors)."""
        self.module_tensors.add_model(top, model, named_modules)

    def _module_name(self, module: Any) -> str:
        return self.module_tensors.name_of(module)

    def _collections_for_step(self) -> set:
        if not self.planner.prepared:
            self.planner.prepare(self._module_name, strict=self.propagate_errors)
        return self.planner.due(self.mode, self.mode_steps[self.mode])

    def saving_this_step(self) -> bool:
        due = self.planner.due_now  # worked out once a step (a callback of every layer asks)
        return bool(due if due is not None else self._collections_for_step())

    def should_save_tensor_or_collection(self, tensor_name: str, collection_name: str) -> bool:
        if not self.planner.prepared:
            return False
        c = self.collection_manager.get(collection_name)
        if c in self._collections_for_step():
            return not c.include_regex or c.matches(tensor_name)
        return bool(self.planner.collections_with(tensor_name) & self._collections_for_step())

    # ---------------------------------------------------------------- steps and modes
    @guarded(check=lambda self, mode: check_mode(mode))
    def set_mode(self, mode: ModeKeys) -> None:
        if mode != self.mode:
            self._end_step()  # what the current step saved keeps the current step's mode
        self.mode = mode
        self.mode_steps.setdefault(mode, self.init_step)
        self.planner.new_step()

    def _resume(self) -> None:
        """Before the first step: continue after the steps this worker already wrote into the
        folder (a resumed job, core.engine.resume), so that none is written twice."""
        self._resume_checked = True
        if not self.dry_run:
            self._state_file = resume_numbering(self)

    def _begin_step(self) -> None:
        """End the current step and start the next one (called by the framework glue)."""
        if not self._resume_checked:
            self._resume()
        self._end_step()
        self._next_step()
        self.planner.force = self.nonfinite.forcing(self.step)
        self.buffer.new_step()
        self._step_saves = bool(self._collections_for_step())
        if self._custom:
            self._save_custom_tensors()

    def _next_step(self) -> None:
        """Count the next global step, in the current mode: what is recorded from now on is in it."""
        self.step += 1
        self.mode_steps[self.mode] += 1
        if self.mode != ModeKeys.GLOBAL:
            self.mode_steps[ModeKeys.GLOBAL] = self.step
        self._rec_mode, self._rec_mode_step = self.mode, self.mode_steps[self.mode]
        self.planner.new_step()

    def _end_step(self) -> None:
        """Hand the step's records to the writer; scalars cached so far go with a saved step."""
        if self.buffer.records or (self._step_saves and self.buffer.scalars):
            self._flush_records()
        self._step_saves = False

    def _flush_records(self) -> None:
        if not self.writes:
            self.buffer.drop()
            return
        writer = self._step_writer()
        if self._writer_failed(writer):
            self.buffer.drop()
            return
        if max(self.step, 0) == self._handed_step:
            # saved after its step went to the writer (set_mode then save_scalar then close; a stop
            # request mid-step): the next step, as a step is written once (FileWriter refuses to replace one)
            self._next_step()
            logger.info(
                "smdebug: what was saved after step %s was written is step %s (%s step %s)",
                self.step - 1,
                self.step,
                self.mode.name,
                self.mode_steps[self.mode],
            )
        rec = self.buffer.take(max(self.step, 0), self._rec_mode, max(self._rec_mode_step, 0))
        if rec:
            self.last_saved_step = self._handed_step = rec.step
            self._saved.add(rec.step, (r.name for r in rec.records))
            writer.submit(rec)
            if self._state_file is not None:
                self._state_file.write(self)
            if not self.exported_collections:
                self.export_collections()

    def _check_open(self, name: str) -> None:
        if self._closed:
            raise SMDebugRuntimeError(
                f"the hook is closed: {name} is not saved (the trial in {self.out_dir} "
                "is complete; make a new hook for more)"
            )

    def _writer_failed(self, writer: StepWriter) -> bool:
        """An error on the writer thread (logged there once) disables the hook like an error on
        the training thread, or is raised here when errors propagate."""
        if not writer.errors:
            return False
        if self.propagate_errors:
            raise writer.errors[0]
        self.disabled = True
        return True

    # ---------------------------------------------------------------- saving
    def _save_for_tensor(self, tensor_name: str, value: Any, check_before_write: Any = True) -> bool:
        """Save a tensor as its plan at this step says; whether it has one (is saved at this step)."""
        self._check_open(tensor_name)
        planner = self.planner
        if check_before_write:
            plan = planner.known_plan(tensor_name)
            if plan is planner.UNKNOWN:
                if not planner.prepared:
                    planner.prepare(self._module_name, strict=self.propagate_errors)
                plan = planner.plan_at_step(tensor_name, self.mode, self.mode_steps[self.mode])
        else:
            colls = planner.collections_with(tensor_name)
            plan = planner.plan(tensor_name, colls) if colls else None
        if plan is None:
            return False
        if self.dry_run:
            logger.debug("smdebug dry run: would save %s at step %s", tensor_name, self.step)
        elif self.writes:  # a worker that does not write (include_workers="one") copies nothing
            self.buffer.add(tensor_name, value, plan)
        return True

    def _save_deferred(self, named_values: Any) -> None:
        """Save ``(name, value)`` pairs whose values change only after the step's forward and
        backward (parameters): the adapter may copy them on a background thread meanwhile; the
        glue calls ``adapter.sync()`` before anything can change them."""
        self.adapter.begin_deferred()
        try:
            for name, value in named_values:
                self._save_for_tensor(name, value)
        finally:
            self.adapter.end_deferred()

    def _write_indexed(self, module_name: str, value: Any, suffix: str) -> None:
        """Save module inputs/outputs as <module><suffix><i>, numbering every tensor of the step."""
        values = tensors_in(value, self._is_tensor)
        if values:
            base = module_name + suffix
            self.module_tensors.save(
                base, values, self.buffer.number(base, len(values)), self.planner.epoch, self._save_for_tensor
            )

    def save_scalar(self, name: str, value: Any, sm_metric: bool = False, timestamp: float | None = None) -> None:
        """Save a scalar as 'scalar/<name>' with the next saved step (the trial keeps the last value
        saved for a name until then; TensorBoard gets every value, at the step it was saved at); at
        close, scalars left over go with the last step, or with a step of their own when that
        step is already written. A name that is not a string or a value that is not one number
        raises SMDebugTypeError."""
        arr = scalar_value(self.adapter, name, value, timestamp)
        self._add_scalar(self.SCALAR_PREFIX + name, arr, timestamp if timestamp else time.time())

    @guarded()
    def _add_scalar(self, name: str, arr: Any, wall_time: float) -> None:
        self._check_open(name)
        self.buffer.add_scalar(name, arr, wall_time, self.step if self.step >= 0 else None)

    @guarded(check=check_save_tensor)
    def save_tensor(
        self,
        tensor_name: str,
        tensor_value: Any,
        collections_to_write: str | list[str] | tuple[str, ...] | set[str] = CollectionKeys.DEFAULT,
    ) -> None:
        """Save a tensor of your own at the current step, in the given collection(s), when their
        schedule saves this step (before the first step: at the first step)."""
        self._check_open(tensor_name)
        names = [collections_to_write] if isinstance(collections_to_write, str) else list(collections_to_write)
        self.planner.add_tensor(tensor_name, [self.collection_manager.get(n, create=True) for n in names])
        if self.planner.prepared and self.step >= 0:
            self._save_for_tensor(tensor_name, tensor_value, check_before_write=not self._training_ended)
        else:
            self._custom[tensor_name] = (tensor_value, names)

    def _save_custom_tensors(self) -> None:
        custom, self._custom = self._custom, {}
        for name, (value, colls) in custom.items():
            self.save_tensor(name, value, colls)

    # ---------------------------------------------------------------- non-finite values
    def _watch_value(self, name: str, value: Any) -> None:
        """Show the non-finite watch a value the step computed anyway (the loss): when it is the
        first NaN or infinite one, this step and the next ``nonfinite.after`` are saved in full,
        whatever the save config says (core.engine.nonfinite). Cheap: one look at a scalar."""
        watch = self.nonfinite
        if watch.first_step is not None or not watch.on or self.step < 0 or self.disabled:
            return
        self._seen_nonfinite(name, self._finite(name, value), self.step)

    def _finite(self, name: str, value: Any) -> bool | None:
        """Whether ``value`` holds only finite numbers; None when it cannot be told without waiting
        (a framework reading a device value late says later, through ``_seen_nonfinite``)."""
        return is_finite_number(value)

    def _seen_nonfinite(self, name: str, finite: bool | None, step: int) -> None:
        if not self.nonfinite.see(name, finite, step, seen_at=self.step):
            return
        logger.warning(
            "smdebug: %s is not finite at step %s (%s step %s): saving step %s and the next %s in full, "
            "whatever the save config says",
            name,
            step,
            self._rec_mode.name,
            self._rec_mode_step,
            self.step,
            self.nonfinite.after,
        )
        held = {r.name for r in self.buffer.records}  # what the step saved before it was forced
        self.planner.force = True
        self.planner.new_step()
        if self._collections_for_step():
            self._step_saves = True
            start = len(self.buffer.records)
            self._save_forced_step_start(held)
            self.buffer.hoist(start)

    def _save_forced_step_start(self, held: set[str]) -> None:
        """What a step saves when it starts (a framework's parameters), saved now, but for the names
        in ``held`` (saved already): the watch made this step save everything after it started."""

    # ---------------------------------------------------------------- stop requests
    def stop_requested(self) -> StopRequest | None:
        """A rule's request that training stop (see core.engine.stop_request), once: the framework glue
        calls this at each step boundary and ends training its own way when it gets one. The
        look at storage is rate limited; when a request is first seen, everything the hook
        holds is written before it is returned. Works on a disabled hook too. After the first
        non-finite step, under ``smdebug run`` with rules, the live rules judge that step first."""
        if self.nonfinite.pending_verdict is not None:
            self._await_verdict()
        req = self.stop_watcher.take()
        if req is not None:
            self._write_held()
        return req

    def _await_verdict(self) -> None:
        """Write the first non-finite step and hold training until the live rules judged it
        (core.engine.nonfinite.VerdictWait); a stop request ends the wait."""
        step, self.nonfinite.pending_verdict = self.nonfinite.pending_verdict, None
        if step is None or not self._verdicts.path or self.disabled:
            return
        self._write_held()
        how = self._verdicts.wait(step, lambda: self.stop_watcher.check(force=True) is not None)
        if how == "timeout":
            logger.warning(
                "smdebug: the rules did not judge step %s within %g s; training goes on", step, self._verdicts.timeout
            )

    @guarded()
    def _end_training_run(self) -> None:
        """The framework ended its training run: what is held is written; what is saved from now
        on (save_scalar, save_tensor: a final accuracy, a test metric) goes to the step after the
        last one, whatever the schedule, written at close."""
        if self._training_ended:
            return
        self._write_held()  # (a framework's hook may write more of what it holds)
        self._begin_step()
        self._training_ended = True

    def _write_held(self) -> None:
        """End the current step and wait until the writer has written everything handed over (a
        stop request, the end of a training run). An error disables the hook, unless errors propagate."""
        try:
            self.adapter.sync()
            if not self.disabled:
                self._end_step()
            if self._writer is not None:
                self._writer.flush()
                self._writer_failed(self._writer)
        except Exception:
            if self.propagate_errors:
                raise
            self.disabled = True
            logger.exception("smdebug: could not write the steps held before stopping")

    # ---------------------------------------------------------------- held steps
    def hold_step(self) -> HeldStep:
        """Take the current step aside, still open (core.engine.held_step); the hook goes on with an
        empty buffer. Scalars waiting for a saved step stay with the held step if it saves, else
        they wait on."""
        held = HeldStep(self.buffer, self.step, self._rec_mode, self._rec_mode_step, self._step_saves)
        self.buffer = StepBuffer(self.adapter)
        if not held.saves:
            self.buffer.scalars, held.buffer.scalars = held.buffer.scalars, []
        self._step_saves = False
        return held

    def complete_held(self, held: HeldStep, add: Callable[[], object] | None = None) -> None:
        """Run ``add()`` with ``held`` as the current step (what it saves goes there), then hand
        ``held`` to the writer; the current step is left as it was. A held step that saves
        (``held.saves``, or ``add`` called :meth:`keep_step`) is written with its scalars alone, as
        the current step would be (``_end_step``)."""
        current = HeldStep(self.buffer, self.step, self._rec_mode, self._rec_mode_step, self._step_saves)
        last_before = self.last_saved_step
        self._enter_step(held)
        try:
            if add is not None and not self.disabled:
                add()
            if self.buffer.records or (self._step_saves and self.buffer.scalars):
                self._flush_records()
            else:
                current.buffer.scalars[:0] = self.buffer.scalars  # nothing saved: its scalars wait on
                self.buffer.scalars = []
        finally:
            saved = [s for s in (self.last_saved_step, last_before) if s is not None]
            self._enter_step(current)
            self.last_saved_step = max(saved) if saved else None

    def _enter_step(self, s: HeldStep) -> None:
        self.buffer, self.step, self._rec_mode, self._rec_mode_step = s.buffer, s.step, s.mode, s.mode_step
        self._step_saves = s.saves

    @property
    def recording_mode(self) -> ModeKeys:
        """The mode of the step being recorded: the mode it began in (``mode`` may have changed since)."""
        return self._rec_mode

    def keep_step(self) -> None:
        """Write the current step when it ends, with its scalars alone if it saves nothing else."""
        self._step_saves = True

    # ---------------------------------------------------------------- output files
    def export_collections(self) -> None:
        if not self.writes:
            return
        self.collection_manager.set_num_workers(self._writing_workers())
        self.collection_manager.export(self.out_dir, collections_file_name(self.worker), store=self.store)
        self.exported_collections = True

    def close(self) -> None:
        """End the last step, write everything, the collections file and the end-of-training
        marker. Runs also after an error disabled the hook: what was saved before is kept."""
        if self._closed:
            return
        self._closed = True
        try:
            self.adapter.sync()
            if not self.disabled:
                self._end_step()
                if self.buffer.scalars:
                    self._flush_records()
        except Exception:
            if self.propagate_errors:
                raise
            logger.exception("smdebug: could not save the last step")
        self.buffer.drop()
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.flush()
            writer.close()
            self._writer_failed(writer)
            if writer.failed_steps:
                logger.error(
                    "smdebug: %d step(s) of %s could not be written to %s (first: step %s)",
                    len(writer.failed_steps),
                    self.worker,
                    self.out_dir,
                    writer.failed_steps[0],
                )
        try:
            if self.writes:
                self.export_collections()
                mark_end_of_training(self.store, self.worker, self._writing_workers())
        except Exception:
            if self.propagate_errors:
                raise
            self.disabled = True
            logger.exception("smdebug: could not finish writing %s", self.out_dir)
        finally:
            self.adapter.shutdown()
        if self.writes:
            say_close_line(self, self._saved)

    def _cleanup(self) -> None:  # 1.0.34's name for close(), which its own code calls
        self.close()

    def __repr__(self) -> Any:
        return (
            f"<{type(self).__module__}.{type(self).__name__} out_dir={self.out_dir!r} step={self.step} "
            f"mode={self.mode.name} include_collections={self.include_collections}>"
        )
