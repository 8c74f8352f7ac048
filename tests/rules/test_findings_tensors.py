"""What VanishingGradient, ExplodingTensor, AllZero, TensorVariance and SimilarAcrossRuns name when
they fire (the tensor, its worker, its value, the condition), in the exception, in
``Finding.to_json()`` and in ``smdebug rules --json``; why they evaluated nothing; what they do on
NaN and inf; the first non-finite tensor in computation order (smdebug.analysis.nonfinite); and
XGBoost's structural NaN on a real healthy boosting run.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn as nn
from runs_tensors import deep_sigmoid, fired_at, small, train

import smdebug.pytorch as smd
from smdebug import ReductionConfig
from smdebug.analysis.nonfinite import (
    STRUCTURAL_NAN,
    computation_order,
    first_nonfinite,
    nonfinite_counts,
    scan_nonfinite,
    worker_key,
)
from smdebug.cli import main as cli_main
from smdebug.exceptions import RuleEvaluationConditionMet
from smdebug.rules import invoke_rule
from smdebug.rules.builtin import AllZero, ExplodingTensor, SimilarAcrossRuns, TensorVariance, VanishingGradient
from smdebug.rules.finding import FINDING_FIELDS
from smdebug.rules.rule_invoker import nothing_evaluated_message
from smdebug.trials import create_trial

# saved only as reductions, without the abs mean VanishingGradient reads
NO_ABS_MEAN = ReductionConfig(reductions=["max", "mean", "min"], norms=["l2"], save_raw_tensor=False)


class TwoLayers(nn.Module):
    """The first layer is named so that its output sorts after every tensor computed from it."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.z_first = nn.Linear(64, 16)
        self.relu = nn.ReLU()
        self.a_second = nn.Linear(16, 10)

    def forward(self, x):
        return self.a_second(self.relu(self.z_first(x)))


def _poison_first_bias_before_2(i, model):
    if i == 2:
        model.z_first.bias[3] = float("nan")  # the NaN enters at the first layer


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("finding_runs")

    def zero_fc1_before_3(i, model):
        if i == 3:
            model[0].weight.zero_()

    def scale_before_3(i, model):
        if i == 3:
            model[0].weight.mul_(100.0)

    return {
        "healthy": train(root / "healthy", small(seed=0), "T" * 4),
        "seed1": train(root / "seed1", small(seed=1), "T" * 4),
        "deep_sigmoid": train(root / "deep_sigmoid", deep_sigmoid(), "T" * 3),
        "no_abs_mean": train(
            root / "no_abs_mean", deep_sigmoid(), "T" * 3, hook_kwargs={"reduction_config": NO_ABS_MEAN}
        ),
        "huge_lr": train(root / "huge_lr", small(seed=0), "T" * 4, lr=1e20),
        "huge_lr_reductions": train(
            root / "huge_lr_reductions",
            small(seed=0),
            "T" * 4,
            lr=1e20,
            collections=["weights", "biases", "gradients"],
            hook_kwargs={"reduction_config": ReductionConfig(reductions=["mean", "max"], save_raw_tensor=False)},
        ),
        "zeroed": train(root / "zeroed", small(seed=0), "T" * 4, before_step=zero_fc1_before_3),
        "scaled": train(root / "scaled", small(seed=0), "T" * 4, lr=1e-3, before_step=scale_before_3),
        "nan_first": train(
            root / "nan_first",
            TwoLayers(),
            "T" * 4,
            collections=["outputs", "gradients", "losses"],
            before_step=_poison_first_bias_before_2,
        ),
        "nan_first_params": train(
            root / "nan_first_params",
            TwoLayers(),
            "T" * 4,
            collections=["weights", "biases", "outputs", "gradients", "losses"],
            before_step=_poison_first_bias_before_2,
        ),
    }


def _finding(rule, start_step: int = 0):
    """The Finding of the rule's first firing (the exception carries it), or None."""
    try:
        invoke_rule(rule, start_step=start_step, raise_eval_cond=True)
    except RuleEvaluationConditionMet as exc:
        assert exc.finding is not None and str(exc).endswith(exc.finding.text())
        return exc.finding
    return None


