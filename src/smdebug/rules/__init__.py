"""Rules evaluated step by step over trials: the Rule API, ``invoke_rule``, ``create_rule`` and actions.

The built-in rules are in :mod:`smdebug.rules.builtin` (imported when first used).
"""

from smdebug.rules.actions import Actions, ActionSpec, Firing, parse_actions
from smdebug.rules.config import create_rule
from smdebug.rules.req_tensors import RequiredTensors, RequiredTensorsForTrial
from smdebug.rules.rule import Rule
from smdebug.rules.rule_invoker import RuleRun, invoke_rule

__all__ = [
    "Rule",
    "invoke_rule",
    "RuleRun",
    "create_rule",
    "RequiredTensors",
    "RequiredTensorsForTrial",
    "Actions",
    "ActionSpec",
    "Firing",
    "parse_actions",
]
