"""Rules evaluated step by step over trials."""

from smdebug.rules.rule import Rule
from smdebug.rules.rule_invoker import invoke_rule

__all__ = ["Rule", "invoke_rule"]