def _rules_json(capsys, trial_path, rule: str, *params: str) -> tuple[int, list[dict]]:
    argv = ["rules", str(trial_path), "--rule", rule, "--json"]
    for p in params:
        argv += ["--param", p]
    code = cli_main(argv)
    return code, [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]


def _fired_event(events: list[dict]) -> dict:
    fired = [e for e in events if e["event"] == "fired"]
    assert len(fired) == 1, events
    assert set(FINDING_FIELDS) <= set(fired[0])
    return fired[0]


def _write_trial(path: Path, steps: list, workers=("worker_0",), collections=None) -> str:
    """A trial written with FileWriter: ``steps`` is a list of {worker: [(name, value), ...]} (or, for
    one worker, of [(name, value), ...]); each worker writes its records in list order."""
    from smdebug.core.collection import Collection
    from smdebug.core.collection_manager import CollectionManager
    from smdebug.core.writer import FileWriter

    for w in workers:
        cm = CollectionManager()
        cm.add("default")
        for name, regex in (collections or {}).items():
            cm.add(Collection(name, include_regex=[regex]))
        cm.set_num_workers(len(workers))
        cm.export(str(path), f"{w}_collections.json")
    for step, records in enumerate(steps):
        per_worker = records if isinstance(records, dict) else {workers[0]: records}
        for w, tensors in per_worker.items():
            with FileWriter(trial_dir=str(path), step=step, worker=w) as fw:
                for name, value in tensors:
                    fw.write_tensor(tdata=np.asarray(value), tname=name)
    (path / "training_job_end.ts").touch()
    return str(path)


# ---------------------------------------------------------------------- what each rule's firing names
def test_vanishing_gradient_names_the_smallest_gradient_its_mean_and_the_threshold(runs, capsys):
    run = runs["deep_sigmoid"]
    means = {f"gradient/Sequential_{k}": float(np.abs(g).mean()) for k, g in run.grads[0].items()}
    smallest = min(means, key=means.get)
    f = _finding(VanishingGradient(run.trial))
    assert (f.step, f.mode, f.mode_step, f.worker, f.tensors) == (0, "TRAIN", 0, "worker_0", (smallest,))
    assert f.values[0] == pytest.approx(means[smallest], rel=1e-4)
    assert f.condition == "mean |x| < 1e-07"
    assert f.message.startswith(f"mean |{smallest}| = ") and "< threshold 1e-07" in f.message
    below = sum(m < 1e-7 for m in means.values())
    assert f"({below} of {len(means)} gradient values below it)" in f.message
    j = f.to_json()
    assert (j["rule"], j["tensors"], j["worker"], j["condition"]) == (
        "VanishingGradient",
        [smallest],
        "worker_0",
        "mean |x| < 1e-07",
    )
    code, events = _rules_json(capsys, run.path, "VanishingGradient")
    e = _fired_event(events)
    assert code == 1
    assert (e["step"], e["tensors"], e["worker"], e["condition"]) == (0, [smallest], "worker_0", "mean |x| < 1e-07")
    assert e["values"][0] == pytest.approx(means[smallest], rel=1e-4)


