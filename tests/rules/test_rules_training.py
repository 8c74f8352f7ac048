"""LossNotDecreasing, Overfit, Overtraining and StalledTrainingRule on trials written by real PyTorch
training runs (scikit-learn digits, a tiny MLP); each fires, or not, at the step worked out from the
losses the training loop itself saw."""

from __future__ import annotations

import math
import threading
import time

import numpy as np
import pytest
from runs_training import LOSS, Classifier, Trainer, digits, fired_at, full_batch, train

from smdebug.core.modes import ModeKeys
from smdebug.core.stop_request import read_stop_request
from smdebug.exceptions import RuleConfigurationError
from smdebug.rules.builtin import LossNotDecreasing, Overfit, Overtraining, StalledTrainingRule
from smdebug.trials import create_trial
from smdtest import FakeClock


def _xy():
    x, y = digits()
    return x / 16, y


# ---------------------------------------------------------------- LossNotDecreasing
def test_loss_not_decreasing_fires_when_the_learning_rate_is_zero(tmp_path):
    x, y = _xy()
    run = train(tmp_path / "t", Classifier(), "T" * 14, full_batch(x[:200], y[:200]), lr=0.0)
    assert len(set(run.losses)) == 1  # the premise: nothing is learnt
    # num_steps 10: the first comparison is step 10 against step 0, an equal loss
    assert fired_at(LossNotDecreasing(run.trial)) == 10
    assert fired_at(LossNotDecreasing(run.trial, num_steps="3")) == 3


def test_loss_not_decreasing_does_not_fire_in_normal_training(tmp_path):
    x, y = _xy()
    run = train(tmp_path / "t", Classifier(), "T" * 25, full_batch(x[:200], y[:200]), lr=0.5)
    losses = run.losses
    assert all(100 * (losses[s - 10] - losses[s]) / losses[s - 10] > 0.1 for s in (10, 20))
    assert fired_at(LossNotDecreasing(run.trial)) is None
    # asking for a 25 % decrease every 10 steps: the first ten steps decrease the loss by less
    assert 100 * (losses[0] - losses[10]) / losses[0] < 25 < 100 * (losses[10] - losses[20]) / losses[10]
    assert fired_at(LossNotDecreasing(run.trial, diff_percent="25")) == 10


def test_loss_not_decreasing_modes(tmp_path):
    """No mode given: EVAL steps are compared (counted in EVAL steps); an explicit mode is honoured."""
    x, y = _xy()
    sched = ("T" * 3 + "E" * 2) * 6
    run = train(tmp_path / "t", Classifier(), sched, full_batch(x[:200], y[:200], x[1000:1100], y[1000:1100]), lr=0.0)
    evals = [g for g, m in enumerate(run.modes) if m == ModeKeys.EVAL]
    trains = [g for g, m in enumerate(run.modes) if m == ModeKeys.TRAIN]
    assert fired_at(LossNotDecreasing(run.trial, num_steps="4")) == evals[4] == 13
    assert fired_at(LossNotDecreasing(run.trial, num_steps="4", mode="TRAIN")) == trains[4] == 6

    # GLOBAL: every step counts, whatever its mode (an EVAL loss is compared with a TRAIN loss);
    # checks at steps 4, 8, 12, ... (at most once every num_steps), reading 1 of the spec
    def fires(prev, cur):
        dec = 100 * (prev - cur) / prev
        return dec < 0.1 if dec >= 0 else -dec > 5

    expect = next(g for g in range(4, len(sched), 4) if fires(run.losses[g - 4], run.losses[g]))
    assert expect > 4
    assert fired_at(LossNotDecreasing(run.trial, num_steps="4", mode="GLOBAL")) == expect


def test_loss_not_decreasing_increase_tolerance(tmp_path):
    """Reading 1: an increase under increase_threshold_percent does not fire; strict=True fires on it."""
    x, y = _xy()
    # a learning rate so large that the loss goes up
    run = train(tmp_path / "t", Classifier(), "T" * 12, full_batch(x[:200], y[:200]), lr=40.0)
    inc = [100 * (run.losses[s] - run.losses[s - 10]) / run.losses[s - 10] for s in (10, 11)]
    assert inc[0] > 0
    assert fired_at(LossNotDecreasing(run.trial, strict="True")) == 10
    huge = str(math.ceil(inc[0]) + 1)
    assert fired_at(LossNotDecreasing(run.trial, increase_threshold_percent=huge)) is None
    assert fired_at(LossNotDecreasing(run.trial)) == (10 if inc[0] > 5 else None)


