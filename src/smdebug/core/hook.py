"""BaseHook: everything a framework hook does that does not depend on the framework.

Steps and modes, which collections are saved at a step, what is saved of a tensor (raw value,
reductions, shape, TensorBoard scalar / histogram), scalars, the collections file and the
end-of-training marker. A framework package adds only glue: when a step starts, which tensors
exist, and an adapter that copies and reduces its tensors.
"""

from __future__ import annotations

import logging
import os
import time

from smdebug.core.adapter import NumpyAdapter
from smdebug.core.collection import (
    NON_HISTOGRAM_COLLECTIONS,
    NON_REDUCTION_COLLECTIONS,
    SCALAR_COLLECTIONS,
    Collection,
    CollectionKeys,
)
from smdebug.core.collection_manager import CollectionManager
from smdebug.core.guard import guarded, propagate_default
from smdebug.core.locations import COLLECTIONS_PREFIX, DONE_SUFFIX, END_OF_JOB, done_key
from smdebug.core.modes import ALLOWED_MODES, ModeKeys
from smdebug.core.reduction_config import ReductionConfig
from smdebug.core.reductions import get_reduction_tensor_name
from smdebug.core.save_config import SaveConfig
from smdebug.core.step_writer import StepRecords, StepWriter
from smdebug.exceptions import (
    InvalidCollectionConfiguration,
    SMDebugRuntimeError,
    SMDebugTypeError,
    SMDebugValueError,
)

__all__ = ["BaseHook"]

logger = logging.getLogger("smdebug")
CHIEF_WORKER = "worker_0"


_NO_PLAN = object()


def tensorboard_dir_for(export_tensorboard, tensorboard_dir, out_dir):
    if tensorboard_dir is not None:
        return os.path.expanduser(tensorboard_dir) if "://" not in tensorboard_dir else tensorboard_dir
    if export_tensorboard:
        return out_dir.rstrip("/") + "/tensorboard"
    return None


