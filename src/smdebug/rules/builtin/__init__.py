"""The 21 built-in rules of SageMaker Debugger, as open source (spec: docs/builtin-rules.md).

Rules are grouped by family in a few modules and imported only when first used:

- ``tensors``: VanishingGradient, ExplodingTensor, AllZero, TensorVariance, SimilarAcrossRuns
- ``weights``: WeightUpdateRatio, UnchangedTensor, PoorWeightInitialization
- ``training``: LossNotDecreasing, Overfit, Overtraining
- ``stalled``: StalledTrainingRule
- ``activations``: DeadRelu, SaturatedActivation, CheckInputImages, NLPSequenceRatio
- ``classification``: Confusion, ClassImbalance
- ``trees``: TreeDepth, FeatureImportanceOverweight, CreateXgboostReport

Nothing here lists them: each rule class registers itself when its module is imported
(:mod:`smdebug.rules.builtin.base`: one registry, each rule of a kind), and :func:`rule_classes`
imports every module of this package (and of its sub-packages) once and gives the debugger rules.
A new rule is one class in any of those modules. The eleven profiler rules are the other kind
(``profiler_rule = True``): :func:`smdebug.rules.profiler.profiler_rule_classes` gives them, and
:func:`smdebug.rules.config.find_rule_class` looks a name up among both kinds.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from smdebug.rules.builtin.base import BuiltinRule, HookCollection

__all__ = [
    "RULE_MODULES",
    "rule_classes",
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

_loaded = False


def rule_classes() -> dict[str, type[BuiltinRule]]:
    """``{name: class}`` of the 21 built-in (debugger) rules, sorted by name (imports each module
    of the package once)."""
    global _loaded
    from smdebug.rules.builtin.base import registered_rules

    if not _loaded:
        for info in pkgutil.walk_packages(__path__, prefix=f"{__name__}."):  # sub-packages too
            importlib.import_module(info.name)
        _loaded = True
    return {n: c for n, c in sorted(registered_rules().items()) if not c.profiler_rule}


def rule_names() -> list[str]:
    """The documented class names of the built-in rules, sorted."""
    return list(rule_classes())


def get_rule_class(name: str) -> type[BuiltinRule]:
    """The class of built-in rule ``name`` (as documented, e.g. ``"VanishingGradient"``); a
    profiler rule's name is refused with where to find it."""
    from smdebug.exceptions import RuleConfigurationError

    classes = rule_classes()
    cls = classes.get(name) if isinstance(name, str) else None
    if cls is None:
        lowered = {n.lower(): n for n in classes}
        hint = lowered.get(str(name).lower())
        more = (
            f"; did you mean {hint!r}?"
            if hint
            else (
                f"; built-in rules: {', '.join(classes)} (profiler rules: "
                "smdebug.rules.profiler.get_profiler_rule_class)"
            )
        )
        raise RuleConfigurationError(str(name), None, f"no such built-in rule{more}")
    return cls


def required_collections(name: str) -> list[HookCollection]:
    """The hook collections rule ``name`` needs (SageMaker's defaults), as HookCollection objects."""
    return list(get_rule_class(name).hook_collections)


def __getattr__(name: str) -> Any:
    if name == "RULE_MODULES":  # rule name -> module of this package (from the registry)
        return {n: c.__module__.rsplit(".", 1)[-1] for n, c in rule_classes().items()}
    if not name.startswith("_") and name in rule_classes():
        return get_rule_class(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