def test_exploding_tensor_names_the_tensor_nan_or_inf_and_how_many(runs, capsys):
    run = runs["huge_lr"]
    # the run itself: at step 1 the loss alone is inf, every saved parameter and gradient is finite
    assert np.isinf(run.losses[1]) and all(
        np.isfinite(v).all() for v in (*run.params[1].values(), *run.grads[1].values())
    )
    f = _finding(ExplodingTensor(run.trial))
    assert (f.step, f.worker, f.tensors, f.values) == (1, "worker_0", ("CrossEntropyLoss_output_0",), (math.inf,))
    assert f.condition == "any NaN or ±inf"
    assert f.message == "CrossEntropyLoss_output_0 holds 1 inf of 1 value (the only non-finite tensor at the step)"
    assert (f.extra["kind"], f.extra["count"], f.extra["size"]) == ("inf", 1, 1)
    j = f.to_json()
    assert j["values"] == ["inf"] and j["kind"] == "inf" and j["count"] == 1
    # NaN only: the first step with a NaN, and how many of the tensor's values are NaN
    f = _finding(ExplodingTensor(run.trial, only_nan="True"))
    assert f.condition == "any NaN" and f.extra["kind"] == "NaN"
    value = run.trial.tensor(f.tensors[0]).value(f.step, worker=f.worker)
    assert f.extra["count"] == np.isnan(value).sum() > 0 and f.extra["size"] == value.size
    assert f"{f.tensors[0]} holds {f.extra['count']} NaN of {value.size} value" in f.message
    code, events = _rules_json(capsys, run.path, "ExplodingTensor")
    e = _fired_event(events)
    assert code == 1
    assert (e["step"], e["tensors"], e["values"], e["worker"], e["kind"]) == (
        1,
        ["CrossEntropyLoss_output_0"],
        ["inf"],
        "worker_0",
        "inf",
    )


def test_all_zero_names_the_tensor_and_its_percent_of_zeros(runs, capsys):
    run = runs["zeroed"]
    f = _finding(AllZero(run.trial, collection_names="weights"))
    size = run.params[3]["0.weight"].size
    assert (f.step, f.worker, f.tensors, f.values) == (3, "worker_0", ("Sequential_0.weight",), (100.0,))
    assert f.condition == "percent zero >= 100"
    assert f.message == f"100% of Sequential_0.weight's {size} values are zero >= threshold 100%"
    code, events = _rules_json(capsys, run.path, "AllZero", "collection_names=weights")
    e = _fired_event(events)
    assert code == 1 and (e["step"], e["tensors"], e["values"], e["condition"]) == (
        3,
        ["Sequential_0.weight"],
        [100.0],
        "percent zero >= 100",
    )


def test_tensor_variance_names_the_variance_and_the_bound_it_crossed(runs, capsys):
    run = runs["scaled"]
    var = float(np.var(run.params[3]["0.weight"]))
    f = _finding(TensorVariance(run.trial, collection_names="weights", max_threshold="1"))
    assert (f.step, f.worker, f.tensors) == (3, "worker_0", ("Sequential_0.weight",))
    assert f.values[0] == pytest.approx(var, rel=1e-4)
    assert f.condition == "variance > 1"
    assert f.message.startswith("variance of Sequential_0.weight = ") and f.message.endswith("> max_threshold 1")
    f = _finding(TensorVariance(runs["zeroed"].trial, collection_names="weights", min_threshold="1e-8"))
    assert (f.step, f.tensors, f.values, f.condition) == (3, ("Sequential_0.weight",), (0.0,), "variance < 1e-08")
    code, events = _rules_json(capsys, run.path, "TensorVariance", "collection_names=weights", "max_threshold=1")
    e = _fired_event(events)
    assert code == 1 and (e["step"], e["tensors"], e["condition"]) == (3, ["Sequential_0.weight"], "variance > 1")


def test_similar_across_runs_names_the_other_trial_and_the_largest_difference(runs, capsys):
    base, other = runs["healthy"], runs["seed1"]
    a, b = base.params[0]["0.weight"], other.params[0]["0.weight"]
    f = _finding(SimilarAcrossRuns(base.trial, other_trials=[other.trial], collection_names="weights"))
    assert (f.step, f.worker, f.tensors) == (0, "worker_0", ("Sequential_0.weight",))
    assert f.values[0] == pytest.approx(float(np.abs(a - b).max()), rel=1e-5)
    off = int((~np.isclose(a, b, rtol=1e-5, atol=1e-8)).sum())
    assert f.message.startswith(f"Sequential_0.weight differs in trial {other.trial.name!r}: {off} of {a.size} values")
    assert f.extra["other_trial"] == other.trial.name
    assert f.condition.startswith("not allclose(")
    code, events = _rules_json(
        capsys, base.path, "SimilarAcrossRuns", f"other_trials={other.path}", "collection_names=weights"
    )
    e = _fired_event(events)
    assert code == 1 and (e["step"], e["tensors"], e["worker"]) == (0, ["Sequential_0.weight"], "worker_0")
    assert e["other_trial"] == other.trial.name