# ---------------------------------------------------------------- Overfit / Overtraining
EPOCH = "T" * 5 + "E" * 2


def _phase_means(run):
    """[(first TRAIN step after the EVAL phase, mean TRAIN loss, mean EVAL loss)], from the loop."""
    out, train_l, eval_l = [], [], []
    for g, (m, v) in enumerate(zip(run.modes, run.losses)):
        if m == ModeKeys.TRAIN and eval_l:
            out.append((g, np.mean(train_l), np.mean(eval_l)))
            train_l, eval_l = [], []
        (train_l if m == ModeKeys.TRAIN else eval_l).append(v)
    return out


def test_overfit_fires_on_a_tiny_train_set(tmp_path):
    x, y = _xy()
    run = train(
        tmp_path / "t",
        Classifier(),
        EPOCH * 6,
        full_batch(x[:20], y[:20], x[1000:1300], y[1000:1300], 2),
        lr=0.01,
        optimizer="adam",
    )
    checks = _phase_means(run)
    ratios = [(v - t) / t for _, t, v in checks]
    first = next(i for i, r in enumerate(ratios) if r > 0.1)
    assert first > 0  # the first checks do not fire: the model has not memorised the 20 images yet
    assert fired_at(Overfit(run.trial)) == checks[first][0] == 7 * (first + 1)
    # patience 2: two checks in a row over the threshold
    second = next(i for i in range(1, len(ratios)) if ratios[i] > 0.1 and ratios[i - 1] > 0.1)
    assert fired_at(Overfit(run.trial, patience="2")) == checks[second][0]
    # start_step past the first fire: only later phases are compared
    assert fired_at(Overfit(run.trial, start_step=str(checks[first][0] + 1))) == checks[first + 1][0]


def test_overfit_does_not_fire_on_a_large_train_set(tmp_path):
    x, y = _xy()
    run = train(
        tmp_path / "t",
        Classifier(),
        EPOCH * 6,
        full_batch(x[:1000], y[:1000], x[1000:1300], y[1000:1300], 2),
        lr=0.01,
        optimizer="adam",
    )
    assert max((v - t) / t for _, t, v in _phase_means(run)) < 0.1
    assert fired_at(Overfit(run.trial)) is None
    assert fired_at(Overfit(run.trial, tensor_regex=LOSS)) is None


def _overtraining_oracle(run, patience_train=5, patience_validation=10, delta=0.01):
    best, wait = {}, {}
    for g, (m, v) in enumerate(zip(run.modes, run.losses)):
        best[m], wait[m] = (v, 0) if v < best.get(m, math.inf) - delta else (best[m], wait.get(m, 0) + 1)
        if wait[m] >= (patience_train if m == ModeKeys.TRAIN else patience_validation):
            return g, m
    return None, None


def test_overtraining_fires_on_a_tiny_train_set(tmp_path):
    x, y = _xy()
    run = train(
        tmp_path / "t",
        Classifier(),
        "TTE" * 20,
        full_batch(x[:20], y[:20], x[1000:1200], y[1000:1200]),
        lr=0.03,
        optimizer="adam",
    )
    step, mode = _overtraining_oracle(run)
    assert mode == ModeKeys.TRAIN  # the training loss stops improving by 0.01 first
    assert fired_at(Overtraining(run.trial)) == step
    # the validation loss reaches its minimum and rises again
    val = [v for m, v in zip(run.modes, run.losses) if m == ModeKeys.EVAL]
    assert 0 < int(np.argmin(val)) < len(val) - 10 and val[-1] > min(val) + 0.1
    step, mode = _overtraining_oracle(run, patience_train=1000)
    assert mode == ModeKeys.EVAL
    assert fired_at(Overtraining(run.trial, patience_train="1000")) == step


