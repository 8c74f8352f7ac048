"""Which XGBoost metrics are losses: one definition (core/metric_names.py) for the XGBoost
``losses`` collection and the rules Overfit and Overtraining. aucpr, ndcg and pre grow as the
model improves, as auc and map do: they are not losses."""

from __future__ import annotations

import re

import pytest

from rule_trials import write_trial
from smdebug.core.metric_names import is_increasing_metric, is_loss_metric
from smdebug.rules import invoke_rule
from smdebug.rules.builtin import Overfit, Overtraining
from smdebug.trials import create_trial

LOSSES = [
    "train-rmse",
    "validation_0-logloss",
    "train-error@0.7",
    "validation-mape",
    "eval-mlogloss",
    "test-poisson-nloglik",
]
GROWING = [
    "train-auc",
    "validation-aucpr",
    "eval-ndcg@5",
    "train-pre@10",
    "validation-map",
    "valid-ndcg",
    "test-map@3-",
]


@pytest.mark.parametrize("name", LOSSES)
def test_losses(name):
    assert is_loss_metric(name) and not is_increasing_metric(name)


@pytest.mark.parametrize("name", GROWING)
def test_metrics_that_grow_are_not_losses(name):
    assert not is_loss_metric(name) and is_increasing_metric(name)


def test_not_metrics():
    for name in ("loss", "trees/Node", "feature_importance/weight/f0"):
        assert not is_loss_metric(name) and not is_increasing_metric(name)


def test_the_xgboost_losses_collection_uses_the_same_definition():
    from smdebug.xgboost.collection import DEFAULT_REGEXES
    from smdebug.xgboost.collection import is_loss_metric as xgb_is_loss

    regex = re.compile(DEFAULT_REGEXES["losses"])
    for name in LOSSES + GROWING + ["loss", "a-b-auc", "a-auc-b"]:
        assert bool(regex.search(name)) == is_loss_metric(name) == xgb_is_loss(name), name


def test_the_loss_regex_is_one_re2_knows():
    """The losses regex has a lookahead, which RE2 runs only for the known default regexes: the
    one definition must stay one of them (smdebug.patterns.KNOWN_DEFAULTS is keyed by its text)."""
    from smdebug.core.metric_names import LOSS_REGEX
    from smdebug.patterns import KNOWN_DEFAULTS

    assert LOSS_REGEX in KNOWN_DEFAULTS


@pytest.mark.parametrize("metric", ["aucpr", "ndcg@5", "pre"])
def test_overfit_does_not_compare_a_metric_that_grows(tmp_path, metric):
    """Validation above training is overfitting for a loss; for aucpr/ndcg/pre it is the model
    doing well on validation: the rule must not treat it as a loss (it used to fire)."""
    series = {
        f"train-{metric}": {s: 0.5 for s in range(6)},
        f"validation-{metric}": {s: 0.9 for s in range(6)},
        "train-rmse": {s: 1.0 for s in range(6)},
        "validation-rmse": {s: 1.0 for s in range(6)},
    }
    run = invoke_rule(Overfit(create_trial(write_trial(tmp_path / "t", series))))
    assert run.fired == [] and run.tensors_evaluated > 0  # rmse was compared, the metric was not
    series["validation-rmse"] = {s: 2.0 for s in range(6)}
    run = invoke_rule(Overfit(create_trial(write_trial(tmp_path / "u", series))))
    assert run.fired


@pytest.mark.parametrize("metric", ["aucpr", "ndcg", "pre@10"])
def test_overtraining_does_not_wait_on_a_metric_that_grows(tmp_path, metric):
    series = {f"validation-{metric}": {s: 0.1 * s for s in range(8)}}  # improving every step
    run = invoke_rule(Overtraining(create_trial(write_trial(tmp_path / "t", series)), patience_validation="2"))
    assert run.fired == []
    series = {"validation-rmse": {s: 1.0 for s in range(8)}}  # a loss that never improves fires
    run = invoke_rule(Overtraining(create_trial(write_trial(tmp_path / "u", series)), patience_validation="2"))
    assert run.fired