# ---------------------------------------------------------------------- the first tensor in computation order
def test_exploding_tensor_names_the_first_layer_not_an_alphabetically_earlier_later_tensor(runs):
    trial = runs["nan_first"].trial
    bad = sorted(n for n in trial.tensor_names(step=2) if not np.isfinite(trial.tensor(n).value(2)).all())
    assert "z_first_output_0" in bad and bad[0] != "z_first_output_0"  # the NaN spread to what came after
    assert all(np.isfinite(trial.tensor(n).value(1)).all() for n in trial.tensor_names(step=1))
    f = _finding(ExplodingTensor(trial))
    assert (f.step, f.tensors, f.extra["kind"]) == (2, ("z_first_output_0",), "NaN")
    assert f"(the first of {len(bad)} non-finite, in computation order)" in f.message
    # the order the model computed them: the first layer, the ReLU, the second layer, the loss, then backward
    order = computation_order(trial, 2, trial.tensor_names(step=2))
    assert order[:3] == ["z_first_output_0", "relu_output_0", "a_second_output_0"]
    assert (
        order.index("CrossEntropyLoss_output_0")
        < order.index("gradient/TwoLayers_a_second.bias")
        < order.index("gradient/TwoLayers_z_first.bias")
    )
    nf = first_nonfinite(trial)
    assert (nf.step, nf.mode, nf.mode_step, nf.worker, nf.tensor, nf.kind) == (
        2,
        "TRAIN",
        2,
        "worker_0",
        "z_first_output_0",
        "NaN",
    )
    out = trial.tensor("z_first_output_0").value(2)
    assert (nf.count, nf.size) == (int(np.isnan(out).sum()), out.size)
    # with the parameters saved, the poisoned bias itself (written at the start of the step) comes first
    params = runs["nan_first_params"].trial
    assert _finding(ExplodingTensor(params)).tensors == ("TwoLayers_z_first.bias",)
    assert first_nonfinite(params).tensor == "TwoLayers_z_first.bias"
    assert first_nonfinite(params, regex="_output_0$").tensor == "z_first_output_0"


def test_several_workers_worker_order_first_then_write_order(tmp_path):
    nan, ok = np.array([np.nan, 1.0]), np.ones(2)
    step0 = {
        "worker_0": [("a", ok), ("b", ok), ("z", ok)],
        "worker_2": [("z", ok), ("b", nan), ("a", nan)],
        "worker_10": [("a", nan), ("b", ok), ("z", ok)],
    }
    trial = create_trial(_write_trial(tmp_path / "t", [step0], workers=("worker_0", "worker_2", "worker_10")))
    assert sorted(["worker_10", "worker_2", "worker_0"], key=worker_key) == ["worker_0", "worker_2", "worker_10"]
    assert computation_order(trial, 0, ["a", "b", "z"], worker="worker_2") == ["z", "b", "a"]
    assert computation_order(trial, 0, ["z", "missing", "b", "a"]) == ["a", "b", "z", "missing"]
    f = _finding(ExplodingTensor(trial))
    assert (f.worker, f.tensors, f.extra["count"], f.extra["size"]) == ("worker_2", ("b",), 1, 2)
    nf = first_nonfinite(trial)
    assert (nf.worker, nf.tensor, nf.kind, nf.count, nf.size) == ("worker_2", "b", "NaN", 1, 2)


