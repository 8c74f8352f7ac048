"""What ``smdebug_rulesconfig`` 1.0.1's 21 ``rule_configs.<function>()`` return, as data.

``rule_configs.exploding_tensor()`` is ``{"DebugRuleConfiguration": {"RuleConfigurationName":
"ExplodingTensor", "RuleParameters": {"rule_to_invoke": "ExplodingTensor"}}}`` plus, for nine rules, the
``CollectionConfigurations`` the rule asks the hook to save (docs/guide/zero-code-change.md,
"Configuring it the ways you already have").
No rule has a default parameter there: the defaults are the rule classes'.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["RULE_CONFIGS", "rule_config", "resolve_rule_name"]

CollectionConfiguration = dict[str, Any]  # {"CollectionName": ..., "CollectionParameters": {...}}


def _every(steps: int, name: str, regex: str | None = None) -> CollectionConfiguration:
    """The collection ``name`` (the tensors matching ``regex``) saved every ``steps`` steps."""
    params = {"include_regex": regex} if regex else {}
    return {"CollectionName": name, "CollectionParameters": {**params, "save_interval": str(steps)}}


# rule_configs function -> (RuleConfigurationName = rule_to_invoke, the collections it asks for)
_TABLE: dict[str, tuple[str, list[CollectionConfiguration]]] = {
    "all_zero": ("AllZero", []),
    "check_input_images": ("CheckInputImages", [_every(500, "input_image", ".*hybridsequential0_input_0")]),
    "class_imbalance": ("ClassImbalance", []),
    "confusion": ("Confusion", []),
    "create_xgboost_report": (
        "CreateXgboostReport",
        [
            _every(5, "metrics"),
            _every(5, "feature_importance"),
            {"CollectionName": "hyperparameters", "CollectionParameters": {"save_steps": "0"}},
            _every(5, "predictions"),
            _every(5, "labels"),
        ],
    ),
    "dead_relu": ("DeadRelu", [_every(500, "relu_output", ".*relu_output")]),
    "exploding_tensor": ("ExplodingTensor", []),
    "feature_importance_overweight": ("FeatureImportanceOverweight", [_every(500, "feature_importance")]),
    "loss_not_decreasing": ("LossNotDecreasing", [_every(500, "losses")]),
    "nlp_sequence_ratio": ("NLPSequenceRatio", [_every(500, "input_sequence", ".*embedding0_input_0")]),
    "overfit": ("Overfit", []),
    "overtraining": ("Overtraining", []),
    "poor_weight_initialization": ("PoorWeightInitialization", [_every(500, "relu_input", ".*relu_input")]),
    "saturated_activation": ("SaturatedActivation", []),
    "similar_across_runs": ("SimilarAcrossRuns", []),
    "stalled_training_rule": ("StalledTrainingRule", []),
    "tensor_variance": ("TensorVariance", []),
    "tree_depth": ("TreeDepth", []),
    "unchanged_tensor": ("UnchangedTensor", []),
    "vanishing_gradient": ("VanishingGradient", [_every(500, "gradients")]),
    "weight_update_ratio": ("WeightUpdateRatio", [_every(500, "weights")]),
}


def rule_config(function: str) -> dict[str, Any]:
    """What ``rule_configs.<function>()`` returns (a fresh copy)."""
    name, colls = _TABLE[function]
    doc: dict[str, Any] = {
        "DebugRuleConfiguration": {"RuleConfigurationName": name, "RuleParameters": {"rule_to_invoke": name}}
    }
    if colls:
        doc["CollectionConfigurations"] = copy.deepcopy(colls)
    return doc


RULE_CONFIGS = tuple(_TABLE)
_BY_NAME = {name.lower(): fn for fn, (name, _c) in _TABLE.items()}


def resolve_rule_name(text: str) -> str | None:
    """The rule_configs function for ``exploding_tensor``, ``ExplodingTensor`` or ``explodingtensor``;
    None when it names no built-in rule."""
    key = text.strip()
    if key in _TABLE:
        return key
    return _BY_NAME.get(key.replace("_", "").replace("-", "").lower())
