"""VanishingGradient, ExplodingTensor, AllZero, TensorVariance, SimilarAcrossRuns on real PyTorch runs."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from runs_tensors import deep_sigmoid, fired_at, nonfinite, small, train

from smdebug import ReductionConfig
from smdebug.exceptions import EventFileCorrupt, RuleConfigurationError
from smdebug.rules.builtin import (
    AllZero,
    ExplodingTensor,
    SimilarAcrossRuns,
    TensorVariance,
    VanishingGradient,
    get_rule_class,
    required_collections,
)
from smdebug.rules.builtin.reading import StepReader
from smdebug.trials import create_trial
from smdtest import FIXTURES

REDUCTIONS_ONLY = ReductionConfig(reductions=["mean", "max"], abs_reductions=["mean"], save_raw_tensor=False)


@pytest.fixture(autouse=True)
def _logging_on():
    logging.disable(logging.NOTSET)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The training runs the tests share, trained once."""
    root = tmp_path_factory.mktemp("runs")

    def zero_fc1_before_3(i, model):
        if i == 3:
            model[0].weight.zero_()

    def half_zero_before_2(i, model):
        if i == 2:
            model[0].weight[:8].zero_()

    def scale_before_3(i, model):
        if i == 3:
            model[0].weight.mul_(100.0)

    return {
        "healthy": train(root / "healthy", small(seed=0)),
        "deep_sigmoid": train(root / "deep_sigmoid", deep_sigmoid(), "T" * 4),
        "huge_lr": train(root / "huge_lr", small(seed=0), "T" * 5, lr=1e20),
        "huge_lr_reductions": train(
            root / "huge_lr_reductions",
            small(seed=0),
            "T" * 5,
            lr=1e20,
            hook_kwargs={"reduction_config": REDUCTIONS_ONLY},
        ),
        "deep_sigmoid_reductions": train(
            root / "deep_sigmoid_reductions", deep_sigmoid(), "T" * 4, hook_kwargs={"reduction_config": REDUCTIONS_ONLY}
        ),
        "zeroed": train(root / "zeroed", small(seed=0), before_step=zero_fc1_before_3),
        "half_zero": train(root / "half_zero", small(seed=0), "T" * 4, before_step=half_zero_before_2),
        "scaled": train(root / "scaled", small(seed=0), lr=1e-3, before_step=scale_before_3),
        "seed0_again": train(root / "seed0_again", small(seed=0)),
        "seed1": train(root / "seed1", small(seed=1)),
        "seed0_lr": train(root / "seed0_lr", small(seed=0), lr=0.5),
    }


# ---------------------------------------------------------------------- VanishingGradient
def test_vanishing_gradient_fires_on_a_deep_sigmoid_net_with_tiny_weights(runs, caplog):
    run = runs["deep_sigmoid"]
    first = min(np.abs(g).mean() for g in run.grads[0].values())
    assert first < 1e-7  # the run itself: the first layer's gradients vanished
    with caplog.at_level(logging.INFO, logger="smdebug"):
        assert fired_at(VanishingGradient(run.trial)) == 0
    assert "gradient/Sequential_0." in caplog.text
    # started later, it fires at the first step it is given
    assert fired_at(VanishingGradient(run.trial), start_step=2) == 2
    # a threshold below every gradient's mean |g| never fires
    smallest = min(np.abs(g).mean() for step in run.grads for g in step.values())
    assert smallest > 0
    assert fired_at(VanishingGradient(run.trial, threshold=str(smallest / 2))) is None


def test_vanishing_gradient_reads_the_saved_abs_mean_when_only_reductions_were_saved(runs):
    trial = runs["deep_sigmoid_reductions"].trial
    name = "gradient/Sequential_0.bias"
    assert set(trial.tensor(name).reduction_values(0)) == {("mean", False), ("max", False), ("mean", True)}
    assert fired_at(VanishingGradient(trial)) == 0


def test_vanishing_gradient_does_not_fire_on_a_healthy_net(runs):
    run = runs["healthy"]
    assert min(np.abs(g).mean() for step in run.grads for g in step.values()) > 1e-4
    assert fired_at(VanishingGradient(run.trial)) is None
    assert [c.name for c in required_collections("VanishingGradient")] == ["gradients"]