def test_first_nonfinite_scans_steps_in_order_and_reads_reductions_without_raw_values(runs):
    run = runs["huge_lr"]
    nf = first_nonfinite(run.trial)
    assert (nf.step, nf.tensor, nf.kind, nf.count, nf.size) == (1, "CrossEntropyLoss_output_0", "inf", 1, 1)
    assert "went inf first: 1 of its 1 value, at global step 1 (TRAIN step 1, worker_0)" in nf.text()
    later = first_nonfinite(run.trial, start_step=2)
    assert later.step == 2
    assert first_nonfinite(run.trial, end_step=1) is None
    assert first_nonfinite(runs["healthy"].trial) is None
    scan = scan_nonfinite(runs["healthy"].trial)
    assert scan.found is None and scan.steps == 4 and scan.values > 0
    # a tensor saved only as reductions is judged through them
    reds = first_nonfinite(runs["huge_lr_reductions"].trial, regex=["^Sequential_", "^gradient/"])
    assert reds.from_reductions and "saved reductions" in reds.text()
    assert reds.step == runs["huge_lr"].first_step(lambda v: not np.isfinite(v).all(), kinds=("params", "grads"))
    red = runs["no_abs_mean"].trial
    assert not red.tensor("gradient/Sequential_0.bias").saved(0)["raw"]
    assert scan_nonfinite(red).values > 0 and first_nonfinite(red) is None


# ---------------------------------------------------------------------- XGBoost: structural NaN
@pytest.fixture(scope="module")
def healthy_xgb(tmp_path_factory):
    """A real healthy boosting run (breast cancer) saved by smdebug.xgboost.Hook with the trees collection."""
    import xgboost as xgb
    from sklearn.datasets import load_breast_cancer

    import smdebug.xgboost as smx

    X, y = load_breast_cancer(return_X_y=True)
    n = int(len(y) * 0.7)
    dtrain, dvalid = xgb.DMatrix(X[:n], y[:n]), xgb.DMatrix(X[n:], y[n:])
    params = {"objective": "binary:logistic", "max_depth": 2, "eval_metric": ["logloss", "auc"], "nthread": 1}
    out = tmp_path_factory.mktemp("xgb") / "healthy"
    hook = smx.Hook(
        out_dir=str(out),
        save_config=smx.SaveConfig(save_interval=1),
        hyperparameters=params,
        train_data=dtrain,
        validation_data=dvalid,
        include_collections=[
            "metrics",
            "losses",
            "predictions",
            "labels",
            "feature_importance",
            "hyperparameters",
            "trees",
        ],
    )
    result: dict = {}
    xgb.train(
        params,
        dtrain,
        4,
        evals=[(dtrain, "train"), (dvalid, "validation")],
        evals_result=result,
        callbacks=[hook],
        verbose_eval=False,
    )
    hook.close()
    assert all(np.isfinite(v).all() for m in result.values() for v in m.values())
    return str(out)


def test_xgboost_trees_nan_is_structure_not_an_explosion(healthy_xgb, capsys):
    trial = create_trial(healthy_xgb)
    split = trial.tensor("trees/Split").value(0)
    feature = trial.tensor("trees/Feature").value(0)
    assert np.isnan(split).any() and (np.isnan(split) == (feature == "Leaf")).all()  # NaN exactly on the leaves
    assert fired_at(ExplodingTensor(trial)) is None
    assert fired_at(ExplodingTensor(trial, collection_names="trees")) is None
    assert fired_at(ExplodingTensor(trial, tensor_regex="^trees/Split$")) is None
    rule = ExplodingTensor(trial, collection_names="trees")
    invoke_rule(rule)
    assert rule.tensors_evaluated > 0  # judged, not skipped
    assert first_nonfinite(trial) is None
    assert cli_main(["nonfinite", healthy_xgb]) == 0
    assert "every value is finite" in capsys.readouterr().out
    assert set(STRUCTURAL_NAN) >= {"trees/Split"}
    # an inf in a structural column still counts; a NaN elsewhere in the trees collection still counts
    assert nonfinite_counts("trees/Split", np.array([np.nan, np.inf, 1.0])) == (0, 1, 3)
    assert nonfinite_counts("trees/Gain", np.array([np.nan, 1.0])) == (1, 0, 2)


