"""StalledTrainingRule: fires when a job stops writing steps; it watches the clock while the rule
waits for the next step, not the tensors (the loss rules: training.py).

Specification: docs/builtin-rules.md 3.19 and its ambiguity register.
"""

from __future__ import annotations

import time
from typing import Any

from smdebug.analysis.utils import no_refresh, refresh
from smdebug.core.tensor import StepState
from smdebug.exceptions import RuleConfigurationError, RuleEvaluationConditionMet
from smdebug.rules.actions import Firing, LocalStopTraining
from smdebug.rules.builtin.base import BuiltinRule, Param
from smdebug.rules.finding import show_value
from smdebug.rules.params import as_bool, as_float, as_str, optional

__all__ = ["StalledTrainingRule"]


class StalledTrainingRule(BuiltinRule):
    """Fires when no new step has been written for ``threshold`` seconds (spec 3.19).

    Time-driven: while :func:`invoke_rule` waits for the next step, this rule polls the trial
    itself (every ``poll_interval`` seconds, at most 1 s) and fires when nothing new (a new
    step of any mode, or a step becoming complete) appeared for longer than ``threshold``
    seconds since the last progress (or since its first invocation). The reported step is the
    last step seen (-1 if none). It ends quietly when training ends. ``stop_training_on_fire``:
    with ``training_job_name_prefix``, stops the one SageMaker job whose name starts with it
    (none if several match, as 1.0.34); without a prefix, writes the local stop request the
    hooks look for. ``clock`` and ``sleep`` (keyword-only, not rule parameters) replace
    ``time.monotonic`` and ``time.sleep``, for tests.

    Its finding names the last step seen and the seconds without a new step against
    ``threshold`` (values: the seconds; no tensor). It judges no tensor, so NaN and inf values
    and too few steps do not concern it.
    """

    _marker: Any  # what the trial held at the last progress
    _stopper: Any  # the StopTraining action, when stop_training_on_fire

    params = (
        Param("threshold", as_float, "1800"),
        Param("stop_training_on_fire", as_bool, "False"),
        Param("training_job_name_prefix", optional(as_str), None),
    )
    # the parameters, parsed when the rule is built (see ``params``)
    threshold: float
    stop_training_on_fire: bool
    training_job_name_prefix: str | None
    evaluates_tensors = False  # it watches the clock, not tensors

    def __init__(
        self,
        base_trial: Any,
        action_str: Any = "",
        other_trials: Any = None,
        *,
        clock: Any = None,
        sleep: Any = None,
        **params: Any,
    ) -> None:
        super().__init__(base_trial, action_str=action_str, other_trials=other_trials, **params)
        if not self.threshold > 0:
            raise RuleConfigurationError(
                type(self).__name__, "threshold", f"must be more than 0 seconds, got {self.threshold}"
            )
        self.clock = clock or time.monotonic
        self.sleep = sleep or time.sleep
        self.poll_interval = min(1.0, max(self.threshold / 10.0, 0.01))
        self.last_progress: float | None = None
        self.last_seen_step = -1
        self._marker = None
        self._stalled = False
        self._idle = 0.0  # seconds without a new step when the rule fired
        self._stopper = None
        if self.stop_training_on_fire:
            if self.training_job_name_prefix:
                from smdebug.rules.aws_actions import SageMakerStopTraining

                self._stopper = SageMakerStopTraining(self.rule_name, self.training_job_name_prefix)
            else:
                self._stopper = LocalStopTraining(self.rule_name)

    def _observe(self) -> float:
        """Refresh the trial, note progress, return the time now."""
        trial = self.base_trial
        with refresh(trial):
            steps = trial.steps(show_incomplete_steps=True)
        marker = (len(steps), steps[-1] if steps else -1, trial.last_complete_step)
        now = self.clock()
        if marker != self._marker or self.last_progress is None:
            self._marker, self.last_progress = marker, now
            if steps:
                self.last_seen_step = max(self.last_seen_step, steps[-1])
        return now

    def invoke(self, step: Any) -> None:
        trial = self.base_trial
        with no_refresh(trial):  # a step already read: no listing
            state = trial.has_passed_step(step)
        while state == StepState.NOT_YET_AVAILABLE:
            now = self._observe()
            with no_refresh(trial):
                state = trial.has_passed_step(step)
            if state != StepState.NOT_YET_AVAILABLE:
                break  # available, or never will be: the base class evaluates or raises
            idle = now - self.last_progress  # type: ignore[operator]  # set by _observe
            if idle > self.threshold:
                self._fire(idle)
            self.sleep(min(self.poll_interval, self.threshold - idle + 1e-3))
        super().invoke(step)

    def _fire(self, idle: float) -> None:
        """Stop training if asked, run the actions (through the base class), raise; evaluation ends."""
        self._idle = idle
        step = self.last_seen_step
        self._found(step)
        finding: Any = self.last_finding
        if step >= 0:
            try:
                finding = finding.placed(self.base_trial)
            except (TypeError, ValueError):  # a step whose mode step the trial does not know yet
                pass
        self.logger.warning("%s: %s", self.rule_name, finding.text())
        self.last_progress = self.clock()  # if evaluation goes on, the next fire is a threshold later
        if self.stop_training_on_fire:
            self._stop_training(finding)
        with no_refresh(self.base_trial):
            complete = step >= 0 and self.base_trial.has_passed_step(step) == StepState.AVAILABLE
        if complete:
            self._stalled = True
            try:
                super().invoke(step)  # the base class runs the rule's actions and raises
            except RuleEvaluationConditionMet as exc:
                exc.end_of_rule = True
                raise
            finally:
                self._stalled = False
        raise RuleEvaluationConditionMet(self.rule_name, step, end_of_rule=True, finding=finding)

    def _found(self, step: int) -> bool:
        """The finding: the last step seen, the seconds without a new one against ``threshold``."""
        last = f"last step seen {step}" if step >= 0 else "no step seen"
        return self.found(
            step,
            f"no new step for {show_value(round(self._idle, 1))} s, more than threshold "
            f"{show_value(self.threshold)} s ({last})",
            values=[self._idle],
            condition=f"seconds without a new step {show_value(round(self._idle, 1))} > threshold "
            f"{show_value(self.threshold)}",
            idle_seconds=round(self._idle, 3),
        )

    def _stop_training(self, finding: Any) -> None:
        """The StopTraining action's own code (rules/actions.py, rules/aws_actions.py): SageMaker's
        StopTrainingJob with a job prefix, else the local stop request."""
        self._stopper.invoke(Firing(self.rule_name, self.last_seen_step, finding.text(), self.base_trial, finding))

    def invoke_at_step(self, step: int) -> bool:
        self.last_seen_step = max(self.last_seen_step, step)
        return self._found(step) if self._stalled else False