# ---------------------------------------------------------------------- ExplodingTensor
def test_exploding_tensor_fires_at_the_first_inf_and_nan_of_a_huge_learning_rate(runs, caplog):
    run = runs["huge_lr"]
    assert run.first_step(nonfinite) == 1  # the loss overflows to inf at step 1
    assert run.first_step(lambda v: np.isnan(v).any()) == 2
    with caplog.at_level(logging.INFO, logger="smdebug"):
        assert fired_at(ExplodingTensor(run.trial)) == 1
    assert (
        "CrossEntropyLoss_output_0 holds 1 inf of 1 value (the only non-finite tensor at the step), at step 1"
        in caplog.text
    )
    assert fired_at(ExplodingTensor(run.trial, only_nan="True")) == 2
    # restricted to the parameters: where the parameters themselves first hold inf or NaN
    expected = run.first_step(nonfinite, kinds=("params",))
    assert expected is not None and expected > 1
    assert fired_at(ExplodingTensor(run.trial, collection_names="weights, biases")) == expected
    assert fired_at(ExplodingTensor(run.trial, tensor_regex=["weight", "bias"])) == expected


def test_exploding_tensor_checks_the_saved_reductions_when_no_value_was_saved(runs):
    run, trial = runs["huge_lr"], runs["huge_lr_reductions"].trial
    expected = run.first_step(nonfinite, kinds=("params", "grads"))
    assert expected is not None
    rule = ExplodingTensor(trial, collection_names="weights,biases,gradients")
    assert fired_at(rule) == expected


def test_exploding_tensor_does_not_fire_on_a_healthy_run(runs):
    run = runs["healthy"]
    assert run.first_step(nonfinite) is None
    assert fired_at(ExplodingTensor(run.trial)) is None
    assert fired_at(ExplodingTensor(run.trial, only_nan="False")) is None


# ---------------------------------------------------------------------- AllZero
def test_all_zero_fires_at_the_step_whose_weights_were_zeroed(runs, caplog):
    run = runs["zeroed"]
    assert not run.params[3]["0.weight"].any() and run.params[4]["0.weight"].any()
    with caplog.at_level(logging.INFO, logger="smdebug"):
        assert fired_at(AllZero(run.trial, collection_names="weights")) == 3
    assert "100% of Sequential_0.weight's 1024 values are zero >= threshold 100%, at step 3" in caplog.text
    assert fired_at(AllZero(run.trial, tensor_regex="Sequential_0.weight")) == 3
    assert fired_at(AllZero(run.trial, collection_names="weights"), start_step=4) is None


def test_all_zero_threshold_is_a_percentage_reached_or_exceeded(runs):
    run = runs["half_zero"]
    w = run.params[2]["0.weight"]
    assert np.count_nonzero(w == 0) == w.size // 2
    assert fired_at(AllZero(run.trial, collection_names="weights")) is None
    assert fired_at(AllZero(run.trial, collection_names="weights", threshold="50")) == 2
    assert fired_at(AllZero(run.trial, collection_names="weights", threshold=50.5)) is None


def test_all_zero_does_not_fire_on_a_healthy_run_and_warns_without_a_selection(runs, caplog):
    run = runs["healthy"]
    assert fired_at(AllZero(run.trial, collection_names="weights,biases,gradients,losses")) is None
    with caplog.at_level(logging.WARNING, logger="smdebug"):
        rule = AllZero(run.trial)
    assert "inspecting every tensor" in caplog.text
    assert fired_at(rule) is None


# ---------------------------------------------------------------------- TensorVariance
def test_tensor_variance_fires_above_max_threshold_when_weights_are_scaled(runs):
    run = runs["scaled"]
    assert np.var(run.params[2]["0.weight"]) < 0.01 < 1 < np.var(run.params[3]["0.weight"])
    assert fired_at(TensorVariance(run.trial, collection_names="weights", max_threshold="1")) == 3
    assert fired_at(TensorVariance(run.trial, tensor_regex="^Sequential_2.weight$", max_threshold="1")) is None


def test_tensor_variance_fires_below_min_threshold_on_zeroed_weights(runs):
    run = runs["zeroed"]
    assert fired_at(TensorVariance(run.trial, collection_names="weights", min_threshold="1e-8")) == 3


def test_tensor_variance_does_not_fire_within_bounds(runs, caplog):
    run = runs["healthy"]
    rule = TensorVariance(run.trial, collection_names="weights", max_threshold="1", min_threshold="0.000001")
    assert fired_at(rule) is None
    with caplog.at_level(logging.WARNING, logger="smdebug"):
        inert = TensorVariance(run.trial, collection_names="weights")
    assert "never fires" in caplog.text
    assert fired_at(inert) is None


