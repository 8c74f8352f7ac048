"""TreeDepth and FeatureImportanceOverweight on trials of real XGBoost boosting runs."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from xgb_trials import breast_cancer, split, write_collections, write_xgb_trial

from smdebug.core.writer import FileWriter
from smdebug.exceptions import RuleConfigurationError, RuleEvaluationConditionMet
from smdebug.rules import invoke_rule
from smdebug.rules.builtin import FeatureImportanceOverweight, TreeDepth, get_rule_class, required_collections
from smdebug.trials import create_trial

BINARY = {"objective": "binary:logistic", "max_depth": 3, "nthread": 1}
# from round 4 on, trees grow to depth 12 (set_param before the round, as XGBoost's schedulers do)
DEEP_FROM_4 = {4: {"max_depth": 12, "min_child_weight": 0, "lambda": 0}}


def fired_at(rule, **kw):
    """The step where invoke_rule sees the rule fire, or None when it never does."""
    try:
        invoke_rule(rule, raise_eval_cond=True, **kw)
    except RuleEvaluationConditionMet as exc:
        return exc.step
    return None


def true_depths(booster) -> dict:
    """Depth of each tree (a single leaf: 0), followed through the Yes/No links of trees_to_dataframe."""
    df = booster.trees_to_dataframe()
    out = {}
    for tree, rows in df.groupby("Tree"):
        children = {r.ID: (r.Yes, r.No) for r in rows.itertuples() if r.Feature != "Leaf"}
        depth, level = 0, [f"{tree}-0"]
        while True:
            level = [c for node in level for c in children.get(node, ())]
            if not level:
                break
            depth += 1
        out[int(tree)] = depth
    return out


@pytest.fixture(scope="module")
def cancer():
    X, y = breast_cancer()
    return split(X, y, 150, seed=1)


@pytest.fixture(scope="module")
def shallow(tmp_path_factory, cancer):
    return write_xgb_trial(tmp_path_factory.mktemp("shallow"), BINARY, *cancer, num_round=8)


@pytest.fixture(scope="module")
def deepening(tmp_path_factory, cancer):
    return write_xgb_trial(tmp_path_factory.mktemp("deep"), BINARY, *cancer, num_round=8, schedule=DEEP_FROM_4)


# --------------------------------------------------------------------------------- TreeDepth
def test_tree_depth_quiet_on_depth_3_booster(shallow):
    depths = true_depths(shallow.booster)
    assert set(depths.values()) == {3}
    rule = TreeDepth(create_trial(shallow.path))
    assert fired_at(rule) is None
    assert rule.last_depth == 3  # the complete depth-3 tree of the last round: node ids up to 14


def test_tree_depth_fires_at_first_depth_12_round(deepening):
    depths = true_depths(deepening.booster)
    assert [depths[r] for r in range(4)] == [3, 3, 3, 3]
    assert min(depths[r] for r in range(4, 8)) > 4
    rule = TreeDepth(create_trial(deepening.path), depth="4")
    assert fired_at(rule) == 4
    # the documented estimator: floor(log2(largest node id)) of the round's tree
    assert rule.last_depth == int(np.floor(np.log2(deepening.node_max[4]))) > 4
    assert rule.last_depth <= depths[4]


def test_tree_depth_threshold_above_estimate_is_quiet(deepening):
    estimate = max(int(np.floor(np.log2(n))) for n in deepening.node_max.values())
    assert fired_at(TreeDepth(create_trial(deepening.path), depth=str(estimate))) is None
    assert fired_at(TreeDepth(create_trial(deepening.path), depth=estimate - 1)) == 4


def test_tree_depth_without_trees_logs_once_and_never_fires(tmp_path, caplog):
    write_collections(str(tmp_path))
    for step in range(3):
        with FileWriter(trial_dir=str(tmp_path), step=step) as fw:
            fw.write_tensor(np.array([0.5]), "train-logloss")
    rule = TreeDepth(create_trial(str(tmp_path)))
    with caplog.at_level(logging.WARNING, logger="smdebug"):
        assert fired_at(rule, end_step=3) is None
    warnings = [r for r in caplog.records if "trees/Node" in r.getMessage()]
    assert len(warnings) == 1 and "'trees' collection" in warnings[0].getMessage()


# ---------------------------------------------------------------- FeatureImportanceOverweight
def top_share(importance: dict, n=3) -> float:
    w = sorted(importance["weight"].values(), reverse=True)
    return sum(w[:n]) / sum(w)


def test_feature_importance_quiet_on_healthy_model(shallow):
    shares = [top_share(shallow.importance[s]) for s in shallow.steps]
    assert max(shares) < 0.8
    rule = FeatureImportanceOverweight(create_trial(shallow.path))
    assert fired_at(rule) is None
    assert rule.last_share == pytest.approx(shares[-1], rel=1e-12)


def test_feature_importance_fires_on_one_dominant_feature(tmp_path, cancer):
    # labels decided by one real feature (worst concave points): the trees split on it alone
    (X_tr, _), (X_va, _) = cancer
    cut = np.median(X_tr[:, 27])
    run = write_xgb_trial(
        tmp_path,
        BINARY,
        (X_tr, (X_tr[:, 27] > cut) * 1.0),
        (X_va, (X_va[:, 27] > cut) * 1.0),
        num_round=4,
        save_interval=2,
    )
    assert run.steps == [0, 2]
    shares = {s: top_share(run.importance[s]) for s in run.steps}
    expected = next(s for s in run.steps if shares[s] > 0.8)
    assert max(run.importance[expected]["weight"], key=run.importance[expected]["weight"].get) == "f27"
    rule = FeatureImportanceOverweight(create_trial(str(tmp_path)))
    assert fired_at(rule) == expected == 0
    assert rule.last_share == pytest.approx(shares[expected], rel=1e-12)


def test_feature_importance_gain_regex_and_nfeatures(shallow):
    trial = create_trial(shallow.path)
    last = shallow.steps[-1]
    gain = sorted(shallow.importance[last]["gain"].values(), reverse=True)
    rule = FeatureImportanceOverweight(trial, tensor_regex="feature_importance/gain/", nfeatures="5", threshold="0.0")
    assert rule.invoke_at_step(last) is True
    assert rule.last_share == pytest.approx(sum(gain[:5]) / sum(gain), rel=1e-12)
    # all features: the share is 1, never above a threshold of 1
    rule = FeatureImportanceOverweight(trial, nfeatures=len(gain) + 10, threshold=1)
    assert rule.invoke_at_step(last) is False and rule.last_share == pytest.approx(1.0)


# ------------------------------------------------------------------------------- parameters
def test_defaults_and_hook_collections(shallow):
    trial = create_trial(shallow.path)
    assert TreeDepth(trial).depth == 4
    fio = FeatureImportanceOverweight(trial)
    assert (fio.threshold, fio.nfeatures, fio.tensor_regex.pattern) == (0.8, 3, ".*feature_importance/weight")
    assert [c.name for c in required_collections("TreeDepth")] == ["trees"]
    (fi,) = required_collections("FeatureImportanceOverweight")
    assert (fi.name, fi.parameters) == ("feature_importance", {"save_interval": "500"})
    assert get_rule_class("TreeDepth") is TreeDepth


@pytest.mark.parametrize(
    ("cls", "param", "value"),
    [
        (TreeDepth, "depth", "abc"),
        (TreeDepth, "depth", "-1"),
        (TreeDepth, "depth", "4.5"),
        (FeatureImportanceOverweight, "threshold", "abc"),
        (FeatureImportanceOverweight, "threshold", "1.5"),
        (FeatureImportanceOverweight, "nfeatures", "0"),
        (FeatureImportanceOverweight, "tensor_regex", "feature_importance/(weight"),
        (TreeDepth, "max_depth", "4"),
    ],
)
def test_bad_parameters_raise_at_construction(shallow, cls, param, value):
    with pytest.raises(RuleConfigurationError) as info:
        cls(create_trial(shallow.path), **{param: value})
    assert info.value.parameter == param and info.value.rule_name == cls.__name__
    assert repr(param) in str(info.value)
