"""``invoke_rule``: evaluate a rule at every global step from start_step until end_step (exclusive).

On a trial that a job is still writing, each step is evaluated once, as soon as it is complete
(every worker wrote it), and the run ends when the job ends. Steps that were not saved are
skipped in one jump to the next saved step rather than one wait per global step.
"""

from __future__ import annotations

import logging
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from smdebug.core.tensor import StepState
from smdebug.exceptions import (
    NoMoreData,
    NoMoreProfilerData,
    RuleEvaluationConditionMet,
    StepUnavailable,
    TensorUnavailable,
    TensorUnavailableForStep,
)

if TYPE_CHECKING:
    from smdebug.rules.rule import Rule

__all__ = ["invoke_rule", "RuleRun"]

logger = logging.getLogger("smdebug")


@dataclass
class RuleRun:
    """What ``invoke_rule`` did: steps evaluated, steps where the rule fired, and why it ended.

    ``ended`` is ``"end_step"``, ``"no_more_data"`` (the job ended), ``"end_of_rule"`` (the rule
    said so when it fired) or ``"condition_met"`` (raised, with ``raise_eval_cond``).
    ``tensors_evaluated``: how many tensor values the rule judged in this run (a built-in rule
    counts them; None for a rule that does not, such as a custom Rule or StalledTrainingRule).
    0 means the rule looked at nothing: its selection matched no saved tensor (a warning says so).
    """

    rule_name: str
    start_step: int
    next_step: int = 0
    evaluated: list = field(default_factory=list)
    fired: list = field(default_factory=list)
    skipped: int = 0
    ended: str = ""
    tensors_evaluated: int | None = None

    @property
    def looked_at_nothing(self) -> bool:
        """True when the rule counts what it judges and judged no tensor in this run."""
        return self.tensors_evaluated == 0


def _next_saved_step(trial: Any, step: int) -> int:
    """The first step after ``step`` that may hold data, when every step in between never will."""
    try:
        steps = trial.steps(show_incomplete_steps=True)
    except Exception:  # a trial-like object without it: no jump
        return step + 1
    i = bisect_right(steps, step)
    if i == len(steps) or steps[i] == step + 1:
        return step + 1
    nxt = steps[i]
    if trial.has_passed_step(nxt - 1) == StepState.UNAVAILABLE:
        return nxt
    return step + 1


def invoke_rule(
    rule_obj: Rule, start_step: int = 0, end_step: int | None = None, raise_eval_cond: bool = False
) -> RuleRun:
    """Run the rule step by step; with end_step None, until the job ends (NoMoreData).

    Steps where a tensor or the step itself is unavailable are skipped. When the condition is
    met the rule's actions have run; RuleEvaluationConditionMet is then raised if
    ``raise_eval_cond``, else logged and evaluation goes on (it stops if the exception says
    ``end_of_rule``). Returns a :class:`RuleRun` (smdebug 1.0.34 returned None and let
    NoMoreData escape; here the end of the job ends the run normally).
    """
    step = 0 if start_step is None else int(start_step)
    name = type(rule_obj).__name__
    run = RuleRun(name, step)
    counted_before = getattr(rule_obj, "tensors_evaluated", None)
    logger.info("Started execution of rule %s at step %s", name, step)
    while end_step is None or step < end_step:
        nxt = step + 1
        try:
            rule_obj.invoke(step)
            run.evaluated.append(step)
        except StepUnavailable as exc:
            logger.debug("rule %s, step %s: %s", name, step, exc)
            run.skipped += 1
            trial = getattr(rule_obj, "base_trial", None)
            if exc.step == step and trial is not None:
                nxt = _next_saved_step(trial, step)
        except (TensorUnavailableForStep, TensorUnavailable) as exc:
            logger.debug("rule %s, step %s: %s", name, step, exc)
            run.skipped += 1
        except RuleEvaluationConditionMet as exc:
            run.evaluated.append(step)
            run.fired.append(step)
            if raise_eval_cond:
                run.ended = "condition_met"
                run.next_step = step + 1
                raise
            logger.info("%s", exc)
            if exc.end_of_rule:
                run.ended = "end_of_rule"
                step = nxt
                break
        except (NoMoreData, NoMoreProfilerData) as exc:
            logger.info("rule %s: %s", name, exc)
            run.ended = "no_more_data"
            break
        step = nxt
    run.next_step = step
    run.ended = run.ended or "end_step"
    _count(rule_obj, run, counted_before)
    logger.info("Ended execution of rule %s at end_step %s", name, step - 1)
    return run


def _count(rule_obj: Any, run: RuleRun, before: int | None) -> None:
    """Set ``run.tensors_evaluated``; warn once per rule object that judged no tensor at all."""
    now = getattr(rule_obj, "tensors_evaluated", None)
    if now is None or before is None:
        return
    run.tensors_evaluated = now - before
    if now == 0 and not getattr(rule_obj, "_warned_nothing_evaluated", False):
        rule_obj._warned_nothing_evaluated = True
        logger.warning("%s", nothing_evaluated_message(rule_obj, len(run.evaluated)))


def nothing_evaluated_message(rule_obj: Rule, steps_evaluated: int) -> str:
    """The line saying that a rule judged no tensor, and why as far as it is known."""
    name = type(rule_obj).__name__
    if steps_evaluated == 0:
        return f"{name}: evaluated no tensor (no step was evaluated)"
    reason = getattr(rule_obj, "unjudged_reason", None)
    if reason:
        return f"{name}: evaluated no tensor in {steps_evaluated} steps: {reason}; its 'no issue' means nothing"
    selection = rule_obj.selection() if hasattr(rule_obj, "selection") else "?"
    return (
        f"{name}: evaluated no tensor in {steps_evaluated} steps "
        f"(selection matched nothing it could judge: {selection}); its 'no issue' means nothing"
    )
