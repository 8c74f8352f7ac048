"""The eleven profiler rules of SageMaker Debugger (smdebug-rulesconfig's ``profiler_rules``).

- ``gpu``: LowGPUUtilization, BatchSize, GPUMemoryIncrease, LoadBalancing
- ``bottleneck``: CPUBottleneck, IOBottleneck
- ``usage``: OverallSystemUsage, MaxInitializationTime
- ``steps``: StepOutlier, Dataloader
- ``report``: ProfilerReport (runs the others, writes ``profiler-reports/<Rule>.json``)
- ``host``: what CPUBottleneck, IOBottleneck and GPUMemoryIncrease read on a job without a GPU
- ``base`` (what every rule shares, the window driver) and ``windows`` (what a window holds)

They register in the rules' registry (smdebug.rules.builtin.base) as the profiler kind
(``profiler_rule = True``): :func:`profiler_rule_classes` gives them, and they run window by window over a profiler trial through
:func:`smdebug.rules.invoke_rule` (see :mod:`smdebug.rules.profiler.base`). User guide:
docs/guide/profiler-rules.md.
"""

from __future__ import annotations

import importlib

__all__ = [
    "ProfilerRule",
    "profiler_rule_classes",
    "get_profiler_rule_class",
    "BatchSize",
    "CPUBottleneck",
    "Dataloader",
    "GPUMemoryIncrease",
    "IOBottleneck",
    "LoadBalancing",
    "LowGPUUtilization",
    "MaxInitializationTime",
    "OverallSystemUsage",
    "StepOutlier",
    "ProfilerReport",
]

_MODULES = ("gpu", "bottleneck", "usage", "steps", "report")


def profiler_rule_classes() -> dict:
    """``{name: class}`` of the eleven profiler rules, sorted by name (imports their modules once)."""
    from smdebug.rules.builtin.base import registered_rules

    for module in _MODULES:
        importlib.import_module(f"{__name__}.{module}")
    return {n: c for n, c in sorted(registered_rules().items()) if c.profiler_rule}


def get_profiler_rule_class(name: str):
    """The class of profiler rule ``name`` (e.g. ``"StepOutlier"``)."""
    from smdebug.exceptions import RuleConfigurationError

    classes = profiler_rule_classes()
    if name not in classes:
        raise RuleConfigurationError(str(name), None, f"no such profiler rule; profiler rules: {', '.join(classes)}")
    return classes[name]


def __getattr__(name: str):
    if name == "ProfilerRule":
        from smdebug.rules.profiler.base import ProfilerRule

        return ProfilerRule
    for mod in _MODULES:
        module = importlib.import_module(f"{__name__}.{mod}")
        if name in getattr(module, "__all__", ()):
            return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
