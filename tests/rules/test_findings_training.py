"""What the loss, weight, activation, classification and tree rules name when they fire
(:class:`smdebug.rules.finding.Finding`: its message, ``Finding.to_json()`` and ``smdebug rules
--json``), what each does with NaN and inf, and the reason each gives when it judged nothing.

Trials come from real PyTorch and XGBoost runs through the public hooks; where a test needs a
loss sequence of its own (an exploding loss), a real ``nn.MSELoss`` registered with
``smdebug.pytorch.Hook`` is fed predictions whose squared error is that sequence. Classification
values that no model gives (NaN labels) are written with FileWriter (rule_trials.write_trial).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
import torch.nn as nn
import xgboost as xgb
from runs_tensors import ReluNet, small
from runs_tensors import train as train_full
from runs_training import Classifier, TextNet, digits, full_batch, train
from xgb_trials import _Schedule, breast_cancer, split

import smdebug.pytorch as smd
import smdebug.xgboost as smdxgb
from rule_trials import write_trial
from smdebug.cli import main
from smdebug.core.stop_request import read_stop_request
from smdebug.exceptions import RuleEvaluationConditionMet
from smdebug.rules import invoke_rule
from smdebug.rules.builtin import (
    CheckInputImages,
    ClassImbalance,
    Confusion,
    DeadRelu,
    FeatureImportanceOverweight,
    LossNotDecreasing,
    NLPSequenceRatio,
    Overfit,
    Overtraining,
    PoorWeightInitialization,
    SaturatedActivation,
    StalledTrainingRule,
    TreeDepth,
    UnchangedTensor,
    WeightUpdateRatio,
)
from smdebug.rules.finding import FINDING_FIELDS, show_value
from smdebug.rules.rule_invoker import nothing_evaluated_message
from smdebug.trials import create_trial
from smdtest import FakeClock

MSE = "MSELoss_output_0"
NAN = float("nan")


# ---------------------------------------------------------------- helpers
def finding_of(rule, **kwargs):
    """What ``rule`` found where it first fires over its trial, or None."""
    try:
        invoke_rule(rule, raise_eval_cond=True, **kwargs)
    except RuleEvaluationConditionMet as exc:
        assert exc.finding is not None, f"{type(rule).__name__} fired without saying what it found"
        assert str(exc).endswith(exc.finding.text())
        return exc.finding
    return None


def reason_of(rule) -> str:
    """The "evaluated no tensor" line of a rule that judged nothing over its whole trial."""
    run = invoke_rule(rule)
    assert run.fired == [] and run.tensors_evaluated == 0, run
    return nothing_evaluated_message(rule, len(run.evaluated))


def cli_events(capsys, path, rule, **params) -> list:
    """``smdebug rules PATH --rule RULE --param k=v ... --json``, its JSON lines."""
    argv = ["rules", str(path), "--rule", rule, "--json"]
    for k, v in params.items():
        argv += ["--param", f"{k}={v}"]
    main(argv)
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def check_json(f, trial_path, capsys, rule, **params):
    """``Finding.to_json()`` has the stable fields, and ``smdebug rules --json`` prints them for the
    same first firing."""
    got = f.to_json()
    assert list(got)[: len(FINDING_FIELDS)] == list(FINDING_FIELDS)
    assert got["rule"] == rule and got["message"] == f.message and got["tensors"] == list(f.tensors)
    json.dumps(got, allow_nan=False)  # NaN and inf are strings: strict JSON
    fired = [e for e in cli_events(capsys, trial_path, rule, **params) if e["event"] == "fired"]
    assert fired, f"smdebug rules --json: {rule} did not fire"
    assert {k: fired[0][k] for k in FINDING_FIELDS} == {k: got[k] for k in FINDING_FIELDS}
    return got


class _Out(nn.Module):
    """Returns its input: the 'prediction' the MSE loss judges."""

    def forward(self, x):
        return x


def write_losses(path, losses, schedule=None):
    """A trial of a real MSELoss registered with the PyTorch hook, whose value at global step s is
    ``losses[s]`` (float32): the prediction is sqrt(loss) against a target of 0. ``schedule``: a
    letter per step, T (TRAIN) or E (EVAL)."""
    model, loss_fn = _Out(), nn.MSELoss()
    hook = smd.Hook(out_dir=str(path), save_config=smd.SaveConfig(save_interval=1), include_collections=["losses"])
    hook.register_module(model)
    hook.register_loss(loss_fn)
    for s, v in enumerate(losses):
        hook.set_mode(smd.modes.EVAL if schedule and schedule[s] == "E" else smd.modes.TRAIN)
        loss_fn(model(torch.tensor([math.sqrt(v)], dtype=torch.float32)), torch.zeros(1))
    hook.close()
    smd.del_hook()
    return str(path)


# the loss of a run whose learning rate is far too large: 0.58, 2.5e9, 2e20, 5.9e31 at steps 0,
# 10, 20, 30 (geometric in between), NaN from step 33 on; 44 steps
_ANCHORS = {0: 0.58, 10: 2.5e9, 20: 2e20, 30: 5.9e31, 40: 5.9e42}


def exploding(s: int) -> float:
    if s >= 33:
        return NAN
    a = max(k for k in _ANCHORS if k <= s)
    b = a + 10
    la, lb = math.log10(_ANCHORS[a]), math.log10(_ANCHORS[b])
    return 10 ** (la + (lb - la) * (s - a) / (b - a))


EXPLODING = [exploding(s) for s in range(44)]


# ---------------------------------------------------------------- LossNotDecreasing
def test_an_exploding_loss_fires_and_names_the_loss_and_its_values(tmp_path, capsys):
    path = write_losses(tmp_path / "t", EXPLODING)
    f = finding_of(LossNotDecreasing(create_trial(path)))
    assert (f.step, f.mode, f.mode_step, f.worker, f.tensors) == (10, "TRAIN", 10, "worker_0", (MSE,))
    assert f.values == pytest.approx((0.58, 2.5e9), rel=1e-5)
    pct = show_value(100 * (f.values[1] - f.values[0]) / f.values[0])
    assert pct.startswith("4.31e+11")
    assert f.message == (
        f"{MSE} went from 0.58 to {show_value(f.values[1])} over TRAIN steps 0 -> 10 (+{pct} %, "
        "more than increase_threshold_percent 5)"
    )
    assert f.condition == f"increase {pct} % > increase_threshold_percent 5"
    got = check_json(f, path, capsys, "LossNotDecreasing")
    assert got["values"] == pytest.approx([0.58, 2.5e9], rel=1e-5)


def test_a_nan_loss_fires_at_once_whatever_num_steps(tmp_path, capsys):
    path = write_losses(tmp_path / "t", EXPLODING)
    # num_steps 40: the first comparison would be at step 40; the NaN at step 33 fires at once
    f = finding_of(LossNotDecreasing(create_trial(path), num_steps="40"))
    assert (f.step, f.tensors, f.condition) == (33, (MSE,), f"{MSE} is NaN")
    assert math.isnan(f.values[0]) and f.message == f"{MSE} is NaN: a NaN or infinite loss is not decreasing"
    got = check_json(f, path, capsys, "LossNotDecreasing", num_steps=40)
    assert got["values"] == ["NaN"]


def test_the_exploding_run_with_its_nan_evaluation_no_longer_passes(tmp_path):
    """33 TRAIN steps exploding, then 11 EVAL steps of NaN: the default mode judges EVAL, where
    every value is NaN; NaN compared as False, so this gave "no issue"; now step 33 fires."""
    path = write_losses(tmp_path / "t", EXPLODING, "T" * 33 + "E" * 11)
    rule = LossNotDecreasing(create_trial(path))
    f = finding_of(rule)
    assert (f.step, f.mode, f.mode_step) == (33, "EVAL", 0) and math.isnan(f.values[0])
    assert invoke_rule(LossNotDecreasing(create_trial(path))).fired == list(range(33, 44))


def test_an_infinite_loss_fires_and_a_finite_one_after_a_nan_does_not(tmp_path):
    f = finding_of(LossNotDecreasing(create_trial(write_losses(tmp_path / "inf", [1.0, 0.9, math.inf]))))
    assert (f.step, f.values, f.condition) == (2, (math.inf,), f"{MSE} is inf")
    # step 1 NaN fires; step 3 compared with step 1 (NaN, two steps back) does not
    run = invoke_rule(
        LossNotDecreasing(create_trial(write_losses(tmp_path / "nan", [1.0, NAN, 0.5, 0.4])), num_steps="2")
    )
    assert run.fired == [1] and run.tensors_evaluated == 2


def test_too_few_saved_steps_of_the_loss_is_the_reason_given(tmp_path, capsys):
    x, y = digits()
    run = train(tmp_path / "t", Classifier(), "T" * 6, full_batch(x[:50] / 16, y[:50]))
    reason = reason_of(LossNotDecreasing(run.trial))
    assert "selection matched nothing" not in reason
    assert (
        "fewer saved steps of CrossEntropyLoss_output_0 than num_steps=10 needs: 6 saved TRAIN steps (0 to 5)" in reason
    )
    assert "lower num_steps (to 5 at most here) or save the loss more often" in reason
    (summary,) = cli_events(capsys, tmp_path / "t", "LossNotDecreasing")
    assert summary["evaluated_nothing"] and "6 saved TRAIN steps" in summary["reason"]
    # a selection that matches nothing says what was asked and what the trial holds
    reason = reason_of(LossNotDecreasing(run.trial, tensor_regex="^loss$", use_losses_collection="False"))
    assert "tensor_regex ['^loss$'] matched no tensor; the trial holds collections losses (1)" in reason
    # an explicit mode the loss was never saved in
    reason = reason_of(LossNotDecreasing(run.trial, mode="EVAL"))
    assert "have no saved EVAL step (mode=EVAL; the trial's modes: TRAIN)" in reason


def test_the_default_mode_with_too_few_eval_steps_points_to_train(tmp_path):
    x, y = digits()
    run = train(tmp_path / "t", Classifier(), "T" * 12 + "EEE", full_batch(x[:50] / 16, y[:50], x[:50], y[:50]))
    reason = reason_of(LossNotDecreasing(run.trial))
    assert "3 saved EVAL steps (0 to 2)" in reason and "its 12 TRAIN steps would do: pass mode=TRAIN" in reason


# ---------------------------------------------------------------- Overfit
def test_overfit_names_both_means_and_the_ratio(tmp_path, capsys):
    path = write_losses(tmp_path / "t", [1.0, 1.0, 1.0, 1.5, 1.5, 1.0], "TTTEET")
    f = finding_of(Overfit(create_trial(path)))
    assert (f.step, f.mode, f.tensors) == (5, "TRAIN", (MSE,)) and f.values == pytest.approx((1.0, 1.5))
    assert f.message == (
        f"validation mean of {MSE} 1.5 (EVAL steps 0 to 1) is above the training mean 1 "
        "(TRAIN steps 0 to 2) by 50 %, more than ratio_threshold 0.1"
    )
    assert f.condition == "(validation - train) / |train| = 0.5 > ratio_threshold 0.1"
    check_json(f, path, capsys, "Overfit")


def test_overfit_nan_validation_is_not_judged_and_inf_counts(tmp_path):
    # checks at steps 3, 6, 9: ratio 0.5, then a NaN validation phase (not judged: the count of
    # checks in a row stays 1), then 0.5 again: patience 2 fires at the third check
    path = write_losses(tmp_path / "nan", [1.0, 1.0, 1.5, 1.0, 1.0, NAN, 1.0, 1.0, 1.5, 1.0], "TTETTETTET")
    run = invoke_rule(Overfit(create_trial(path), patience="2"))
    assert run.fired == [9] and run.tensors_evaluated == 6  # two checks judged, three values each
    # +inf validation over a finite training mean is infinitely above it
    f = finding_of(Overfit(create_trial(write_losses(tmp_path / "inf", [1.0, math.inf, 1.0], "TET"))))
    assert f.step == 2 and f.values == (1.0, math.inf) and "by inf %" in f.message


def test_overfit_without_an_eval_phase_says_so(tmp_path):
    reason = reason_of(Overfit(create_trial(write_losses(tmp_path / "t", [1.0, 0.9, 0.8]))))
    assert f"the losses ({MSE}) have no EVAL value so far" in reason
    reason = reason_of(Overfit(create_trial(write_losses(tmp_path / "u", [1.0, 0.9, 0.8], "TTE"))))
    assert "no TRAIN step has followed an EVAL phase yet" in reason


# ---------------------------------------------------------------- Overtraining
def test_overtraining_names_the_best_value_and_the_wait(tmp_path, capsys):
    path = write_losses(tmp_path / "t", [1.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5])
    f = finding_of(Overtraining(create_trial(path)))
    assert (f.step, f.tensors) == (6, (MSE,)) and f.values == pytest.approx((0.5, 0.5))
    assert f.message == (
        f"train loss {MSE} has not improved on its best 0.5 (TRAIN step 1) by more than delta 0.01 "
        "for 5 saved TRAIN steps (patience_train 5); now 0.5"
    )
    check_json(f, path, capsys, "Overtraining")


def test_overtraining_a_nan_loss_is_no_improvement(tmp_path):
    f = finding_of(Overtraining(create_trial(write_losses(tmp_path / "t", [1.0, 0.5, NAN, NAN])), patience_train="2"))
    assert f.step == 3 and math.isnan(f.values[0]) and f.values[1] == pytest.approx(0.5)
    f = finding_of(Overtraining(create_trial(write_losses(tmp_path / "u", [NAN, NAN])), patience_train="1"))
    assert f.step == 0 and "has had no finite value for 1 saved TRAIN steps" in f.message


def test_overtraining_with_fewer_steps_than_patience_says_so(tmp_path):
    reason = reason_of(Overtraining(create_trial(write_losses(tmp_path / "t", [1.0, 0.9, 0.8]))))
    assert f"fewer saved steps of {MSE} than patience_train=5 needs: 3 train values so far" in reason


# ---------------------------------------------------------------- WeightUpdateRatio, UnchangedTensor
@pytest.fixture(scope="module")
def weight_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("w")

    def nan_weight(i, model):
        if i == 2:
            model[0].weight[0, 0] = NAN

    return {
        "frozen": train_full(root / "frozen", small(0), freeze=("0.weight", "0.bias")),
        "nan": train_full(root / "nan", small(0), before_step=nan_weight),
        "one": train_full(root / "one", small(0), "T"),
    }


def test_weight_update_ratio_names_the_layer_ratio_and_worker(weight_runs, capsys):
    run = weight_runs["frozen"]
    f = finding_of(WeightUpdateRatio(run.trial))
    assert (f.step, f.tensors, f.values, f.worker) == (1, ("Sequential_0.weight",), (0.0,), "worker_0")
    assert f.message == (
        "update ratio |w - w_prev| / |w_prev| of Sequential_0.weight is 0 over TRAIN steps 0 -> 1, "
        "below small_threshold 1e-08: the weights did not change"
    )
    assert f.condition == "ratio 0 < small_threshold 1e-08"
    check_json(f, run.path, capsys, "WeightUpdateRatio")


def test_weight_update_ratio_fires_on_nan_weights(weight_runs):
    run = weight_runs["nan"]
    assert np.isnan(run.params[2]["0.weight"]).any() and not np.isnan(run.params[1]["0.weight"]).any()
    f = finding_of(WeightUpdateRatio(run.trial))
    assert f.step == 2 and f.tensors == ("Sequential_0.weight",) and math.isnan(f.values[0])
    assert f.condition == "ratio NaN is not finite" and "hold NaN or inf" in f.message


def test_weight_update_ratio_reasons(weight_runs, tmp_path):
    reason = reason_of(WeightUpdateRatio(weight_runs["one"].trial))
    assert "has 1 saved TRAIN step up to TRAIN step 0: WeightUpdateRatio compares two saved steps" in reason
    # a trial without weights: what it holds
    path = write_losses(tmp_path / "t", [1.0, 0.9])
    reason = reason_of(WeightUpdateRatio(create_trial(path)))
    assert "the 'weights' collection holds no tensor; the trial holds collections losses (1)" in reason


def test_unchanged_tensor_names_the_steps_and_tolerances(weight_runs, capsys):
    run = weight_runs["frozen"]
    f = finding_of(UnchangedTensor(run.trial, tensor_regex="^Sequential_0.weight$"))
    assert (f.step, f.tensors, f.values) == (2, ("Sequential_0.weight",), (0.0,))
    assert f.message == (
        "Sequential_0.weight did not change over TRAIN steps 0, 1, 2 (largest change 0, within "
        "rtol 1e-05 and atol 1e-08)"
    )
    check_json(f, run.path, capsys, "UnchangedTensor", tensor_regex="^Sequential_0.weight$")


def test_unchanged_tensor_nan_is_unchanged_only_with_equal_nan(weight_runs):
    run = weight_runs["nan"]
    w = [p["0.weight"] for p in run.params]
    # the oracle: the first step whose last 3 saved values are alike, NaN equal to NaN at the same places
    same = [s for s in range(2, len(w)) if all(np.allclose(w[s - k], w[s], equal_nan=True) for k in (1, 2))]
    assert same, "the premise: the NaN weights stop changing"
    f = finding_of(UnchangedTensor(run.trial, tensor_regex="^Sequential_0.weight$", equal_nan="True"))
    assert f.step == same[0]
    assert finding_of(UnchangedTensor(run.trial, tensor_regex="^Sequential_0.weight$")) is None


def test_unchanged_tensor_reasons(weight_runs):
    reason = reason_of(UnchangedTensor(weight_runs["one"].trial, collection_names="weights"))
    assert "than num_steps=3 needs: 1 saved TRAIN steps up to TRAIN step 0" in reason
    reason = reason_of(UnchangedTensor(weight_runs["one"].trial, collection_names="weight"))
    assert "collection_names=['weight'], tensor_regex=[] matched no tensor; the trial holds collections" in reason
    assert "weights (2)" in reason


# ---------------------------------------------------------------- PoorWeightInitialization
RELU_INPUTS = {"relu_input": ".*relu_input"}


def test_poor_weight_initialization_names_both_layers(tmp_path, capsys):
    def bad_init(i, model):
        if i == 0:
            model.fc2.weight.mul_(10.0)

    run = train_full(tmp_path / "t", ReluNet(), "TT", regex_collections=RELU_INPUTS, before_step=bad_init)
    f = finding_of(PoorWeightInitialization(run.trial))
    assert f.step == 0 and f.tensors == ("l1_relu_input_0", "l2_relu_input_0") and f.worker == "worker_0"
    assert f.message.startswith("activation-input variances range from") and "more than threshold 10" in f.message
    check_json(f, run.path, capsys, "PoorWeightInitialization")


def test_poor_weight_initialization_fires_on_a_nan_activation_input(tmp_path):
    def nan_init(i, model):
        if i == 0:
            model.fc1.weight[0, 0] = NAN

    run = train_full(tmp_path / "t", ReluNet(), "T", regex_collections=RELU_INPUTS, before_step=nan_init)
    f = finding_of(PoorWeightInitialization(run.trial))
    assert f.step == 0 and f.condition == "variance is not finite" and math.isnan(f.values[0])
    assert f.tensors[0] in ("l1_relu_input_0", "l2_relu_input_0")


# ---------------------------------------------------------------- DeadRelu, SaturatedActivation
def _relu_trial(path, bias=None, weight_nan=False, steps=2):
    x, y = digits()
    model = Classifier(hidden=10)
    with torch.no_grad():
        if bias is not None:
            model.fc1.bias[:8] = bias
        if weight_nan:
            model.fc1.weight[:, 0] = NAN
    return train(
        path,
        model,
        "T" * steps,
        full_batch(x[:100] / 16, y[:100]),
        hook_kwargs={"include_collections": ["losses", "outputs"]},
    ).trial


def test_dead_relu_names_the_layer_and_share(tmp_path, capsys):
    trial = _relu_trial(tmp_path / "t", bias=-100.0)
    f = finding_of(DeadRelu(trial))
    assert (f.step, f.tensors, f.values) == (0, ("relu_output_0",), (80.0,))
    assert f.message == (
        "80 % of the units of relu_output_0 are dead (positive on fewer than threshold_inactivity 1 % "
        "of 100 samples), more than threshold_layer 50 %"
    )
    assert f.condition == "dead units 80 % > threshold_layer 50 %"
    check_json(f, tmp_path / "t", capsys, "DeadRelu")


def test_dead_relu_counts_nan_outputs_as_dead_and_says_so(tmp_path):
    f = finding_of(DeadRelu(_relu_trial(tmp_path / "t", weight_nan=True, steps=1)))
    assert f.step == 0 and f.values == (100.0,)
    assert "; 100 % of its values are NaN, which counts as not positive" in f.message


def test_dead_relu_selection_matching_nothing_says_what_the_trial_holds(tmp_path):
    x, y = digits()
    trial = train(tmp_path / "t", Classifier(), "TT", full_batch(x[:50] / 16, y[:50])).trial
    reason = reason_of(DeadRelu(trial))
    assert "tensor_regex=['.*relu_output'] matched no tensor; the trial holds collections losses (1)" in reason


class TanhNet(nn.Module):
    def __init__(self, scale=1.0):
        super().__init__()
        torch.manual_seed(0)
        self.fc1 = nn.Linear(64, 16)
        self.tanh = nn.Tanh()
        self.fc2 = nn.Linear(16, 10)
        with torch.no_grad():
            self.fc1.weight.mul_(scale)
            self.fc1.bias.mul_(scale)

    def forward(self, x):
        return self.fc2(self.tanh(self.fc1(x)))


def _tanh_trial(path, scale):
    x, y = digits()
    return train(
        path,
        TanhNet(scale),
        "T",
        full_batch(x[:200], y[:200]),
        lr=0.0,
        hook_kwargs={"include_collections": ["losses", "inputs"]},
    ).trial


def test_saturated_activation_names_the_range(tmp_path, capsys):
    trial = _tanh_trial(tmp_path / "t", 5000.0)
    f = finding_of(SaturatedActivation(trial))
    assert f.step == 0 and f.tensors == ("tanh_input_0",) and f.values[0] > 50
    assert "are saturated (inside the tanh range (-9.5, 9.5) on fewer than threshold_inactivity 1 %" in f.message
    check_json(f, tmp_path / "t", capsys, "SaturatedActivation")


def test_saturated_activation_nan_inputs_and_names_it_cannot_judge(tmp_path):
    trial = _tanh_trial(tmp_path / "t", NAN)
    f = finding_of(SaturatedActivation(trial))
    assert f.values == (100.0,) and "100 % of its values are NaN, which counts as not inside the range" in f.message
    reason = reason_of(SaturatedActivation(trial, tensor_regex="^fc1_input_0$"))
    assert "the selected tensors (fc1_input_0) are not layer activations it can judge" in reason
    assert "neither 'tanh' nor 'sigmoid'" in reason


# ---------------------------------------------------------------- CheckInputImages, NLPSequenceRatio
def _image_trial(path, images, steps=3):
    _, y = digits()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 10))

    def batch(_letter, i):
        return images[100 * i : 100 * (i + 1)], y[100 * i : 100 * (i + 1)]

    return train(path, model, "T" * steps, batch, lr=0.0, hook_kwargs={"include_regex": ["^Sequential_input_0$"]}).trial


def test_check_input_images_names_the_channel_mean(tmp_path, capsys):
    x, _ = digits()
    images = x.reshape(-1, 1, 8, 8)
    trial = _image_trial(tmp_path / "t", images)
    f = finding_of(CheckInputImages(trial, regex="^Sequential_input_0$", threshold_samples="200"))
    mean = float(images[:200].mean(dtype=np.float64))
    assert f.step == 1 and f.tensors == ("Sequential_input_0",) and f.values[0] == pytest.approx(mean, rel=1e-6)
    assert f.message.startswith(f"channel 0 of the input images has mean {f.values[0]:.4g} over 200 images")
    check_json(f, tmp_path / "t", capsys, "CheckInputImages", regex="^Sequential_input_0$", threshold_samples=200)
    reason = reason_of(CheckInputImages(trial, regex="^Sequential_input_0$"))
    assert (
        "300 images seen in Sequential_input_0, fewer than threshold_samples 500: lower threshold_samples or "
        "save the inputs at more steps"
    ) in reason
    reason = reason_of(CheckInputImages(trial))
    assert "regex '.*hybridsequential0_input_0' matched no tensor" in reason
    assert "tensors named like inputs: Sequential_input_0" in reason


def test_check_input_images_fires_on_a_nan_pixel(tmp_path):
    x, _ = digits()
    z = ((x - x.mean()) / x.std()).reshape(-1, 1, 8, 8).astype(np.float32)
    z[150, 0, 3, 3] = NAN
    trial = _image_trial(tmp_path / "t", z)
    assert (
        finding_of(CheckInputImages(trial, regex="^Sequential_input_0$", threshold_samples="100"), end_step=1) is None
    )  # normalised digits
    f = finding_of(CheckInputImages(trial, regex="^Sequential_input_0$", threshold_samples="100"))
    assert f.step == 1 and math.isnan(f.values[0]) and "mean NaN" in f.message


def test_nlp_sequence_ratio_names_the_token_and_share(tmp_path, capsys):
    ids = np.zeros((4, 10), dtype=np.int64)
    ids[:, :3] = np.arange(1, 13).reshape(4, 3)  # 3 tokens and 7 of padding per sequence

    def batch(_letter, _i):
        return ids, np.zeros(4, dtype=np.int64)

    trial = train(
        tmp_path / "t", TextNet(), "T", batch, hook_kwargs={"include_collections": ["losses", "inputs"]}
    ).trial
    f = finding_of(NLPSequenceRatio(trial, tensor_regex=".*embedding_input_0"))
    assert (f.step, f.tensors, f.values) == (0, ("embedding_input_0",), (70.0,))
    assert f.message == "token 0 is 70 % of embedding_input_0 (40 tokens), more than its threshold 50 %"
    check_json(f, tmp_path / "t", capsys, "NLPSequenceRatio", tensor_regex=".*embedding_input_0")
    reason = reason_of(NLPSequenceRatio(trial))
    assert "tensor_regex=['.*embedding0_input_0'] matched no tensor; the trial holds collections" in reason


# ---------------------------------------------------------------- Confusion, ClassImbalance
POOR = {"objective": "binary:logistic", "max_depth": 1, "eta": 0.01, "base_score": 0.9, "nthread": 1}
DEPTH3 = {"objective": "binary:logistic", "max_depth": 3, "nthread": 1}


def xgb_trial(path, params, rounds, train_set, val_set, schedule=None):
    """A real XGBoost run written by ``smdebug.xgboost.Hook`` (every round)."""
    dtrain, dval = xgb.DMatrix(*train_set), xgb.DMatrix(*val_set)
    hook = smdxgb.Hook(
        out_dir=str(path),
        save_config=smdxgb.SaveConfig(save_interval=1),
        validation_data=dval,
        include_collections=["metrics", "losses", "predictions", "labels", "trees", "feature_importance"],
    )
    booster = xgb.train(
        params,
        dtrain,
        rounds,
        evals=[(dtrain, "train"), (dval, "validation")],
        verbose_eval=False,
        callbacks=[_Schedule(schedule or {}), hook],
    )
    hook.close()
    return str(path), booster


@pytest.fixture(scope="module")
def cancer():
    X, y = breast_cancer()
    return split(X, y, 150, seed=1)


@pytest.fixture(scope="module")
def poor(tmp_path_factory, cancer):
    return xgb_trial(tmp_path_factory.mktemp("poor") / "t", POOR, 4, *cancer)[0]


def test_confusion_names_the_class_and_counts(poor, cancer, capsys):
    labels = cancer[1][1]
    n0 = int((labels == 0).sum())
    rule = Confusion(create_trial(poor))
    f = finding_of(rule)
    assert (f.step, f.tensors, f.values) == (0, ("labels", "predictions"), (0.0,))
    assert f.message == f"class 0: diagonal ratio 0 < min_diag 0.9 (0 of {n0} samples labelled 0 predicted 0)"
    assert rule.last_reason == f.message and f.condition == "C[0,0] / sum_j C[0,j] = 0 < min_diag 0.9"
    check_json(f, poor, capsys, "Confusion")


def test_confusion_leaves_nan_pairs_out_and_says_how_many(tmp_path):
    labels = np.tile([0.0, 1.0], 10)
    preds = labels.copy()
    preds[:4] = NAN  # 4 NaN predictions; of the 16 left, label 1 always predicted 0 below
    preds[5::2] = 0.0
    path = write_trial(tmp_path / "t", {"labels": {0: labels}, "predictions": {0: preds}})
    f = finding_of(Confusion(create_trial(path)))
    assert f.message.startswith("class 1: diagonal ratio 0 < min_diag 0.9 (0 of 8 samples labelled 1 predicted 1)")
    assert f.message.endswith("(4 of 20 pairs left out: NaN, inf or a class outside [0, 2))")
    all_nan = write_trial(tmp_path / "u", {"labels": {0: labels}, "predictions": {0: np.full(20, NAN)}})
    assert "is a class" in reason_of(Confusion(create_trial(all_nan)))


def test_confusion_without_predictions_says_what_was_asked(tmp_path):
    path = write_trial(tmp_path / "t", {"labels": {0: np.zeros(4)}}, {"labels": ["labels"]})
    reason = reason_of(Confusion(create_trial(path)))
    assert "no tensor of predictions (collection 'predictions', tensor 'predictions'); the trial holds" in reason


def test_class_imbalance_names_the_classes_and_counts(tmp_path, cancer, capsys):
    (X_tr, y_tr), (X_va, y_va) = cancer
    keep = np.r_[np.flatnonzero(y_va == 0)[:8], np.flatnonzero(y_va == 1)]
    assert (y_va[keep] == 1).sum() == 98  # 98 benign for 8 malignant
    path, _ = xgb_trial(tmp_path / "t", DEPTH3, 5, (X_tr, y_tr), (X_va[keep], y_va[keep]))
    rule = ClassImbalance(create_trial(path))
    f = finding_of(rule)
    assert f.step == 4 and f.values == (12.25,)  # 106 labels a round: 530 >= 500 at round 4
    assert f.message == (
        "largest/smallest class count 490/40 = 12.25 > 10 (threshold_imbalance; class 1: 490, "
        "class 0: 40, over 530 labels)"
    )
    assert set(f.tensors) == {"labels", "predictions"} and rule.last_reason == f.message
    check_json(f, path, capsys, "ClassImbalance")


def test_class_imbalance_nan_labels_left_out_nan_predictions_mispredicted(tmp_path):
    labels = np.repeat([0.0, 1.0], 50)
    labels[:10] = NAN  # left out: 40 of class 0, 50 of class 1
    preds = np.repeat([0.0, 1.0], 50)
    preds[10:45] = NAN  # 35 of the 40 class-0 predictions are NaN: mispredicted
    path = write_trial(tmp_path / "t", {"labels": {0: labels}, "predictions": {0: preds}})
    rule = ClassImbalance(create_trial(path), samples="50")
    f = finding_of(rule)
    assert rule.counts.tolist() == [40, 50] and rule.mispredicted.tolist() == [35, 0]
    assert f.message.startswith("class 0: mispredicted fraction 0.875 > threshold_misprediction 0.7 (35 of 40")


def test_class_imbalance_with_too_few_labels_says_how_many(poor):
    reason = reason_of(ClassImbalance(create_trial(poor), samples="1000"))
    assert "600 labels counted (labels, predictions), fewer than samples 1000: lower samples or save" in reason


# ---------------------------------------------------------------- TreeDepth, FeatureImportanceOverweight
@pytest.fixture(scope="module")
def deepening(tmp_path_factory, cancer):
    deep = {3: {"max_depth": 12, "min_child_weight": 0, "lambda": 0}}
    return xgb_trial(tmp_path_factory.mktemp("deep") / "t", DEPTH3, 5, *cancer, schedule=deep)


def test_tree_depth_names_the_node_ids_not_the_leaf_nans(deepening, capsys):
    path, booster = deepening
    trial = create_trial(path)
    # the hook's tree columns hold NaN for leaves: structure, not a finding
    split_at = trial.tensor("trees/Split").value(3)
    assert np.isnan(split_at).any() and np.isfinite(split_at).any()
    nodes = trial.tensor("trees/Node").value(3)
    f = finding_of(TreeDepth(trial))
    depth = int(np.floor(np.log2(nodes.max())))
    assert (f.step, f.tensors, f.values) == (3, ("trees/Node",), (depth,)) and depth > 4
    assert f.message == (
        f"the trees saved at this step are at least {depth} deep (largest node id {nodes.max()}: "
        f"floor(log2({nodes.max()})) = {depth}), more than depth 4"
    )
    check_json(f, path, capsys, "TreeDepth")


def test_tree_depth_judges_the_finite_ids_of_a_float_node_column(tmp_path):
    path = write_trial(tmp_path / "t", {"trees/Node": {0: [0.0, 1.0, 2.0, NAN, 40.0]}})
    f = finding_of(TreeDepth(create_trial(path)))
    assert f.values == (5,) and "largest node id 40" in f.message


def test_feature_importance_names_the_top_features(tmp_path, cancer, capsys):
    (X_tr, _), (X_va, _) = cancer
    cut = np.median(X_tr[:, 27])
    path, _ = xgb_trial(tmp_path / "t", DEPTH3, 2, (X_tr, (X_tr[:, 27] > cut) * 1.0), (X_va, (X_va[:, 27] > cut) * 1.0))
    trial = create_trial(path)
    f = finding_of(FeatureImportanceOverweight(trial))
    assert f.step == 0 and f.tensors[0] == "feature_importance/weight/f27"
    assert "(f27" in f.message and "more than threshold 0.8" in f.message
    check_json(f, path, capsys, "FeatureImportanceOverweight")
    # a regex that also matches the tree columns (leaf NaN, not one number each) judges the same importances
    both = FeatureImportanceOverweight(trial, tensor_regex="feature_importance/weight|trees/")
    assert finding_of(both).values == f.values


def test_tree_rules_without_their_tensors_say_what_the_trial_holds(poor, tmp_path):
    reason = reason_of(FeatureImportanceOverweight(create_trial(poor), tensor_regex="^importance/"))
    assert "tensor_regex '^importance/' matched no tensor; the trial holds collections" in reason
    assert "feature_importance (" in reason
    reason = reason_of(TreeDepth(create_trial(write_losses(tmp_path / "t", [1.0, 0.9]))))
    assert "the trial has no trees/Node tensor: save the 'trees' collection of the XGBoost hook" in reason


def test_create_xgboost_report_with_nothing_to_show_says_so(tmp_path):
    pytest.importorskip("matplotlib")
    from smdebug.rules.builtin import CreateXgboostReport

    trial = create_trial(write_trial(tmp_path / "t", {"w": {0: [1.0, 2.0], 1: [1.0, 2.0]}}))
    reason = reason_of(CreateXgboostReport(trial, output_path=str(tmp_path / "out")))
    assert "the report has nothing to show: no XGBoost metric" in reason


# ---------------------------------------------------------------- StalledTrainingRule


def test_stalled_training_names_the_last_step_and_the_seconds(tmp_path):
    """A job that wrote steps 0-2 and then nothing (no end marker), a fake clock."""
    trial = create_trial(write_trial(tmp_path / "t", {"loss": {0: 1.0, 1: 0.9, 2: 0.8}}, end=False))
    clock = FakeClock()
    rule = StalledTrainingRule(trial, threshold="60", stop_training_on_fire="True", clock=clock, sleep=clock.sleep)
    f = finding_of(rule)
    idle = f.values[0]
    assert 60 < idle <= 61.1 and f.step == 2 and f.tensors == () and f.mode == "GLOBAL"
    assert f.message == f"no new step for {show_value(round(idle, 1))} s, more than threshold 60 s (last step seen 2)"
    assert f.condition == f"seconds without a new step {show_value(round(idle, 1))} > threshold 60"
    got = f.to_json()
    assert got["values"] == [idle] and got["idle_seconds"] == round(idle, 3)
    req = read_stop_request(trial.store)
    assert req.step == 2 and f.text() in req.reason
