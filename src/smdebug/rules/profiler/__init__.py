"""The eleven profiler rules of SageMaker Debugger (smdebug-rulesconfig's ``profiler_rules``).

- ``gpu``: LowGPUUtilization, BatchSize, GPUMemoryIncrease, LoadBalancing
- ``bottleneck``: CPUBottleneck, IOBottleneck
- ``usage``: OverallSystemUsage, MaxInitializationTime
- ``steps``: StepOutlier, Dataloader
- ``report``: ProfilerReport (runs the others, writes ``profiler-reports/<Rule>.json``)
- ``host``: what CPUBottleneck, IOBottleneck and GPUMemoryIncrease read on a job without a GPU
- ``base`` (what every rule shares, the window driver) and ``windows`` (what a window holds)

They register in the built-in rules' registry (``smdebug.rules.builtin.get_rule_class``) marked
``profiler_rule = True``, and run window by window over a profiler trial through
:func:`smdebug.rules.invoke_rule` (see :mod:`smdebug.rules.profiler.base`). User guide:
docs/guide/profiler-rules.md.
"""

from __future__ import annotations

import importlib

__all__ = [
    "ProfilerRule",
    "profiler_rule_classes",
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
    """``{name: class}`` of the profiler rules, sorted by name."""
    from smdebug.rules.builtin import rule_classes

    return {n: c for n, c in rule_classes().items() if getattr(c, "profiler_rule", False)}


def __getattr__(name: str):
    if name == "ProfilerRule":
        from smdebug.rules.profiler.base import ProfilerRule

        return ProfilerRule
    for mod in _MODULES:
        module = importlib.import_module(f"{__name__}.{mod}")
        if name in getattr(module, "__all__", ()):
            return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