class BaseHook:
    GRADIENT_PREFIX = "gradient/"
    SCALAR_PREFIX = "scalar/"
    INPUT_TENSOR_SUFFIX = "_input_"
    OUTPUT_TENSOR_SUFFIX = "_output_"

    def __init__(
        self,
        collection_manager: CollectionManager,
        default_include_collections,
        default_collections,
        out_dir=None,
        export_tensorboard=False,
        tensorboard_dir=None,
        dry_run=False,
        reduction_config=None,
        save_config=None,
        include_regex=None,
        include_collections=None,
        save_all=False,
        include_workers="one",
        init_step=-1,
        adapter=None,
    ):
        from smdebug.storage import is_remote, open_store

        if out_dir is None:
            raise SMDebugRuntimeError("out_dir is a required argument of the hook")
        out_dir = str(out_dir)
        self.out_dir = out_dir if is_remote(out_dir) else os.path.abspath(os.path.expanduser(out_dir))
        if open_store(self.out_dir).exists(END_OF_JOB):
            raise SMDebugRuntimeError(
                f"{self.out_dir} holds a finished trial ({END_OF_JOB} exists): "
                "give the hook a new out_dir, so that two jobs' tensors are not mixed"
            )
        if include_workers not in ("one", "all"):
            raise SMDebugValueError(f"include_workers={include_workers!r} must be 'one' or 'all'")
        self.tensorboard_dir = tensorboard_dir_for(export_tensorboard, tensorboard_dir, self.out_dir)
        self.export_tensorboard = bool(export_tensorboard or tensorboard_dir)
        self.dry_run = bool(dry_run)
        self.save_all = bool(save_all)
        self.save_all_workers = include_workers == "all"
        self.include_workers = include_workers
        self.collection_manager = collection_manager
        self._default_collections = set(default_collections)
        names = [include_collections] if isinstance(include_collections, str) else list(include_collections or [])
        self.include_collections = list(dict.fromkeys([*names, *default_include_collections]))
        self.save_config = SaveConfig.parse(save_config)
        self.reduction_config = reduction_config if reduction_config is not None else ReductionConfig(save_raw_tensor=True)
        if not isinstance(self.reduction_config, ReductionConfig):
            raise SMDebugTypeError(f"reduction_config={reduction_config!r} must be a ReductionConfig")
        self.include_regex = include_regex
        if include_regex:
            collection_manager.get(CollectionKeys.DEFAULT).include(include_regex)
            if CollectionKeys.DEFAULT not in self.include_collections:
                self.include_collections.append(CollectionKeys.DEFAULT)
        if self.save_all:
            collection_manager.get(CollectionKeys.ALL).include(".*")
            if CollectionKeys.ALL not in self.include_collections:
                self.include_collections.append(CollectionKeys.ALL)
        self.adapter = adapter or NumpyAdapter()
        self.init_step = init_step
        self.step = init_step
        self.mode = ModeKeys.GLOBAL
        self.mode_steps = {ModeKeys.GLOBAL: init_step}
        self.last_saved_step = None
        self.prepared_collections = False
        self._collections_to_save: set = set()
        self._colls_for_step: set | None = None
        self._tensor_colls: dict[str, frozenset] = {}
        self._plans: dict = {}
        self._step_plans: dict = {}  # tensor name -> plan (or None) for the collections of this step
        self._step_plans_for: frozenset | None = None  # ... which are these
        self._pending: list = []  # (kind, name, obj, extra) held until the step ends
        self._rec_mode, self._rec_mode_step = ModeKeys.GLOBAL, init_step  # the step being recorded
        self._step_saves = False
        self._written_names: dict[str, int] = {}
        self._scalar_cache: list = []  # (name, value, mode, wall_time, sm_metric)
        self._custom: dict = {}
        self.exported_collections = False
        self.disabled = False
        self.propagate_errors = propagate_default()
        self.worker = self._get_worker_name()
        self._writer: StepWriter | None = None
        self._closed = False
        logger.info("smdebug: saving to %s", self.out_dir)

    @classmethod
    def create_from_json_file(cls, json_file_path=None):
        """A hook configured by SageMaker's hook JSON: ``json_file_path``, else
        $SMDEBUG_CONFIG_FILE_PATH, else /opt/ml/input/config/debughookconfig.json; None when no
        file applies."""
        from smdebug.core.hook_config import create_hook

        return create_hook(cls, json_file_path)

    # ---------------------------------------------------------------- framework-specific
    def _get_worker_name(self) -> str:
        return CHIEF_WORKER

    def _get_num_workers(self) -> int:
        return 1

    @property
    def writes(self) -> bool:
        """Whether this process writes (with include_workers='one', only the chief does)."""
        return not self.dry_run and (self.save_all_workers or self.worker == CHIEF_WORKER)

    def _step_writer(self) -> StepWriter:
        if self._writer is None:
            self._writer = StepWriter(self.out_dir, self.worker, self.tensorboard_dir)
        return self._writer

    # ---------------------------------------------------------------- collections
    def get_collection(self, name, create=True) -> Collection:
        return self.collection_manager.get(name, create=create)

    def get_collections(self) -> dict:
        return self.collection_manager.get_collections()

    def add_collection(self, collection) -> None:
        if not isinstance(collection, Collection):
            raise SMDebugTypeError(f"collection must be a Collection, not {type(collection).__name__}")
        self.collection_manager.add(collection)

    def _prepare_collections(self) -> None:
        cm = self.collection_manager
        for name, c in cm.get_collections().items():
            if name not in self._default_collections and not c.include_regex and not c.tensor_names:
                raise InvalidCollectionConfiguration(name)
            if CollectionKeys.ALL in self.include_collections or name in self.include_collections:
                self._collections_to_save.add(c)
        self.save_config.merge_default_save_config(SaveConfig())  # modes left out: the default schedule
        for name, c in cm.get_collections().items():
            if name in NON_HISTOGRAM_COLLECTIONS:
                c.save_histogram = False
            if c.save_config is None:
                c.save_config = self.save_config
            else:
                c.save_config.merge_default_save_config(self.save_config)
            if name in NON_REDUCTION_COLLECTIONS:
                c.reduction_config = ReductionConfig(save_raw_tensor=True)
            elif c.reduction_config is None:
                c.reduction_config = self.reduction_config
        self.prepared_collections = True
        self._plans.clear()
        self._step_plans.clear()
        logger.info("smdebug: saving collections %s", ", ".join(sorted(c.name for c in self._collections_to_save)))

    def _collections_for_step(self) -> set:
        if self._colls_for_step is None:
            if not self.prepared_collections:
                self._prepare_collections()
            mode, ms = self.mode, self.mode_steps[self.mode]
            out = set()
            for c in self._collections_to_save:
                if mode in (ModeKeys.EVAL, ModeKeys.PREDICT) and c.name in (
                    CollectionKeys.GRADIENTS, CollectionKeys.OPTIMIZER_VARIABLES
                ):
                    continue
                if c.save_config.should_save_step(mode, ms):
                    out.add(c)
            self._colls_for_step = out
            if out != self._step_plans_for:
                self._step_plans.clear()
                self._step_plans_for = frozenset(out)
        return self._colls_for_step

    def _collections_with_tensor(self, name: str) -> frozenset:
        colls = self._tensor_colls.get(name)
        if colls is None:
            matched = set()
            for c in self._collections_to_save:
                if c.matches(name):
                    c.add_tensor_name(name)
                    matched.add(c)
            colls = self._tensor_colls[name] = frozenset(matched)
        return colls

    def saving_this_step(self) -> bool:
        return bool(self._collections_for_step())

    def should_save_tensor_or_collection(self, tensor_name: str, collection_name: str) -> bool:
        if not self.prepared_collections:
            return False
        c = self.collection_manager.get(collection_name)
        if c in self._collections_for_step():
            return not c.include_regex or c.matches(tensor_name)
        return bool(self._collections_with_tensor(tensor_name) & self._collections_for_step())

    # ---------------------------------------------------------------- steps and modes
    @guarded()
    def set_mode(self, mode) -> None:
        if mode not in ALLOWED_MODES:
            raise SMDebugValueError(f"Invalid mode {mode!r}: valid modes are {', '.join(m.name for m in ALLOWED_MODES)}")
        if mode != self.mode:
            self._end_step()  # what the current step saved keeps the current step's mode
        self.mode = mode
        self.mode_steps.setdefault(mode, self.init_step)
        self._colls_for_step = None

    def _begin_step(self) -> None:
        """End the current step and start the next one (called by the framework glue)."""
        self._end_step()
        self.step += 1
        self.mode_steps[self.mode] += 1
        if self.mode != ModeKeys.GLOBAL:
            self.mode_steps[ModeKeys.GLOBAL] = self.step
        self._rec_mode, self._rec_mode_step = self.mode, self.mode_steps[self.mode]
        self._written_names.clear()
        self._colls_for_step = None
        if not self.prepared_collections:
            self._prepare_collections()
        self._step_saves = bool(self._collections_for_step())
        if self._custom:
            self._save_custom_tensors()

    def _end_step(self) -> None:
        """Hand the step's records to the writer; scalars cached so far go with a saved step."""
        if self._pending or (self._step_saves and self._scalar_cache):
            self._flush_records()
        self._step_saves = False

    def _flush_records(self) -> None:
        pending, self._pending = self._pending, []
        scalars, self._scalar_cache = self._scalar_cache, []
        if not self.writes:
            return
        writer = self._step_writer()
        if self._writer_failed(writer):
            return
        rec = StepRecords(max(self.step, 0), self._rec_mode, max(self._rec_mode_step, 0),
                          pending=pending, adapter=self.adapter)
        for name, value, wall_time in scalars:
            rec.tensors.append((name, value, wall_time))
            if self.tensorboard_dir:
                rec.tb_scalars.append((name, float(value.ravel()[0]), wall_time))
        if rec:
            self.last_saved_step = self.step
            writer.submit(rec)
            if not self.exported_collections:
                self.export_collections()

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
    def _save_for_tensor(self, tensor_name: str, value, check_before_write=True) -> None:
        if not check_before_write:
            colls = self._collections_with_tensor(tensor_name)
            if colls:
                self._write_for_tensor(tensor_name, value, colls)
            return
        step_colls = self._collections_for_step()  # (re)sets _step_plans when they change
        plan = self._step_plans.get(tensor_name, _NO_PLAN)
        if plan is _NO_PLAN:  # worked out once while the step's collections stay the same
            colls = self._collections_with_tensor(tensor_name) & step_colls
            plan = self._step_plans[tensor_name] = self._plan(tensor_name, frozenset(colls)) if colls else None
        if plan is not None:
            self._write_planned(tensor_name, value, plan)

    def _plan(self, name: str, colls) -> tuple:
        """What to save of a tensor for a set of collections, worked out once per (name, set):
        (save the shape, [(reduction tag, op, abs)], raw, histogram tag or None, TensorBoard scalar)."""
        key = (name, colls)
        plan = self._plans.get(key)
        if plan is None:
            ops: list = []
            for c in colls:
                if c.name not in SCALAR_COLLECTIONS:
                    ops.extend(r for r in c.reduction_config.all_reductions() if r not in ops)
            tb = bool(self.tensorboard_dir)
            hist_coll = next((c.name for c in colls if c.save_histogram and c.name not in NON_HISTOGRAM_COLLECTIONS), None)
            plan = self._plans[key] = (
                any(c.reduction_config.save_shape for c in colls),
                [(get_reduction_tensor_name(name, op, ab), op, ab) for op, ab in ops],
                any(c.reduction_config.save_raw_tensor for c in colls),
                f"{hist_coll}/{name}" if tb and hist_coll else None,
                tb and any(c.name in SCALAR_COLLECTIONS for c in colls),
                list(ops),  # (op, abs) pairs, as the adapter takes them
            )
        return plan

    def _write_for_tensor(self, name: str, value, colls) -> None:
        self._write_planned(name, value, self._plan(name, frozenset(colls)))

    def _write_planned(self, name: str, value, plan) -> None:
        if self.dry_run:
            logger.debug("smdebug dry run: would save %s at step %s", name, self.step)
            return
        if not self.writes:  # a worker that does not write (include_workers="one") copies nothing
            return
        ad = self.adapter
        size = ad.size(value)
        if size == 0:
            return
        shape, reds, raw, hist, tb_scalar, ops = plan
        pending = self._pending
        if shape:
            pending.append(("shape", name, None, ad.shape(value)))
        if hist and ad.is_bool(value):
            hist = None
        tb_scalar = tb_scalar and size == 1
        snap = None
        if raw or hist or tb_scalar or (reds and ad.reductions_need_snapshot(value)):
            snap = ad.snapshot(value)
        if reds:
            objs = ad.reductions(value, snap, ops)
            pending.extend([("tensor", tag, obj, None) for (tag, _op, _ab), obj in zip(reds, objs)])
        if raw:
            pending.append(("tensor", name, snap, None))
        if hist:
            pending.append(("hist", hist, snap, None))
        if tb_scalar:
            pending.append(("tb_scalar", name, snap, None))

    def _write_indexed(self, module_name: str, value, suffix: str) -> None:
        """Save module inputs/outputs as <module><suffix><i>, numbering every tensor of the step."""
        base = module_name + suffix
        idx = self._written_names.get(base, 0)
        for v in self._flatten(value):
            self._save_for_tensor(f"{base}{idx}", v)
            idx += 1
        self._written_names[base] = idx

    def _flatten(self, value):
        """The framework tensors in a (nested) tuple / list; subclasses decide what a tensor is."""
        if isinstance(value, (tuple, list)):
            for v in value:
                yield from self._flatten(v)

    @guarded()
    def save_scalar(self, name, value, sm_metric=False, timestamp: float | None = None) -> None:
        """Save a scalar as 'scalar/<name>' with the next saved step (and to TensorBoard)."""
        import numpy as np

        arr = np.asarray(self.adapter.materialize([self.adapter.snapshot(value)])[0], dtype=np.float64).reshape(-1)
        if arr.size != 1:
            raise SMDebugTypeError(f"save_scalar({name!r}): value of type {type(value).__name__} is not a scalar")
        self._scalar_cache.append((self.SCALAR_PREFIX + name, arr, timestamp if timestamp else time.time()))

    @guarded()
    def save_tensor(self, tensor_name, tensor_value, collections_to_write=CollectionKeys.DEFAULT) -> None:
        """Save a tensor of your own at the current step, in the given collection(s), when their
        schedule saves this step (before the first step: at the first step)."""
        names = [collections_to_write] if isinstance(collections_to_write, str) else list(collections_to_write)
        for cname in names:
            c = self.collection_manager.get(cname, create=True)
            c.add_tensor_name(tensor_name)
            if self.prepared_collections and c not in self._collections_to_save:
                c.save_config = c.save_config or self.save_config
                c.reduction_config = c.reduction_config or self.reduction_config
                self._collections_to_save.add(c)
                self._colls_for_step = None
        self._tensor_colls.pop(tensor_name, None)
        self._plans.clear()
        self._step_plans.clear()
        if self.prepared_collections and self.step >= 0:
            self._save_for_tensor(tensor_name, tensor_value)
        else:
            self._custom[tensor_name] = (tensor_value, names)

    def _save_custom_tensors(self) -> None:
        custom, self._custom = self._custom, {}
        for name, (value, colls) in custom.items():
            self.save_tensor(name, value, colls)

    # ---------------------------------------------------------------- output files
    def export_collections(self) -> None:
        if not self.writes:
            return
        num_workers = self._get_num_workers() if self.save_all_workers else 1
        self.collection_manager.set_num_workers(num_workers)
        self.collection_manager.export(self.out_dir, f"{self.worker}_collections.json")
        self.exported_collections = True

    def close(self) -> None:
        """End the last step, write everything, the collections file and the end-of-training
        marker. Runs also after an error disabled the hook: what was saved before is kept."""
        if self._closed:
            return
        self._closed = True
        try:
            if not self.disabled:
                self._end_step()
                if self._scalar_cache:
                    self._flush_records()
        except Exception:
            if self.propagate_errors:
                raise
            logger.exception("smdebug: could not save the last step")
        self._pending = []
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.flush()
            writer.close()
        if writer is not None:
            self._writer_failed(writer)
            if writer.failed_steps:
                logger.error("smdebug: %d step(s) of %s could not be written to %s (first: step %s)",
                             len(writer.failed_steps), self.worker, self.out_dir, writer.failed_steps[0])
        try:
            if self.writes:
                self.export_collections()
                self._mark_end_of_training()
        except Exception:
            if self.propagate_errors:
                raise
            self.disabled = True
            logger.exception("smdebug: could not finish writing %s", self.out_dir)

    def _mark_end_of_training(self) -> None:
        """Write training_job_end.ts. When every worker writes (include_workers="all"), each one
        leaves a done-file beside its collections file and only the chief writes the marker,
        once all workers are done (or after $SMDEBUG_END_OF_JOB_WAIT seconds, default 120), so
        that readers don't stop reading while a slower worker is still writing."""
        from smdebug.core.hook_config import is_sagemaker_job
        from smdebug.storage import open_store

        if is_sagemaker_job():
            return
        store = open_store(self.out_dir)
        workers = self._get_num_workers() if self.save_all_workers else 1
        if workers > 1:
            store.write(done_key(self.worker), b"")
            if self.worker != CHIEF_WORKER:
                return
            wait = float(os.getenv("SMDEBUG_END_OF_JOB_WAIT", "120"))
            deadline = time.monotonic() + wait
            while True:
                done = [k for k in store.list(COLLECTIONS_PREFIX) if k.endswith(DONE_SUFFIX)]
                if len(done) >= workers:
                    break
                if time.monotonic() >= deadline:
                    logger.warning("smdebug: %d of %d workers finished within %.0f s; marking the end of "
                                   "training anyway", len(done), workers, wait)
                    break
                time.sleep(0.05)  # polling storage for the other workers' done-files, bounded
        if self.worker == CHIEF_WORKER or workers == 1:
            store.write(END_OF_JOB, b"")

    def __repr__(self):
        return (
            f"<{type(self).__module__}.{type(self).__name__} out_dir={self.out_dir!r} step={self.step} "
            f"mode={self.mode.name} include_collections={self.include_collections}>"
        )