def test_overtraining_does_not_fire_in_normal_training(tmp_path):
    x, y = _xy()
    run = train(
        tmp_path / "t",
        Classifier(),
        EPOCH * 6,
        full_batch(x[:1000], y[:1000], x[1000:1300], y[1000:1300], 2),
        lr=0.01,
        optimizer="adam",
    )
    assert _overtraining_oracle(run) == (None, None)
    assert fired_at(Overtraining(run.trial)) is None
    # a larger delta: the loss no longer improves "enough"
    step, _ = _overtraining_oracle(run, delta=0.3)
    assert step is not None and fired_at(Overtraining(run.trial, delta="0.3")) == step


# ---------------------------------------------------------------- StalledTrainingRule


@pytest.fixture(scope="module")
def _trainer_process():
    t = Trainer()
    yield t
    t.quit()


@pytest.fixture
def trainer(_trainer_process, tmp_path):
    _trainer_process.open(tmp_path / "job")
    yield _trainer_process
    _trainer_process.end()


def _stalled(trial, clock, sleep, **params):
    return StalledTrainingRule(trial, threshold="2", clock=clock, sleep=sleep, **params)


def test_stalled_training_does_not_fire_while_steps_keep_coming(trainer, tmp_path):
    """Fake clock: a step every 1.6 s for 12 steps (19 s in all) never leaves the rule 2 s without
    progress; it ends quietly when the job closes."""
    assert trainer.step(2) == 0
    clock, polls = FakeClock(), []

    def sleep(dt):
        clock.now += dt
        polls.append(dt)
        if len(polls) % 8 == 0:  # 8 polls of 0.2 s
            trainer.step(1) if trainer.trained < 12 else trainer.end()

    rule = _stalled(create_trial(str(tmp_path / "job")), clock, sleep)
    assert fired_at(rule) is None
    assert clock.now - 1000 > 15 and max(polls) <= 0.2 + 1e-9
    assert rule.last_seen_step == 11


def test_stalled_training_fires_after_threshold_without_progress(trainer, tmp_path):
    """Fake clock: steps every 1.6 s, then none: the rule fires after 2 s, naming the last step."""
    trainer.step(2)
    clock, polls, fired_polls = FakeClock(), [], []

    def sleep(dt):
        clock.now += dt
        polls.append(dt)
        if len(polls) % 8 == 0 and trainer.trained < 6:
            trainer.step(1)
            fired_polls.append(len(polls))

    rule = _stalled(create_trial(str(tmp_path / "job")), clock, sleep)
    assert fired_at(rule) == 4  # 6 steps trained, 0..4 written
    # the last step came at poll 32; fired when more than 2 s (10 polls of 0.2 s) had passed
    assert fired_polls[-1] == 32 and len(polls) == 32 + 10
    assert read_stop_request(rule.base_trial.store) is None  # stop_training_on_fire is False


def test_stalled_training_fires_in_real_time_and_asks_training_to_stop(trainer, tmp_path):
    """Real clock, threshold 2 s: the trainer stops writing after step 2; the rule fires 2 s later."""
    assert trainer.step(4) == 2
    trial = create_trial(str(tmp_path / "job"))
    rule = StalledTrainingRule(trial, threshold="2", stop_training_on_fire="True")
    t0 = time.monotonic()
    assert fired_at(rule) == 2
    elapsed = time.monotonic() - t0
    assert 2.0 <= elapsed < 6.0, elapsed
    req = read_stop_request(trial.store)
    assert (req.rule, req.step) == ("StalledTrainingRule", 2) and "2 s" in req.reason
    trainer.end()
    assert create_trial(str(tmp_path / "job")).steps() == [0, 1, 2, 3]


def test_stalled_training_ends_quietly_when_training_ends(trainer, tmp_path):
    trainer.step(3)
    trial = create_trial(str(tmp_path / "job"))
    result = []
    th = threading.Thread(target=lambda: result.append(fired_at(StalledTrainingRule(trial, threshold="30"))))
    t0 = time.monotonic()
    th.start()
    trainer.step(2)
    trainer.end()
    th.join(timeout=30)
    assert result == [None] and time.monotonic() - t0 < 15  # ended with the job, not after 30 s
    assert read_stop_request(trial.store) is None


