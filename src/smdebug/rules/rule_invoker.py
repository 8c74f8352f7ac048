"""``invoke_rule``: evaluate a rule at every global step from start_step until end_step (exclusive)."""

from __future__ import annotations

import logging

from smdebug.exceptions import (
    NoMoreData,
    RuleEvaluationConditionMet,
    StepUnavailable,
    TensorUnavailable,
    TensorUnavailableForStep,
)

__all__ = ["invoke_rule"]

logger = logging.getLogger("smdebug")


def invoke_rule(rule_obj, start_step=0, end_step=None, raise_eval_cond=False) -> None:
    """Run the rule step by step; with end_step None, until the job ends (NoMoreData).

    Steps where a tensor or the step itself is unavailable are skipped. When the condition is
    met, RuleEvaluationConditionMet is raised if ``raise_eval_cond``, else logged.
    """
    step = 0 if start_step is None else start_step
    name = type(rule_obj).__name__
    logger.info("Started execution of rule %s at step %s", name, step)
    while end_step is None or step < end_step:
        try:
            rule_obj.invoke(step)
        except (TensorUnavailableForStep, StepUnavailable, TensorUnavailable) as exc:
            logger.debug("rule %s, step %s: %s", name, step, exc)
        except RuleEvaluationConditionMet as exc:
            if raise_eval_cond:
                raise
            logger.info("%s", exc)
            if exc.end_of_rule:
                break
        except NoMoreData as exc:
            logger.info("rule %s: %s", name, exc)
            break
        step += 1
    logger.info("Ended execution of rule %s at step %s", name, step - 1)
