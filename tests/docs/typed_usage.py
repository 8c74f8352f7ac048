"""A user's script over the documented API, type-checked (never run) by test_types.py: each
``assert_type`` fails mypy when an annotation of the public API is wrong or missing."""

from __future__ import annotations

from typing import assert_type

import numpy as np

import smdebug
import smdebug.pytorch as smd
import smdebug.xgboost as smd_xgb
from smdebug import modes
from smdebug.core.collection import Collection
from smdebug.core.reduction_config import ReductionConfig
from smdebug.core.save_config import SaveConfig, SaveConfigMode
from smdebug.exceptions import TensorUnavailableForStep
from smdebug.rules import Rule, RuleRun, invoke_rule
from smdebug.trials import Tensor, Trial, create_trial
from smdebug.trials.profiler_trial import ProfilerTrial


def tour(path: str) -> None:
    trial = create_trial(path)
    assert_type(trial, Trial)
    assert_type(create_trial(path, profiler=True), ProfilerTrial)
    assert_type(create_trial(path, None, True), ProfilerTrial)
    assert_type(trial.steps(), list[int])
    assert_type(trial.steps(mode=modes.TRAIN), list[int])
    assert_type(trial.tensor_names(collection="losses"), list[str])
    assert_type(trial.modes(), list[modes.ModeKeys])
    assert_type(trial.workers(), list[str])
    assert_type(trial.collections(), dict[str, Collection])
    tensor = trial.tensor("loss")
    assert_type(tensor, Tensor)
    assert_type(tensor.value(0), np.ndarray)
    assert_type(tensor.value(0, mode=modes.EVAL, worker="worker_0"), np.ndarray)
    assert_type(tensor.values(), dict[int, np.ndarray])
    assert_type(tensor.reduction_value(0, "mean", abs=True), np.ndarray)
    assert_type(tensor.shape(0), tuple[int, ...])
    assert_type(tensor.workers(0), list[str])
    try:
        tensor.value(10)
    except TensorUnavailableForStep as exc:
        assert_type(str(exc), str)


def configs() -> None:
    save = SaveConfig(save_interval=10, start_step=0)
    assert_type(save.get_save_config(modes.TRAIN), SaveConfigMode)
    assert_type(save.should_save_step(modes.TRAIN, 10), bool)
    assert_type(SaveConfigMode.from_dict({"save_interval": 5}), SaveConfigMode)
    assert_type(ReductionConfig(reductions=["mean"], norms=["l2"]).to_json(), str)
    coll = Collection("weights", include_regex=[".*weight"], save_config=save)
    assert_type(coll.tensor_names, set[str])
    assert_type(smdebug.__version__, str)


class Threshold(Rule):
    def __init__(self, base_trial: Trial, threshold: str = "1.0") -> None:
        super().__init__(base_trial)
        self.threshold = float(threshold)

    def invoke_at_step(self, step: int) -> bool:
        return bool(abs(self.base_trial.tensor("loss").value(step)).max() > self.threshold)


def rules(trial: Trial) -> None:
    assert_type(invoke_rule(Threshold(trial), start_step=0, end_step=10), RuleRun)


def hooks() -> None:
    hook = smd.Hook(
        out_dir="run",
        save_config=SaveConfig(save_interval=5),
        include_collections=["weights"],
        reduction_config=ReductionConfig(norms=["l2"]),
        include_workers="all",
    )
    assert_type(hook, smd.Hook)
    hook.set_mode(smd.modes.TRAIN)
    hook.save_scalar("lr", 0.1)
    hook.save_tensor("labels", np.zeros(3), collections_to_write=["labels"])
    assert_type(hook.get_collection("weights"), Collection)
    assert_type(smd.Hook.create_from_json_file(), smd.Hook | None)
    assert_type(smd.get_hook(), smd.Hook | None)
    assert_type(smd_xgb.get_hook(create_if_not_exists=True), smd_xgb.Hook | None)
    assert_type(smd_xgb.Hook(out_dir="xgb", hyperparameters={"max_depth": 3}), smd_xgb.Hook)
