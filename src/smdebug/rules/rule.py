"""The Rule base class: a check evaluated step by step over one or more trials (smdebug 1.0.34's API)."""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from smdebug.analysis.utils import no_refresh
from smdebug.exceptions import RuleEvaluationConditionMet
from smdebug.rules.actions import Actions, Firing
from smdebug.rules.finding import Finding
from smdebug.rules.req_tensors import RequiredTensors

if TYPE_CHECKING:
    from smdebug.trials.trial import Trial

__all__ = ["Rule"]


class Rule(ABC):
    """Subclass it and implement ``invoke_at_step(step) -> bool`` (True: the condition is met).

    ``set_required_tensors(step)`` may declare, through ``self.req_tensors.add(name, steps)``, the
    tensors the step needs; they are read in one batch before ``invoke_at_step``. Constructor
    arguments other than the trials should be strings, so that rules can be configured from JSON.
    ``action_str`` (JSON, see :mod:`smdebug.rules.actions`) says what to do when the rule fires;
    it is checked here, so a malformed one fails when the rule is built.
    """

    def __init__(self, base_trial: Trial, action_str: str = "", other_trials: Iterable[Trial] | None = None) -> None:
        self.base_trial = base_trial
        self.other_trials = list(other_trials) if other_trials else []  # 1.0.34 kept None; a list iterates
        self.trials = [base_trial, *self.other_trials]
        self.req_tensors = RequiredTensors(base_trial, self.other_trials)
        self.logger = logging.getLogger("smdebug")
        self.rule_name = self.__class__.__name__
        self.action_str = action_str
        self._actions = Actions(action_str, rule_name=self.rule_name)
        self.last_finding: Finding | None = None  # what the last firing found (see found())
        self.report: dict[str, Any] = {
            "RuleTriggered": 0,
            "Violations": 0,
            "Details": {},
            "Datapoints": 0,
            "RuleParameters": "",
        }

    @property
    def actions(self) -> Actions:
        return self._actions

    def set_required_tensors(self, step: int) -> None:  # noqa: B027 - optional hook
        """Declare with ``self.req_tensors.add(...)`` what evaluating ``step`` reads (optional)."""

    def found(
        self,
        step: int,
        message: str,
        *,
        tensors: Iterable[str] = (),
        values: Iterable[Any] = (),
        condition: str = "",
        worker: str | None = None,
        **extra: Any,
    ) -> bool:
        """Say what the condition found and return True: ``return self.found(step, "...", tensors=[name],
        values=[v], condition="< 1e-07", worker=w)`` in ``invoke_at_step``. The firing's messages,
        ``--json``, status.json and the stop request then name it (:class:`~smdebug.rules.finding.Finding`)."""
        self.last_finding = Finding(
            self.rule_name, int(step), message, tuple(tensors), tuple(values), condition, worker, extra=extra
        )
        return True

    @abstractmethod
    def invoke_at_step(self, step: int) -> bool:
        """Evaluate the rule at global ``step``; True when the condition is met."""

    def invoke(self, step: int) -> None:
        """Wait for ``step``, evaluate it with refresh off, run the actions and raise when met.

        Raises StepUnavailable, TensorUnavailable(ForStep) or NoMoreData as the trial does, and
        RuleEvaluationConditionMet(rule_name, step) when the condition is met.
        """
        self.logger.debug("Invoking rule %s for step %s", self.rule_name, step)
        self.base_trial.wait_for_steps([step])
        # refresh off: what set_required_tensors saw is what invoke_at_step sees
        with no_refresh(self.trials):
            self.req_tensors.clear()
            self.last_finding = None
            try:
                self.set_required_tensors(step)
                self.req_tensors.fetch()
                met = self.invoke_at_step(step)
            finally:
                self.req_tensors.release()
        if met:
            finding = self.last_finding
            if finding is not None:
                finding = self.last_finding = finding.placed(self.base_trial)
            exc = RuleEvaluationConditionMet(self.rule_name, step, finding=finding)
            self._actions.invoke(Firing(self.rule_name, step, str(exc), self.base_trial, finding))
            raise exc