# ---------------------------------------------------------------- parameters
@pytest.fixture(scope="module")
def small_trial(tmp_path_factory):
    x, y = _xy()
    return train(
        tmp_path_factory.mktemp("p") / "t", Classifier(), "TTE", full_batch(x[:50], y[:50], x[:50], y[:50])
    ).trial


def test_defaults(small_trial):
    r = LossNotDecreasing(small_trial)
    assert (
        r.collection_names,
        r.tensor_regex,
        r.use_losses_collection,
        r.num_steps,
        r.diff_percent,
        r.increase_threshold_percent,
        r.mode,
        r.strict,
    ) == ([], [], True, 10, 0.1, 5.0, None, False)
    r = Overfit(small_trial)
    assert (r.tensor_regex, r.start_step, r.patience, r.ratio_threshold) == ([], 0, 1, 0.1)
    r = Overtraining(small_trial)
    assert (r.patience_train, r.patience_validation, r.delta) == (5, 10, 0.01)
    r = StalledTrainingRule(small_trial)
    assert (r.threshold, r.stop_training_on_fire, r.training_job_name_prefix) == (1800.0, False, None)
    assert [c.name for c in LossNotDecreasing.hook_collections] == ["losses"]


def test_string_parameters(small_trial):
    r = LossNotDecreasing(
        small_trial,
        use_losses_collection="False",
        strict="false",
        mode="modes.EVAL",
        tensor_regex="loss, CrossEntropy",
        collection_names="losses,default",
        num_steps="4.0",
    )
    assert r.use_losses_collection is False and r.strict is False and r.mode == ModeKeys.EVAL
    assert [p.pattern for p in r.tensor_regex] == ["loss", "CrossEntropy"] and r.num_steps == 4
    assert r.collection_names == ["losses", "default"]
    assert StalledTrainingRule(small_trial, stop_training_on_fire="False").stop_training_on_fire is False
    assert StalledTrainingRule(small_trial, stop_training_on_fire=True, threshold=5).threshold == 5.0
    assert LossNotDecreasing(small_trial, mode="None").mode is None


@pytest.mark.parametrize(
    "cls, params, bad",
    [
        (LossNotDecreasing, {"num_steps": "abc"}, "num_steps"),
        (LossNotDecreasing, {"num_steps": "0"}, "num_steps"),
        (LossNotDecreasing, {"diff_percent": "abc"}, "diff_percent"),
        (LossNotDecreasing, {"use_losses_collection": "maybe"}, "use_losses_collection"),
        (LossNotDecreasing, {"mode": "TRAINING"}, "mode"),
        (LossNotDecreasing, {"tensor_regex": "loss("}, "tensor_regex"),
        (LossNotDecreasing, {"num_step": "3"}, "num_step"),
        (Overfit, {"patience": "0"}, "patience"),
        (Overfit, {"ratio_threshold": "x"}, "ratio_threshold"),
        (Overtraining, {"delta": "-1"}, "delta"),
        (Overtraining, {"patience_validation": "1.5"}, "patience_validation"),
        (StalledTrainingRule, {"threshold": "0"}, "threshold"),
        (StalledTrainingRule, {"threshold": "soon"}, "threshold"),
        (StalledTrainingRule, {"stop_training_on_fire": "yes please"}, "stop_training_on_fire"),
    ],
)
def test_bad_parameters_are_refused_at_construction(small_trial, cls, params, bad):
    with pytest.raises(RuleConfigurationError) as info:
        cls(small_trial, **params)
    assert info.value.parameter == bad and repr(bad) in str(info.value)


# ---------------------------------------------------------------- hand-written trials
def _written(path, series: dict, end=True):
    """A trial holding scalar series {name: {global step: value}} (GLOBAL mode), as FileWriter writes."""
    from rule_trials import write_trial

    return create_trial(write_trial(path, series, end=end))


