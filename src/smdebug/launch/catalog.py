"""What ``smdebug_rulesconfig`` 1.0.1's 21 ``rule_configs.<function>()`` return, as data.

``rule_configs.exploding_tensor()`` is ``{"DebugRuleConfiguration": {"RuleConfigurationName":
"ExplodingTensor", "RuleParameters": {"rule_to_invoke": "ExplodingTensor"}}}`` plus, for nine rules, the
``CollectionConfigurations`` the rule asks the hook to save (docs/guide/zero-code-change.md,
"Configuring it the ways you already have").
No rule has a default parameter there: the defaults are the rule classes'.
"""

from __future__ import annotations

import copy

__all__ = ["RULE_CONFIGS", "rule_config", "resolve_rule_name"]

# rule_configs function -> (RuleConfigurationName = rule_to_invoke, the collections it asks for)
_TABLE: dict[str, tuple[str, list]] = {
    "all_zero": ("AllZero", []),
    "check_input_images": (
        "CheckInputImages",
        [
            {
                "CollectionName": "input_image",
                "CollectionParameters": {"include_regex": ".*hybridsequential0_input_0", "save_interval": "500"},
            }
        ],
    ),
    "class_imbalance": ("ClassImbalance", []),
    "confusion": ("Confusion", []),
    "create_xgboost_report": (
        "CreateXgboostReport",
        [
            {"CollectionName": "metrics", "CollectionParameters": {"save_interval": "5"}},
            {"CollectionName": "feature_importance", "CollectionParameters": {"save_interval": "5"}},
            {"CollectionName": "hyperparameters", "CollectionParameters": {"save_steps": "0"}},
            {"CollectionName": "predictions", "CollectionParameters": {"save_interval": "5"}},
            {"CollectionName": "labels", "CollectionParameters": {"save_interval": "5"}},
        ],
    ),
    "dead_relu": (
        "DeadRelu",
        [
            {
                "CollectionName": "relu_output",
                "CollectionParameters": {"include_regex": ".*relu_output", "save_interval": "500"},
            }
        ],
    ),
    "exploding_tensor": ("ExplodingTensor", []),
    "feature_importance_overweight": (
        "FeatureImportanceOverweight",
        [{"CollectionName": "feature_importance", "CollectionParameters": {"save_interval": "500"}}],
    ),
    "loss_not_decreasing": (
        "LossNotDecreasing",
        [{"CollectionName": "losses", "CollectionParameters": {"save_interval": "500"}}],
    ),
    "nlp_sequence_ratio": (
        "NLPSequenceRatio",
        [
            {
                "CollectionName": "input_sequence",
                "CollectionParameters": {"include_regex": ".*embedding0_input_0", "save_interval": "500"},
            }
        ],
    ),
    "overfit": ("Overfit", []),
    "overtraining": ("Overtraining", []),
    "poor_weight_initialization": (
        "PoorWeightInitialization",
        [
            {
                "CollectionName": "relu_input",
                "CollectionParameters": {"include_regex": ".*relu_input", "save_interval": "500"},
            }
        ],
    ),
    "saturated_activation": ("SaturatedActivation", []),
    "similar_across_runs": ("SimilarAcrossRuns", []),
    "stalled_training_rule": ("StalledTrainingRule", []),
    "tensor_variance": ("TensorVariance", []),
    "tree_depth": ("TreeDepth", []),
    "unchanged_tensor": ("UnchangedTensor", []),
    "vanishing_gradient": (
        "VanishingGradient",
        [{"CollectionName": "gradients", "CollectionParameters": {"save_interval": "500"}}],
    ),
    "weight_update_ratio": (
        "WeightUpdateRatio",
        [{"CollectionName": "weights", "CollectionParameters": {"save_interval": "500"}}],
    ),
}


def rule_config(function: str) -> dict:
    """What ``rule_configs.<function>()`` returns (a fresh copy)."""
    name, colls = _TABLE[function]
    doc = {"DebugRuleConfiguration": {"RuleConfigurationName": name, "RuleParameters": {"rule_to_invoke": name}}}
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
