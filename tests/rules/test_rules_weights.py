"""WeightUpdateRatio, UnchangedTensor, PoorWeightInitialization on real PyTorch runs."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from runs_tensors import ReluNet, fired_at, small, train

from smdebug.exceptions import RuleConfigurationError, RuleEvaluationConditionMet
from smdebug.rules import invoke_rule
from smdebug.rules.builtin import PoorWeightInitialization, UnchangedTensor, WeightUpdateRatio, required_collections

RELU_INPUTS = {"relu_input": ".*relu_input"}


@pytest.fixture(autouse=True)
def _logging_on():
    logging.disable(logging.NOTSET)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")

    def bad_init(i, model):
        if i == 0:
            model.fc2.weight.mul_(10.0)

    return {
        "healthy": train(root / "healthy", small(seed=0)),
        "frozen": train(root / "frozen", small(seed=0), freeze=("0.weight", "0.bias")),
        "with_eval": train(root / "with_eval", small(seed=0), "TTEEETT"),
        "relu_ok": train(root / "relu_ok", ReluNet(), "T" * 12, regex_collections=RELU_INPUTS),
        "relu_bad_init": train(
            root / "relu_bad_init", ReluNet(), "T" * 4, regex_collections=RELU_INPUTS, before_step=bad_init
        ),
        "relu_lr0": train(root / "relu_lr0", ReluNet(), "T" * 12, lr=0.0, regex_collections=RELU_INPUTS),
    }


def finding_of(rule, **kwargs):
    """What ``rule`` found where it first fires over its trial (a Finding), or None."""
    try:
        invoke_rule(rule, raise_eval_cond=True, **kwargs)
    except RuleEvaluationConditionMet as exc:
        return exc.finding
    return None


# ---------------------------------------------------------------------- WeightUpdateRatio
def test_weight_update_ratio_fires_on_a_frozen_layer(runs):
    run = runs["frozen"]
    assert np.array_equal(run.params[0]["0.weight"], run.params[1]["0.weight"])
    f = finding_of(WeightUpdateRatio(run.trial))
    assert f.step == 1  # step 0 has nothing to compare with
    assert f.tensors == ("Sequential_0.weight",) and f.values == (0.0,) and f.worker == "worker_0"
    assert "Sequential_0.weight is 0 over TRAIN steps 0 -> 1" in f.message and "did not change" in f.message
    assert fired_at(WeightUpdateRatio(run.trial), start_step=3) == 3


def test_weight_update_ratio_large_threshold(runs):
    run = runs["healthy"]
    w0, w1 = run.params[0]["2.weight"], run.params[1]["2.weight"]
    ratio = np.linalg.norm(w1 - w0) / np.linalg.norm(w0)
    assert 1e-4 < ratio < 10
    assert fired_at(WeightUpdateRatio(run.trial, large_threshold="0.0001")) == 1
    assert fired_at(WeightUpdateRatio(run.trial, large_threshold=str(ratio * 100))) is None


def test_weight_update_ratio_does_not_fire_when_training_with_eval_phases(runs):
    # TRAIN steps 0, 1, 5, 6 (EVAL 2-4 keep the weights): EVAL steps are not compared, and
    # TRAIN step 5 is compared with TRAIN step 1
    run = runs["with_eval"]
    assert np.array_equal(run.params[2]["0.weight"], run.params[3]["0.weight"])
    assert fired_at(WeightUpdateRatio(run.trial)) is None
    assert fired_at(WeightUpdateRatio(runs["healthy"].trial)) is None
    # num_steps counts TRAIN steps: with 1, consecutive TRAIN steps are still compared
    assert fired_at(WeightUpdateRatio(run.trial, num_steps="1", large_threshold="0.0001")) == 1
    assert [c.name for c in required_collections("WeightUpdateRatio")] == ["weights"]


# ---------------------------------------------------------------------- UnchangedTensor
def test_unchanged_tensor_fires_on_a_frozen_layer(runs):
    trial = runs["frozen"].trial
    f = finding_of(UnchangedTensor(trial, collection_names="weights"))
    assert f.step == 2  # steps 0, 1, 2 alike
    assert f.tensors == ("Sequential_0.weight",) and f.values == (0.0,)
    assert "Sequential_0.weight did not change over TRAIN steps 0, 1, 2" in f.message
    assert fired_at(UnchangedTensor(trial, tensor_regex="^Sequential_0", num_steps="4")) == 3
    # started at step 4: the history comes from the trial, not from what the rule saw
    assert fired_at(UnchangedTensor(trial, collection_names="weights"), start_step=4) == 4
    # the layer that trains never fires
    assert fired_at(UnchangedTensor(trial, tensor_regex="^Sequential_2")) is None


def test_unchanged_tensor_does_not_fire_on_training_or_on_eval_phases(runs):
    assert fired_at(UnchangedTensor(runs["healthy"].trial, collection_names="weights,biases")) is None
    # EVAL steps 2, 3, 4 hold the same weights; only TRAIN steps are compared
    run = runs["with_eval"]
    assert all(np.array_equal(run.params[2]["0.weight"], run.params[s]["0.weight"]) for s in (3, 4))
    assert fired_at(UnchangedTensor(run.trial, collection_names="weights")) is None


def test_unchanged_tensor_tolerance(runs):
    run = runs["healthy"]
    w = [run.params[s]["2.weight"] for s in range(3)]
    change = max(np.abs(w[2] - w[0]).max(), np.abs(w[1] - w[0]).max())
    assert fired_at(UnchangedTensor(run.trial, tensor_regex="^Sequential_2.weight$")) is None
    rule = UnchangedTensor(run.trial, tensor_regex="^Sequential_2.weight$", atol=str(change * 2), rtol="0")
    assert fired_at(rule) == 2


# ---------------------------------------------------------------------- PoorWeightInitialization
def test_poor_weight_initialization_fires_on_badly_scaled_layers(runs):
    run = runs["relu_bad_init"]
    trial = run.trial
    assert trial.tensor_names(regex="relu_input") == ["l1_relu_input_0", "l2_relu_input_0"]
    v1, v2 = (np.var(trial.tensor(n).value(0)) for n in ["l1_relu_input_0", "l2_relu_input_0"])
    assert v2 / v1 > 10
    f = finding_of(PoorWeightInitialization(trial))
    assert f.step == 0 and f.tensors == ("l1_relu_input_0", "l2_relu_input_0")
    assert f.values[1] / f.values[0] == pytest.approx(v2 / v1, rel=1e-4)
    assert "activation-input variances range from" in f.message and "more than threshold 10" in f.message
    assert fired_at(PoorWeightInitialization(trial, threshold=str(2 * v2 / v1))) is None


def test_poor_weight_initialization_fires_when_the_loss_stays_flat(runs):
    trial = runs["relu_lr0"].trial  # learning rate 0: the loss never improves after step 0
    f = finding_of(PoorWeightInitialization(trial))
    assert f.step == 5 and "has not improved on its best" in f.message and "(patience 5)" in f.message
    assert f.values[0] == f.values[1]  # the same loss as at step 0
    assert fired_at(PoorWeightInitialization(trial, patience="2")) == 2
    # only the first `steps` saved steps are analyzed
    assert fired_at(PoorWeightInitialization(trial, steps="3")) is None


def test_poor_weight_initialization_does_not_fire_on_a_well_initialized_net(runs):
    run = runs["relu_ok"]
    assert all(b < a for a, b in zip(run.losses, run.losses[1:]))
    assert fired_at(PoorWeightInitialization(run.trial)) is None
    c = required_collections("PoorWeightInitialization")
    assert [(x.name, x.parameters["include_regex"]) for x in c] == [("relu_input", ".*relu_input")]


def test_poor_weight_initialization_gradient_range(runs):
    run = runs["relu_ok"]
    ranges = [np.percentile(g, 95) - np.percentile(g, 5) for g in run.grads[0].values()]
    f = finding_of(PoorWeightInitialization(run.trial, distribution_range=str(max(ranges) * 2)))
    assert f.step == 0 and "p95 - p5" in f.message and f.condition.startswith("p95 - p5 ")
    assert f.values[0] < max(ranges) * 2


# ---------------------------------------------------------------------- string parameters
def test_defaults_and_string_parameters(runs):
    trial = runs["healthy"].trial
    w = WeightUpdateRatio(trial)
    assert (w.num_steps, w.large_threshold, w.small_threshold, w.epsilon) == (None, 10.0, 1e-8, 1e-9)
    assert WeightUpdateRatio(trial, num_steps="None").num_steps is None
    assert WeightUpdateRatio(trial, num_steps="10.0").num_steps == 10
    u = UnchangedTensor(trial, collection_names="weights")
    assert (u.num_steps, u.rtol, u.atol, u.equal_nan) == (3, 1e-5, 1e-8, False)
    assert UnchangedTensor(trial, collection_names="weights", equal_nan="False").equal_nan is False
    assert UnchangedTensor(trial, collection_names="weights", equal_nan="true").equal_nan is True
    p = PoorWeightInitialization(trial)
    assert [r.pattern for r in p.activation_inputs_regex] == [".*relu_input"]
    assert (p.threshold, p.distribution_range, p.patience, p.steps) == (10.0, 0.001, 5, 10)


@pytest.mark.parametrize(
    ("rule", "params", "name"),
    [
        (WeightUpdateRatio, {"large_threshold": "abc"}, "large_threshold"),
        (WeightUpdateRatio, {"num_steps": "2.5"}, "num_steps"),
        (WeightUpdateRatio, {"small_threshold": "20"}, "small_threshold"),
        (WeightUpdateRatio, {"epsilon": "-1"}, "epsilon"),
        (UnchangedTensor, {"num_steps": "1"}, "num_steps"),
        (UnchangedTensor, {"equal_nan": "no way"}, "equal_nan"),
        (UnchangedTensor, {"tensor_regex": "("}, "tensor_regex"),
        (PoorWeightInitialization, {"activation_inputs_regex": "[relu"}, "activation_inputs_regex"),
        (PoorWeightInitialization, {"steps": "0"}, "steps"),
        (PoorWeightInitialization, {"patience": "five"}, "patience"),
        (PoorWeightInitialization, {"unknown": "1"}, "unknown"),
    ],
)
def test_bad_parameters_are_refused_when_the_rule_is_built(runs, rule, params, name):
    with pytest.raises(RuleConfigurationError) as info:
        rule(runs["healthy"].trial, **params)
    assert info.value.parameter == name
    assert name in str(info.value) and rule.__name__ in str(info.value)