# ---------------------------------------------------------------------- SimilarAcrossRuns
def test_similar_across_runs_fires_when_seeds_differ(runs):
    base, other = runs["healthy"], runs["seed1"]
    assert not np.array_equal(base.params[0]["0.weight"], other.params[0]["0.weight"])
    assert fired_at(SimilarAcrossRuns(base.trial, other_trials=[other.trial])) == 0


def test_similar_across_runs_fires_at_the_first_step_that_differs(runs):
    base, other = runs["healthy"], runs["seed0_lr"]  # same seed, another learning rate
    assert all(np.array_equal(base.params[0][k], other.params[0][k]) for k in base.params[0])
    assert fired_at(SimilarAcrossRuns(base.trial, other_trials=str(other.path))) == 1


def test_similar_across_runs_does_not_fire_for_one_seed_twice(runs):
    base, other = runs["healthy"], runs["seed0_again"]
    rule = SimilarAcrossRuns(base.trial, other_trials=[str(other.path)], collection_names="weights,gradients,losses")
    assert fired_at(rule) is None
    assert fired_at(SimilarAcrossRuns(base.trial, other_trials=[other.trial])) is None


# ---------------------------------------------------------------------- string parameters
def test_defaults_and_string_parameters(runs):
    trial = runs["healthy"].trial
    assert VanishingGradient(trial).threshold == 1e-7
    assert VanishingGradient(trial, threshold="0.001").threshold == 0.001
    e = ExplodingTensor(trial)
    assert (e.collection_names, e.tensor_regex, e.only_nan) == ([], [], False)
    assert ExplodingTensor(trial, only_nan="False").only_nan is False
    assert ExplodingTensor(trial, only_nan="True").only_nan is True
    assert ExplodingTensor(trial, only_nan=True).only_nan is True
    e = ExplodingTensor(trial, collection_names="weights, gradients", tensor_regex=".*relu_output|.*ReLU_output")
    assert e.collection_names == ["weights", "gradients"]
    assert [r.pattern for r in e.tensor_regex] == [".*relu_output|.*ReLU_output"]
    assert AllZero(trial, collection_names="weights").threshold == 100.0
    t = TensorVariance(trial, collection_names="weights", max_threshold="None", min_threshold="1e-5")
    assert (t.max_threshold, t.min_threshold) == (None, 1e-5)
    assert get_rule_class("AllZero") is AllZero
    assert required_collections("ExplodingTensor") == []


@pytest.mark.parametrize(
    ("rule", "params", "name"),
    [
        (VanishingGradient, {"threshold": "abc"}, "threshold"),
        (ExplodingTensor, {"only_nan": "maybe"}, "only_nan"),
        (ExplodingTensor, {"tensor_regex": "gradient/(unclosed"}, "tensor_regex"),
        (ExplodingTensor, {"tensors": "x"}, "tensors"),
        (AllZero, {"threshold": "150"}, "threshold"),
        (AllZero, {"threshold": "ten"}, "threshold"),
        (TensorVariance, {"max_threshold": "big"}, "max_threshold"),
        (TensorVariance, {"max_threshold": "1", "min_threshold": "2"}, "min_threshold"),
    ],
)
def test_bad_parameters_are_refused_when_the_rule_is_built(runs, rule, params, name):
    with pytest.raises(RuleConfigurationError) as info:
        rule(runs["healthy"].trial, **params)
    assert info.value.parameter == name
    assert name in str(info.value) and rule.__name__ in str(info.value)


def test_similar_across_runs_needs_other_trials(runs, tmp_path):
    trial = runs["healthy"].trial
    with pytest.raises(RuleConfigurationError, match="other_trials"):
        SimilarAcrossRuns(trial)
    with pytest.raises(RuleConfigurationError, match="other_trials"):
        SimilarAcrossRuns(trial, other_trials="")
    with pytest.raises(RuleConfigurationError, match="other_trials"):
        SimilarAcrossRuns(trial, other_trials=str(tmp_path / "no-such-trial"))
    with pytest.raises(RuleConfigurationError, match="other_trials"):
        AllZero(trial, other_trials=[trial])