def test_loss_not_decreasing_pinned_schedule(tmp_path):
    """The historic test: losses at steps 0, 4, ..., 16, num_steps 10: fires at 12 (equal to step 0's)."""
    losses = {0: 0.30, 4: 0.33, 8: 0.31, 12: 0.30, 16: 0.28}
    trial = _written(tmp_path / "t", {"loss": losses, "weights": {s: [1.0, 2.0] for s in losses}})
    for params in ({"tensor_regex": "loss, losses"}, {}):  # no selection, no losses collection: every scalar
        rule = LossNotDecreasing(trial, **params)
        assert fired_at(rule) == 12
        assert fired_at(rule, start_step=13) is None  # the same rule object goes on: next check at 22
    assert fired_at(LossNotDecreasing(trial, tensor_regex="weights")) is None  # not a scalar


def test_overfit_and_overtraining_on_xgboost_metric_names(tmp_path):
    """No modes: train-<metric> against validation-<metric>; auc is not a loss."""
    train_rmse = [1.0, 0.8, 0.6, 0.5, 0.4, 0.35, 0.33, 0.32, 0.315, 0.312]
    val_rmse = [1.0, 0.82, 0.63, 0.54, 0.47, 0.45, 0.45, 0.46, 0.46, 0.47]
    auc = [0.5 + 0.01 * s for s in range(10)]
    series = {
        "train-rmse": dict(enumerate(train_rmse)),
        "validation-rmse": dict(enumerate(val_rmse)),
        "train-auc": dict(enumerate(auc)),
        "validation-auc": dict(enumerate(auc[::-1])),
    }
    trial = _written(tmp_path / "t", series)
    ratio = [(v - t) / t for t, v in zip(train_rmse, val_rmse)]
    assert fired_at(Overfit(trial)) == next(s for s, r in enumerate(ratio) if r > 0.1) == 4
    assert fired_at(Overfit(trial, patience="3")) == 6
    # validation-rmse best 0.45 at step 5 (0.45 at 6 is no improvement by 0.01): waits 6..9 = 4 steps
    assert fired_at(Overtraining(trial, patience_validation="4", patience_train="100")) == 9
    assert fired_at(Overtraining(trial, patience_validation="5", patience_train="100")) is None
    # train-rmse: best 0.35 at 5; 0.33 (wait 1); 0.32 a new best; 0.315, 0.312 (wait 2 at step 9)
    assert fired_at(Overtraining(trial, patience_train="2", patience_validation="100")) == 9
    assert fired_at(Overtraining(trial, patience_train="3", patience_validation="100")) is None


def test_stalled_training_with_a_job_prefix_asks_sagemaker_not_the_trial(tmp_path, aws_env, monkeypatch, caplog):
    """A written trial without its end marker, a fake clock; with training_job_name_prefix the rule
    asks SageMaker (the moto server) for the jobs in progress: moto's jobs are all Completed, so
    it stops none (1.0.34's safe mode) and writes no local stop request."""
    import boto3

    monkeypatch.setenv("AWS_ENDPOINT_URL_SAGEMAKER", aws_env)
    sm = boto3.client("sagemaker", region_name="us-east-1")
    sm.create_training_job(
        TrainingJobName="stall-job-1",
        AlgorithmSpecification={"TrainingImage": "img:latest", "TrainingInputMode": "File"},
        RoleArn="arn:aws:iam::123456789012:role/x",
        OutputDataConfig={"S3OutputPath": "s3://b/out"},
        ResourceConfig={"InstanceType": "ml.m5.large", "InstanceCount": 1, "VolumeSizeInGB": 1},
        StoppingCondition={"MaxRuntimeInSeconds": 60},
    )
    assert [j["TrainingJobName"] for j in sm.list_training_jobs(NameContains="stall-job")["TrainingJobSummaries"]]
    trial = _written(tmp_path / "t", {"loss": {0: 1.0, 1: 0.9, 2: 0.8}}, end=False)
    clock = FakeClock()

    def sleep(dt):
        clock.now += dt

    rule = StalledTrainingRule(
        trial,
        threshold="60",
        stop_training_on_fire="True",
        training_job_name_prefix="stall-job",
        clock=clock,
        sleep=sleep,
    )
    with caplog.at_level("WARNING", logger="smdebug"):
        assert fired_at(rule) == 2
    assert 60 < clock.now - 1000 <= 61.1
    assert "found 0 InProgress training jobs starting with 'stall-job'" in caplog.text  # the StopTraining action's code
    assert read_stop_request(trial.store) is None