# ---------------------------------------------------------------------- evaluated nothing, with the reason
def test_vanishing_gradient_on_reductions_without_the_abs_mean_says_which_reduction_to_add(runs, capsys):
    run = runs["no_abs_mean"]
    saved = run.trial.tensor("gradient/Sequential_0.bias").saved(0)
    assert not saved["raw"] and ("mean", True) not in saved["reductions"]
    rule = VanishingGradient(run.trial)
    result = invoke_rule(rule)
    assert result.tensors_evaluated == 0 and len(result.evaluated) == 3
    line = nothing_evaluated_message(rule, len(result.evaluated))
    assert "saved only as reductions (l2, max, mean, min)" in line
    assert 'abs_reductions=["mean"]' in line and "save_raw_tensor=True" in line
    code, events = _rules_json(capsys, run.path, "VanishingGradient")
    summary = events[-1]
    assert code == 2 and summary["evaluated_nothing"] and 'abs_reductions=["mean"]' in summary["reason"]


def test_a_selection_matching_nothing_names_it_and_the_collections_the_trial_holds(runs):
    trial = runs["healthy"].trial
    rule = AllZero(trial, collection_names="activations")
    result = invoke_rule(rule)
    assert result.tensors_evaluated == 0
    line = nothing_evaluated_message(rule, len(result.evaluated))
    assert "collection_names=['activations']" in line
    assert "collections holding tensors: " in line and "weights" in line and "gradients" in line


def test_rules_reading_raw_values_say_so_on_reductions_only(runs):
    trial = runs["no_abs_mean"].trial
    for rule, needs in (
        (AllZero(trial, collection_names="gradients"), "save_raw_tensor=True"),
        (TensorVariance(trial, collection_names="gradients", max_threshold="1"), 'reductions=["variance"]'),
        (SimilarAcrossRuns(trial, other_trials=[trial], collection_names="gradients"), "save_raw_tensor=True"),
    ):
        result = invoke_rule(rule)
        assert result.tensors_evaluated == 0
        line = nothing_evaluated_message(rule, len(result.evaluated))
        assert "saved only as reductions (l2, max, mean, min)" in line and needs in line, line
    # the reductions ExplodingTensor can judge: it judges them
    rule = ExplodingTensor(trial, collection_names="gradients")
    assert invoke_rule(rule).tensors_evaluated > 0


def test_tensor_variance_without_a_threshold_says_so(runs):
    rule = TensorVariance(runs["no_abs_mean"].trial, collection_names="weights")
    result = invoke_rule(rule)
    assert result.tensors_evaluated == 0
    assert "neither max_threshold nor min_threshold is set" in nothing_evaluated_message(rule, len(result.evaluated))


# ---------------------------------------------------------------------- NaN and inf, rule by rule
def test_nan_and_inf_rule_by_rule(tmp_path):
    cols = {"gradients": "^gradient/"}
    steps = [
        [
            ("gradient/g", np.array([np.nan, np.nan])),
            ("z", np.array([0.0, -0.0, np.nan, np.nan])),
            ("w", np.array([1.0, np.inf])),
            ("big", np.array([1e30, -1e30], dtype=np.float32)),
        ],
        [
            ("gradient/g", np.array([np.inf, 1.0])),
            ("z", np.full(4, np.nan)),
            ("w", np.array([1.0, 2.0])),
            ("big", np.ones(2, dtype=np.float32)),
        ],
        [
            ("gradient/g", np.array([1e-12, -1e-12])),
            ("z", np.ones(4)),
            ("w", np.array([1.0, 2.0])),
            ("big", np.ones(2, dtype=np.float32)),
        ],
    ]
    trial = create_trial(_write_trial(tmp_path / "t", steps, collections=cols))
    # VanishingGradient: a NaN or inf gradient never fires; a vanished one does
    f = _finding(VanishingGradient(trial))
    assert (f.step, f.tensors, f.values) == (2, ("gradient/g",), (pytest.approx(1e-12),))
    # AllZero: NaN is not zero, -0.0 is
    f = _finding(AllZero(trial, tensor_regex="^z$", threshold="50"))
    assert (f.step, f.values) == (0, (50.0,))
    assert fired_at(AllZero(trial, tensor_regex="^z$", threshold="51")) is None  # all NaN at step 1: 0% zero
    assert _finding(AllZero(trial, tensor_regex="^z$", threshold="1"), start_step=1) is None
    # TensorVariance: inf gives a NaN variance (no bound fires); a variance overflowing to inf fires max
    assert fired_at(TensorVariance(trial, tensor_regex="^w$", max_threshold="1e30")) is None
    f = _finding(TensorVariance(trial, tensor_regex="^w$", min_threshold="1", max_threshold="1e30"))
    assert (f.step, f.values, f.condition) == (1, (0.25,), "variance < 1")
    f = _finding(TensorVariance(trial, tensor_regex="^big$", max_threshold="1e30"))
    assert (f.step, f.tensors) == (0, ("big",)) and f.values[0] > 1e30
    # ExplodingTensor: NaN and inf, counted per tensor; only_nan leaves the inf out
    f = _finding(ExplodingTensor(trial, tensor_regex="^w$"))
    assert (f.step, f.extra["kind"], f.values) == (0, "inf", (math.inf,))
    assert _finding(ExplodingTensor(trial, tensor_regex="^w$", only_nan="True")) is None