# ---------------------------------------------------------------------- the batched reader
@pytest.mark.parametrize("fixture", ["multi_worker_modes", "pytorch_mlp", "reductions_only", "incomplete_job"])
def test_step_reader_reads_what_tensor_value_reads_in_files_of_1_0_34(fixture):
    trial = create_trial(str(FIXTURES / fixture))
    reader = StepReader()
    checked = 0
    for step in trial.steps():
        names = trial.tensor_names(step=step)
        for v in reader.step(trial, step, names, reductions_if_no_value=True):
            t = trial.tensor(v.name)
            if v.from_reduction:
                saved = t.reduction_values(step, worker=v.worker)
                assert any(np.array_equal(v.value, r) for r in saved.values())
            else:
                ref = t.value(step, worker=v.worker)
                assert (ref.dtype, ref.shape) == (v.value.dtype, v.value.shape)
                np.testing.assert_array_equal(v.value, ref)
            checked += 1
        for v in reader.step(trial, step, names, reduction="mean", abs=True):
            ref = trial.tensor(v.name).reduction_value(step, "mean", worker=v.worker, abs=True)
            np.testing.assert_allclose(np.ravel(v.value), np.ravel(ref), rtol=1e-6)
    assert checked > 0
    assert trial._reader.decoder.learnt  # the short path was taken


def test_step_reader_reads_what_tensor_value_reads_in_our_files(runs):
    trial = runs["huge_lr"].trial
    reader = StepReader()
    for step in trial.steps():
        got = reader.step(trial, step, trial.tensor_names(step=step))
        assert len(got) == len(trial.tensor_names(step=step))
        for v in got:
            ref = trial.tensor(v.name).value(step)
            assert (ref.dtype, ref.shape) == (v.value.dtype, v.value.shape)
            np.testing.assert_array_equal(v.value, ref)


def _write_trial(path, steps):
    """A trial written with FileWriter: ``steps`` is a list of {tensor name: value}."""
    from smdebug.core.collection_manager import CollectionManager
    from smdebug.core.writer import FileWriter

    cm = CollectionManager()
    cm.add("default")
    cm.set_num_workers(1)
    cm.export(str(path), "worker_0_collections.json")
    for step, tensors in enumerate(steps):
        with FileWriter(trial_dir=str(path), step=step, worker="worker_0") as fw:
            for name, value in tensors.items():
                fw.write_tensor(tdata=value, tname=name)
    (path / "training_job_end.ts").touch()


def test_bfloat16_is_checked_and_strings_are_skipped(tmp_path):
    import ml_dtypes

    bf = ml_dtypes.bfloat16
    ok = {"w": np.ones(4, dtype=bf), "names": np.array(["a", "b"]), "z": np.zeros(3, dtype=bf)}
    bad = {"w": np.array([1, np.inf, 2, 3], dtype=bf), "names": np.array(["c", "d"]), "z": np.zeros(3, dtype=bf)}
    _write_trial(tmp_path / "t", [ok, ok, bad])
    trial = create_trial(str(tmp_path / "t"))
    assert trial.tensor("w").value(2).dtype == bf
    assert fired_at(ExplodingTensor(trial)) == 2
    assert fired_at(ExplodingTensor(trial, only_nan="True")) is None
    assert fired_at(AllZero(trial, tensor_regex="^z$")) == 0
    assert fired_at(AllZero(trial, tensor_regex="names")) is None  # strings are not numbers
    assert fired_at(TensorVariance(trial, tensor_regex="^w$", min_threshold="1e-6")) == 0
    # the variance of a tensor holding inf is NaN, which is neither above nor below a bound
    assert fired_at(TensorVariance(trial, tensor_regex="^w$", max_threshold="1e30")) is None


def test_a_corrupt_record_is_reported_not_skipped(tmp_path):
    steps = [{"w": np.full(8, float(s), dtype=np.float32)} for s in range(4)]
    _write_trial(tmp_path / "t", steps)
    trial = create_trial(str(tmp_path / "t"))
    f = trial._index.by_step.get(2)["worker_0"]
    start, _length = f.location(f.layout.tensors["w"][0], "")
    event = tmp_path / "t" / f.event_key
    data = bytearray(event.read_bytes())
    data[start + 9] ^= 0xFF  # the CRC of the record's length
    event.write_bytes(bytes(data))
    rule = AllZero(trial, tensor_regex="^w$", threshold="1")
    assert fired_at(rule, start_step=0) == 0  # step 0 is all zeros, read before the corrupt step
    rule = AllZero(trial, tensor_regex="^w$", threshold="50")
    with pytest.raises(EventFileCorrupt, match="bad length CRC"):
        fired_at(rule, start_step=1)  # step 1 is read (and teaches the layout), step 2 is corrupt
