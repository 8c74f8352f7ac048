"""smdebug.xgboost.Hook: an ``xgboost.callback.TrainingCallback`` glued onto BaseHook.

The only module of smdebug.xgboost that uses BaseHook: what is saved comes from
:mod:`smdebug.xgboost.extract`, the names and collections are 1.0.34's.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import xgboost as xgb

from smdebug.core.config.collection import CollectionKeys as CK
from smdebug.core.config.hook_options import HookOptions, hook_init
from smdebug.core.config.save_config import SaveConfig
from smdebug.core.engine.guard import guarded
from smdebug.core.engine.hook import BaseHook
from smdebug.core.output.locations import worker_name
from smdebug.exceptions import SMDebugRuntimeError
from smdebug.profiler.recording.session import profiler_for_hook
from smdebug.xgboost import extract
from smdebug.xgboost.collection import XGBOOST_COLLECTIONS, is_loss_metric

if TYPE_CHECKING:
    pass

__all__ = ["Hook"]

logger = logging.getLogger("smdebug")
DEFAULT_SAVE_INTERVAL = 10  # 1.0.34's default for XGBoost (other frameworks: SaveConfig's 500)
JSON_DEFAULT_VALUES: dict[str, Any] = {
    "save_interval": DEFAULT_SAVE_INTERVAL,
    "start_step": 0,
    "end_step": None,
    "save_steps": [],
}


@dataclass(kw_only=True)
class XGBoostHookOptions(HookOptions):
    """The XGBoost hook's options: every hook's, and its own (keyword-only)."""

    hyperparameters: dict[str, Any] | None = None
    train_data: Any = None
    validation_data: Any = None
    profiler_config: Any = None


class Hook(BaseHook, xgb.callback.TrainingCallback):
    """Saves what an XGBoost booster does while it trains, one step per boosting round (mode
    GLOBAL). Pass it as a callback: ``xgboost.train(params, dtrain, callbacks=[hook])`` or
    ``XGBClassifier(callbacks=[hook])``. When training ends, every round is written and the hook
    stays open (one hook per run) until ``hook.close()`` or the program's exit, which mark the end
    of training: ``save_scalar``/``save_tensor`` called after training (a test metric) are saved
    at the step after the last round, whatever the schedule.

    Collections (names as smdebug 1.0.34 writes them; ``metrics`` is saved by default, every
    10 rounds unless ``save_config`` says otherwise):

    - ``metrics``: ``<evals name>-<metric>`` (``train-logloss``, ``validation-auc``), the value of
      the round; ``losses``: the same names but the metrics that grow (``*-auc``, ``*-aucpr``, ``*-map``,
      ``*-ndcg``, ``*-pre``, also with ``@n``; ``smdebug.core.metric_names``);
    - ``hyperparameters``: ``hyperparameters/<key>`` of ``hyperparameters``;
    - ``predictions`` / ``labels``: ``booster.predict(validation_data)`` and its labels;
    - ``feature_importance``: ``feature_importance/<weight|gain|cover|total_gain|total_cover>/<feature>``,
      ``get_score`` divided by the sum over features (tree boosters);
    - ``average_shap`` / ``full_shap``: ``<collection>/<feature>`` from
      ``booster.predict(train_data, pred_contribs=True)``; ``average_shap/<f>`` is the mean over
      rows (and classes). ``full_shap/<f>`` holds feature f's contributions, (rows,) or
      (rows, classes) — 1.0.34 saved the whole matrix under every name. The ``*/bias`` terms are
      saved too, in no collection but ``all``, as in 1.0.34;
    - ``trees``: ``trees/<column>`` for the columns of ``booster.trees_to_dataframe()``, for the
      trees built in that round (one per class) — 1.0.34 saved the tree whose index is the round
      number, a wrong tree for multi-class models.

    ``train_data`` / ``validation_data``: an ``xgboost.DMatrix`` or a ``(file path, "csv" |
    "libsvm")`` tuple. ``reduction_config`` is ignored (a warning), as in 1.0.34: tensors are saved
    whole. In distributed training (XGBoost's collective) the worker is ``worker_<rank>``; with
    ``include_workers="one"`` only rank 0 writes.

    On Dask (``xgboost.dask.train``, ``DaskXGBClassifier``), the hook given as a callback is pickled
    to every Dask worker process: each copy saves its worker's training as ``worker_<rank>`` (the
    collective's rank) and closes when training ends there (collections file, end-of-job marker).
    The hook left in the client saves nothing (its ``save_scalar`` raises: make a hook of its own
    for what the client computes) and writes nothing at close.

    :param hyperparameters: the booster's parameters (the ``params`` of ``xgboost.train``), saved as
        ``hyperparameters/<key>`` at the first round
    :param train_data: the training data (``xgboost.DMatrix`` or ``(path, "csv" | "libsvm")``), for the
        SHAP values (``average_shap``, ``full_shap``)
    :param validation_data: the validation data (same forms), for ``predictions`` and ``labels``
    """

    collection_defaults = XGBOOST_COLLECTIONS  # tensors are numpy arrays: core's NumpyAdapter (the default)

    @hook_init(XGBoostHookOptions)
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        o = XGBoostHookOptions.from_call(type(self).__name__, args, kwargs)
        # checked before the hook exists: a bad argument leaves no folder and no active hook behind
        self._profiler_config = o.profiler_config  # a smdebug.profiler.ProfilerConfig, or None: the config file
        self.hyperparameters = dict(o.hyperparameters) if o.hyperparameters else None
        self.train_data = extract.as_dmatrix(o.train_data, "train_data")
        self.validation_data = extract.as_dmatrix(o.validation_data, "validation_data")
        super().__init__(**o.kwargs())

    def _configure(self, o: HookOptions) -> None:
        if o.reduction_config is not None:
            logger.warning("smdebug: reduction_config is not supported by the XGBoost hook and is ignored")
        if o.save_config is None:
            o = replace(o, save_config=SaveConfig(save_interval=DEFAULT_SAVE_INTERVAL))
        super()._configure(replace(o, reduction_config=None))
        self._trees_kind: bool | None = None  # whether the booster is made of trees, known at before_training
        self._warned: set = set()
        self._world: int | None = None  # the collective's size while training ran
        self._profiler = profiler_for_hook(getattr(self, "_profiler_config", None), self.out_dir, "xgboost")

    def __getstate__(self) -> dict[str, Any]:
        """Pickled for a Dask worker: the copy trains there; this hook, left in the client, trains nowhere."""
        self._shipped = True
        state = self.__dict__.copy()
        state["_shipped"] = False
        state["_remote_copy"] = True  # no one can close the copy: it closes when training ends
        return state

    def _sent_away(self) -> bool:
        return getattr(self, "_shipped", False) and self._trees_kind is None

    def _check_open(self, name: str) -> None:
        if self._sent_away():
            raise SMDebugRuntimeError(
                f"{name} is not saved: this hook was sent to the Dask workers, which save the "
                f"training in {self.out_dir}; make another hook (another out_dir) for the client"
            )
        super()._check_open(name)

    def __deepcopy__(self, memo: Any) -> Any:
        """A hook is not copied: scikit-learn's ``clone`` (GridSearchCV, cross_val_score) gives every
        copy of an estimator this hook, which saves the first run (one trial per hook)."""
        return self

    @classmethod
    def create_from_json_file(cls, json_file_path: Any = None) -> Any:
        """A hook configured by SageMaker's hook JSON (save_interval 10 where it gives none)."""
        from smdebug.core.engine.from_json import create_hook

        return create_hook(cls, json_file_path, default_values=JSON_DEFAULT_VALUES)

    def _get_worker_name(self) -> str:
        return worker_name(xgb.collective.get_rank())

    def _get_num_workers(self) -> int:
        # the world of the training run: the collective may have ended before close() (at exit)
        return self._world if self._world is not None else xgb.collective.get_world_size()

    # ---------------------------------------------------------------- TrainingCallback
    def before_training(self, model: Any) -> Any:
        self._before_training(model)
        return model

    def before_iteration(self, model: Any, epoch: Any, evals_log: Any) -> bool:
        if self._profiler is not None:  # a round is a step of the profiler's timeline
            self._profiler.step_start(self.mode, epoch)
        return False

    def after_iteration(self, model: Any, epoch: Any, evals_log: Any) -> bool:
        """Save the round; True (stop training) only when a rule asked for it."""
        self._after_iteration(model, epoch, evals_log)
        if self._profiler is not None:
            self._profiler.step_end()
        # outside the guard: a request stops training even when an error disabled the hook
        return self.stop_requested() is not None

    def after_training(self, model: Any) -> Any:
        self._end_training_run()
        if self._profiler is not None:  # training ended: the sampler stops, the timeline is finished
            self._profiler.close()
        if getattr(self, "_remote_copy", False):  # a copy on a Dask worker: no one else can close it
            self.close()
        return model

    def close(self) -> None:
        if self._sent_away():  # the Dask workers' copies wrote the trial: this hook writes nothing
            self._closed = True
            if self._profiler is not None:
                self._profiler.close()
            return
        super().close()
        if self._profiler is not None:
            self._profiler.close()

    @guarded()
    def _before_training(self, model: Any) -> None:
        if not isinstance(model, xgb.Booster):
            raise TypeError(f"the XGBoost hook saves a Booster's training, not a {type(model).__name__} (xgb.cv)")
        self.worker = self._get_worker_name()  # the collective may start after the hook is made
        self._world = xgb.collective.get_world_size()
        if not self._resume_checked:  # rounds count from 0 again in a resumed job: they follow its steps
            self._resume()
        self._trees_kind = extract.booster_kind(model) in extract.TREE_BOOSTERS

    @guarded()
    def _after_iteration(self, model: Any, epoch: Any, evals_log: Any) -> None:
        if self._training_ended or self._closed:  # one training run per hook
            self._warn_once(
                "closed",
                "smdebug: this hook's training run ended; make a new hook for "
                "another run (nothing of this one is saved)",
            )
            return
        if self._trees_kind is None:
            self._before_training(model)
        self._end_step()
        # the step is the boosting round, as in 1.0.34 (after the steps of the job it resumes)
        first = 0 if self.resumed_from is None else self.resumed_from + 1
        self.step = self.mode_steps[self.mode] = first + epoch - 1
        self._begin_step()
        try:
            if self._step_saves:
                self._save_round(model, evals_log, {c.name for c in self._collections_for_step()})
        finally:  # the round goes to the writer now, while XGBoost builds the next one (after an
            self._end_step()  # error too: what the round saved before it is kept)

    def _save_round(self, model: Any, evals_log: Any, saves: set) -> None:
        save = self._save_for_tensor  # values go as arrays: np.size of a Python float costs microseconds
        if CK.METRICS in saves or CK.LOSSES in saves:
            for name, value in extract.evaluation_metrics(evals_log).items():
                if CK.METRICS in saves or is_loss_metric(name):
                    save(name, np.array([value]))
        if CK.HYPERPARAMETERS in saves and self._have(bool(self.hyperparameters), "hyperparameters"):
            for key, value in self.hyperparameters.items():  # type: ignore[union-attr]  # _have checked it
                save(f"hyperparameters/{key}", extract.hyperparameter_value(value))
        given_valid = self.validation_data is not None
        if (CK.PREDICTIONS in saves or CK.LABELS in saves) and self._have(given_valid, "validation_data"):
            out = extract.validation_outputs(model, self.validation_data)
            save("predictions", out.predictions)
            save("labels", out.labels)
        trees = bool(self._trees_kind)
        if saves & {CK.FEATURE_IMPORTANCE, CK.TREES} and self._have(trees, "a tree booster (gbtree or dart)"):
            if CK.FEATURE_IMPORTANCE in saves:
                for kind, scores in extract.feature_importances(model).items():
                    for feature, value in scores.items():
                        save(f"feature_importance/{kind}/{feature}", np.array([value]))
            if CK.TREES in saves:
                for column, values in extract.round_trees(model).items():
                    save(f"trees/{column}", values)
        if (CK.FULL_SHAP in saves or CK.AVERAGE_SHAP in saves) and self._have(
            self.train_data is not None, "train_data"
        ):
            shap = extract.shap_values(model, self.train_data)
            if CK.AVERAGE_SHAP in saves:
                for name, value in zip(shap.names, shap.average()):
                    save(f"average_shap/{name}", value.reshape(1))
            if CK.FULL_SHAP in saves:
                for i, name in enumerate(shap.names):
                    save(f"full_shap/{name}", shap.column(i))

    def _have(self, given: bool, needed: str) -> bool:
        """Whether a collection's input was given; if not, say so once."""
        if not given:
            self._warn_once(needed, f"smdebug: a collection asked for needs {needed}, which the hook was not given")
        return given

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            logger.warning(message)
