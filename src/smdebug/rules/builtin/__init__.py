"""The 21 built-in rules of SageMaker Debugger, as open source (spec: docs/builtin-rules.md).

Rules are grouped by family in a few modules and imported only when first used:

- ``tensors``: VanishingGradient, ExplodingTensor, AllZero, TensorVariance, SimilarAcrossRuns
- ``weights``: WeightUpdateRatio, UnchangedTensor, PoorWeightInitialization
- ``training``: LossNotDecreasing, Overfit, Overtraining, StalledTrainingRule
- ``activations``: DeadRelu, SaturatedActivation, CheckInputImages, NLPSequenceRatio
- ``classification``: Confusion, ClassImbalance
- ``trees``: TreeDepth, FeatureImportanceOverweight, CreateXgboostReport
"""

from __future__ import annotations

import importlib

__all__ = [
    "RULE_MODULES",
    "rule_names",
    "get_rule_class",
    "required_collections",
    "VanishingGradient",
    "ExplodingTensor",
    "SimilarAcrossRuns",
    "WeightUpdateRatio",
    "AllZero",
    "UnchangedTensor",
    "LossNotDecreasing",
    "Confusion",
    "CheckInputImages",
    "DeadRelu",
    "TreeDepth",
    "ClassImbalance",
    "Overfit",
    "Overtraining",
    "TensorVariance",
    "PoorWeightInitialization",
    "SaturatedActivation",
    "NLPSequenceRatio",
    "StalledTrainingRule",
    "FeatureImportanceOverweight",
    "CreateXgboostReport",
]

# rule class name -> module of this package that defines it
RULE_MODULES = {
    "VanishingGradient": "tensors",
    "ExplodingTensor": "tensors",
    "AllZero": "tensors",
    "TensorVariance": "tensors",
    "SimilarAcrossRuns": "tensors",
    "WeightUpdateRatio": "weights",
    "UnchangedTensor": "weights",
    "PoorWeightInitialization": "weights",
    "LossNotDecreasing": "training",
    "Overfit": "training",
    "Overtraining": "training",
    "StalledTrainingRule": "training",
    "DeadRelu": "activations",
    "SaturatedActivation": "activations",
    "CheckInputImages": "activations",
    "NLPSequenceRatio": "activations",
    "Confusion": "classification",
    "ClassImbalance": "classification",
    "TreeDepth": "trees",
    "FeatureImportanceOverweight": "trees",
    "CreateXgboostReport": "trees",
}


def rule_names() -> list[str]:
    """The documented class names of the built-in rules."""
    return list(RULE_MODULES)


def get_rule_class(name: str):
    """The class of built-in rule ``name`` (as documented, e.g. ``"VanishingGradient"``)."""
    from smdebug.exceptions import RuleConfigurationError

    module = RULE_MODULES.get(name)
    if module is None:
        lowered = {n.lower(): n for n in RULE_MODULES}
        hint = lowered.get(str(name).lower())
        more = f"; did you mean {hint!r}?" if hint else f"; built-in rules: {', '.join(RULE_MODULES)}"
        raise RuleConfigurationError(str(name), None, f"no such built-in rule{more}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


def required_collections(name: str) -> list:
    """The hook collections rule ``name`` needs (SageMaker's defaults), as HookCollection objects."""
    return list(get_rule_class(name).hook_collections)


def __getattr__(name: str):
    if name in RULE_MODULES:
        return get_rule_class(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
