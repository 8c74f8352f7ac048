"""The Rule base class: a check evaluated step by step over one or more trials."""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod

from smdebug.analysis.utils import no_refresh
from smdebug.exceptions import RuleEvaluationConditionMet

__all__ = ["Rule"]


class Rule(ABC):
    """Subclass it and implement ``invoke_at_step(step) -> bool`` (True: the condition is met).

    Constructor arguments other than the trials should be strings, so that rules can be
    configured from JSON.
    """

    def __init__(self, base_trial, action_str="", other_trials=None):
        self.base_trial = base_trial
        self.other_trials = list(other_trials) if other_trials else []
        self.trials = [base_trial, *self.other_trials]
        self.action_str = action_str
        self.logger = logging.getLogger("smdebug")
        self.rule_name = type(self).__name__

    def set_required_tensors(self, step):  # noqa: B027 - optional hook
        """Hook for subclasses that declare the tensors they need before a step is evaluated."""

    @abstractmethod
    def invoke_at_step(self, step) -> bool: ...

    def invoke(self, step) -> None:
        """Wait for ``step`` in the base trial, evaluate it with refresh off, raise when met."""
        self.base_trial.wait_for_steps([step])
        with no_refresh(self.trials):
            self.set_required_tensors(step)
            met = self.invoke_at_step(step)
        if met:
            raise RuleEvaluationConditionMet(self.rule_name, step)
