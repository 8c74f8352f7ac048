"""Concepts written once: booleans (smdebug.codec.values.parse_bool), mode names
(smdebug.modes.parse_mode), and stopping a job (the StopTraining action's code, which
StalledTrainingRule uses too). Each test pins the accepted spellings and that every user
goes through the one parser."""

from __future__ import annotations

import inspect
import logging

import pytest

from smdebug.codec.values import parse_bool
from smdebug.modes import ModeKeys, parse_mode

# SageMaker's rule parameters: "True"/"False", also "true"/"false"/"1"/"0"; nothing else (a hook JSON
# with "yes" fails in real smdebug, so it fails here too)
TRUE = [True, 1, 1.0, "true", "True", "TRUE", " true ", "1", " 1 "]
FALSE = [False, 0, 0.0, "false", "False", "FALSE", " false ", "0"]
NOT_BOOLS = ["", " ", "maybe", "tru", "2", 2, -1, 0.5, None, [], "none", "y", "t", "yes", "no", "on", "off"]


@pytest.mark.parametrize("value", TRUE)
def test_bool_true(value):
    assert parse_bool(value) is True


@pytest.mark.parametrize("value", FALSE)
def test_bool_false(value):
    assert parse_bool(value) is False


@pytest.mark.parametrize("value", NOT_BOOLS)
def test_not_a_bool(value):
    with pytest.raises(ValueError, match="expected True or False"):
        parse_bool(value)


def test_every_bool_user_takes_the_same_spellings(monkeypatch, caplog):
    from smdebug.analysis.utils import parse_bool as analysis_parse_bool
    from smdebug.core.config.hook_config_values import ValueParser
    from smdebug.core.engine.guard import PROPAGATE_ERRORS_ENV, propagate_default
    from smdebug.core.reduction_config import ReductionConfig
    from smdebug.exceptions import SMDebugValueError
    from smdebug.profiler.recording.config import _bool as profiler_bool
    from smdebug.rules.params import as_bool

    vp = ValueParser("hook.json", None)
    for value in TRUE + FALSE:
        want = parse_bool(value)
        assert as_bool(value) is want
        assert analysis_parse_bool(value, default=not want) is want
        assert vp.boolean("s", "k", value) is want
        assert ReductionConfig(save_raw_tensor=value).save_raw_tensor is want
        assert profiler_bool("DisableProfiler", value) is want
    for value in ["maybe", 2, "yes", "on"]:
        with pytest.raises(ValueError):
            as_bool(value)
        with pytest.raises(ValueError):
            analysis_parse_bool(value, default=False)
        with pytest.raises(SMDebugValueError, match="hook.json"):
            vp.boolean("s", "k", value)
        with pytest.raises(SMDebugValueError, match="save_raw_tensor"):
            ReductionConfig(save_raw_tensor=value)
        with pytest.raises(SMDebugValueError, match="DisableProfiler"):
            profiler_bool("DisableProfiler", value)
    assert analysis_parse_bool(None, default=True) is True and vp.boolean("s", "k", None, default=True) is True
    for value in ["1", "true", "True", "TRUE", " 1"]:
        monkeypatch.setenv(PROPAGATE_ERRORS_ENV, value)
        assert propagate_default() is True
    for value in ["", "0", "false", "False"]:
        monkeypatch.setenv(PROPAGATE_ERRORS_ENV, value)
        assert propagate_default() is False
    monkeypatch.setenv(PROPAGATE_ERRORS_ENV, "maybe")
    with caplog.at_level(logging.WARNING, logger="smdebug"):
        assert propagate_default() is False
    assert "SMDEBUG_PROPAGATE_ERRORS='maybe' is not a boolean" in caplog.text


MODES = {
    ModeKeys.TRAIN: [
        ModeKeys.TRAIN,
        1,
        "TRAIN",
        "train",
        " Train ",
        "modes.TRAIN",
        "ModeKeys.train",
        "smdebug.modes.TRAIN",
    ],
    ModeKeys.EVAL: [ModeKeys.EVAL, 2, "EVAL", "eval", "modes.EVAL"],
    ModeKeys.PREDICT: [ModeKeys.PREDICT, 3, "predict", "PREDICT"],
    ModeKeys.GLOBAL: [ModeKeys.GLOBAL, 4, "global", "Global", "ModeKeys.GLOBAL"],
}
NOT_MODES = ["", "training", "validation", "foo.TRAIN", "TRAIN.", 0, 5, True, None, 1.0]


@pytest.mark.parametrize("mode, value", [(m, v) for m, vs in MODES.items() for v in vs])
def test_mode_names(mode, value):
    assert parse_mode(value) is mode


@pytest.mark.parametrize("value", NOT_MODES)
def test_not_a_mode(value):
    with pytest.raises(ValueError, match="expected a mode"):
        parse_mode(value)


def test_every_mode_user_takes_the_same_spellings():
    from smdebug.cli.common import CliError
    from smdebug.cli.common import parse_mode as cli_parse_mode
    from smdebug.core.modes import str_to_mode_keys
    from smdebug.core.save_config import SaveConfig
    from smdebug.rules.params import as_mode

    for mode, values in MODES.items():
        for value in values:
            assert as_mode(value) is mode
            if isinstance(value, str):
                assert cli_parse_mode(value) is mode and str_to_mode_keys(value) is mode
                config = SaveConfig.from_dict({value: {"save_interval": 7}})
                assert config.get_save_config(mode).save_interval == 7
    for value in ["training", "foo.TRAIN", ""]:
        with pytest.raises(ValueError):
            as_mode(value)
        with pytest.raises(ValueError):
            str_to_mode_keys(value)
        with pytest.raises(CliError, match="--mode"):
            cli_parse_mode(value)
        with pytest.raises(ValueError, match="not a mode"):
            SaveConfig.from_dict({value: {"save_interval": 7}})


# ------------------------------------------------------------------ stopping a job: one code path
def test_stalled_training_stops_through_the_stop_training_action(tmp_path, monkeypatch):
    from rule_trials import write_trial
    from smdebug.rules.actions import LocalStopTraining
    from smdebug.rules.builtin import StalledTrainingRule, training
    from smdebug.trials import create_trial

    trial = create_trial(write_trial(tmp_path / "t", {"loss": {0: 1.0}}))
    assert isinstance(StalledTrainingRule(trial, stop_training_on_fire="True")._stopper, LocalStopTraining)
    assert StalledTrainingRule(trial)._stopper is None
    pytest.importorskip("boto3")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
    from smdebug.rules.aws_actions import SageMakerStopTraining

    rule = StalledTrainingRule(trial, stop_training_on_fire="True", training_job_name_prefix="job")
    assert isinstance(rule._stopper, SageMakerStopTraining) and rule._stopper.prefix == "job"
    # the SageMaker calls are written once, in aws_actions.py
    assert "list_training_jobs" not in inspect.getsource(training) and not hasattr(training, "stop_sagemaker_job")