def test_similar_across_runs_nan_equals_nan_and_differs_from_a_number(tmp_path):
    nan = np.array([1.0, np.nan, np.inf])
    a = _write_trial(tmp_path / "a", [[("w", nan)]])
    b = _write_trial(tmp_path / "b", [[("w", nan.copy())]])
    c = _write_trial(tmp_path / "c", [[("w", np.array([1.0, 2.0, np.inf]))]])
    d = _write_trial(tmp_path / "d", [[("w", np.array([1.0, np.nan, -np.inf]))]])
    assert fired_at(SimilarAcrossRuns(create_trial(a), other_trials=[b])) is None
    f = _finding(SimilarAcrossRuns(create_trial(a), other_trials=[c]))
    assert f.tensors == ("w",) and "1 of 3 values" in f.message and "1 NaN in one run only" in f.message
    assert math.isnan(f.values[0])
    f = _finding(SimilarAcrossRuns(create_trial(a), other_trials=[d]))
    assert "1 of 3 values" in f.message and f.values == (math.inf,)


def test_the_reason_said_at_a_step_with_gradients_outlives_steps_without(tmp_path):
    # losses every step, gradients every 5th as reductions without the abs mean: the steps between
    # (no gradient saved there) do not hide why the rule judged nothing
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 4), nn.ReLU(), nn.Linear(4, 2))
    loss_fn, opt = nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.1)
    hook = smd.Hook(
        out_dir=str(tmp_path / "run"),
        include_collections=["gradients", "losses"],
        save_config=smd.SaveConfig(save_interval=1),
        reduction_config=NO_ABS_MEAN,
    )
    hook.get_collection("gradients").save_config = smd.SaveConfig(save_interval=5)
    hook.register_module(model)
    hook.register_loss(loss_fn)
    for _ in range(7):
        opt.zero_grad()
        loss_fn(model(torch.randn(4, 8)), torch.randint(0, 2, (4,))).backward()
        opt.step()
    hook.close()
    trial = create_trial(str(tmp_path / "run"))
    assert trial.tensor_names(collection="gradients") and trial.steps() == list(range(7))
    rule = VanishingGradient(trial)
    result = invoke_rule(rule)
    assert result.tensors_evaluated == 0 and len(result.evaluated) == 7
    line = nothing_evaluated_message(rule, len(result.evaluated))
    assert "saved only as reductions (l2, max, mean, min)" in line and 'abs_reductions=["mean"]' in line, line
    # the policy on its own: a passing reason never replaces one said at a step that had the tensors
    rule = VanishingGradient(trial)
    rule.unjudged("the gradients were not saved at step 3 (other steps have them)", passing=True)
    assert rule.unjudged_reason.startswith("the gradients were not saved")
    rule.unjudged("strong")
    rule.unjudged("passing again", passing=True)
    assert rule.unjudged_reason == "strong"
