"""A rule job: one rule evaluated beside training on the live trial, with SageMaker's statuses.

``InProgress`` -> ``IssuesFound`` (the first firing; StatusDetails is the RuleEvaluationConditionMet
text) | ``NoIssuesFound`` (training ended, every step evaluated, tensors judged) | ``Error``
("ClientError: ..." with the traceback, cut to 1024 characters; also a rule that evaluated no step,
or no tensor: its "no issue" would mean nothing) | ``Stopping`` -> ``Stopped`` (the launcher was
interrupted; also when the job saved nothing before it). The first final status is the job's: once
the launcher gives up on a job (:meth:`RuleJob.give_up`), what its thread finds later is dropped.
The rule's report goes to ``rule-output/<RuleConfigurationName>/report.json``.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from smdebug.exceptions import MissingCollectionFiles, RuleConfigurationError, RuleEvaluationConditionMet
from smdebug.launch.spec import LaunchConfigError, RuleSpec
from smdebug.launch.status import iso_time

if TYPE_CHECKING:
    from smdebug.rules.rule import Rule
    from smdebug.rules.rule_invoker import RuleRun
    from smdebug.trials.trial import Trial

__all__ = ["RuleJob", "load_rule_class", "check_rule", "STATUS_DETAILS_MAX"]

logger = logging.getLogger("smdebug")

STATUS_DETAILS_MAX = 1024
FINAL_STATUSES = frozenset({"IssuesFound", "NoIssuesFound", "Error", "Stopped"})
_RANGE_KEYS = ("start_step", "end_step")
_NOT_RULE_PARAMS = {"source_s3_uri", "rule_to_invoke", "action_json", *_RANGE_KEYS}


def load_rule_class(spec: RuleSpec) -> type[Rule]:
    """The Rule subclass ``rule_to_invoke`` names: from ``source_s3_uri`` for a custom rule, else built-in."""
    from smdebug.rules.config import load_custom_rule

    where = spec.where or f"rule {spec.name}"
    if spec.source is None:
        from smdebug.rules.builtin import get_rule_class

        try:
            return get_rule_class(spec.rule_to_invoke.strip())
        except RuleConfigurationError as exc:
            raise LaunchConfigError(f"{where}: {exc}") from None
    try:  # the loader create_rule uses: a rule file that raises or exits at import is refused
        return load_custom_rule(spec.source, spec.rule_to_invoke.strip())
    except RuleConfigurationError as exc:
        raise LaunchConfigError(f"{where}: {exc}") from None


def _int_param(spec: RuleSpec, key: str) -> int | None:
    value = spec.parameters.get(key)
    if value is None or not value.strip() or value.strip().lower() in ("none", "null"):
        return None
    try:
        return int(value)
    except ValueError:
        raise LaunchConfigError(f"{spec.where or spec.name}: {key}={value!r} is not an integer") from None


def check_rule(spec: RuleSpec) -> type[Rule]:
    """Everything about a rule that can be checked before the job starts; returns its class."""
    from smdebug.rules.actions import parse_actions
    from smdebug.rules.builtin.base import BuiltinRule
    from smdebug.rules.config import unknown_parameters

    cls = load_rule_class(spec)
    where = spec.where or f"rule {spec.name}"
    for key in _RANGE_KEYS:
        _int_param(spec, key)
    try:
        parse_actions(spec.parameters.get("action_json", ""), spec.name)
    except RuleConfigurationError as exc:
        raise LaunchConfigError(f"{where}: {exc}") from None
    unknown = unknown_parameters(cls, spec.parameters)
    if unknown:
        key, near = next(iter(unknown.items()))
        hint = f" (did you mean {' or '.join(near)}?)" if near else ""
        accepted = ", ".join(sorted(p.name for p in cls.params)) if issubclass(cls, BuiltinRule) else ""
        raise LaunchConfigError(
            f"{where}: rule {spec.name} has no parameter {key!r}{hint}"
            + (f"; its parameters: {accepted}" if accepted else "")
        )
    if issubclass(cls, BuiltinRule):
        for p in cls.params:
            if p.name in spec.parameters:
                try:
                    p.parse(spec.parameters[p.name])
                except ValueError as exc:
                    raise LaunchConfigError(f"{where}: rule {spec.name}, parameter {p.name}: {exc}") from None
    return cls


class RuleJob:
    """One rule on the trial at ``out_dir``, in a thread; ``on_change(job)`` hears every status change."""

    kind = "debugger"  # or "profiler" (smdebug.launch.profiler_jobs)
    label = "rule job"  # in the log

    def __init__(
        self,
        spec: RuleSpec,
        out_dir: str,
        output_dir: str,
        run_name: str,
        *,
        on_change: Callable[[RuleJob], object] | None = None,
        on_stop: Callable[[RuleJob, int], object] | None = None,
        poll: float = 0.02,
        wait_s: float = 1e9,
        on_judged: Callable[[RuleJob], object] | None = None,
    ) -> None:
        self.spec = spec
        self.name = spec.name
        self.out_dir = out_dir
        self.output_dir = output_dir
        self.arn = f"local:rule-job/{run_name}-{spec.name.lower()}-{os.urandom(4).hex()}"
        self.status = "InProgress"
        self.details = ""
        self.modified = time.time()
        self.fired_step: int | None = None
        self.finding: dict | None = None  # Finding.to_json() of the firing, when the rule said what it found
        self.evaluated: int | None = None
        self._on_change = on_change
        self._on_stop = on_stop
        self._on_judged = on_judged  # hears each global step the rule has judged (or passed)
        self.judged_step = -1
        self._poll = poll
        self._wait_s = wait_s
        self._cls = self._check()
        self._stopping = False
        self._end_lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=f"smdebug-rule-{spec.name}", daemon=True)

    def _check(self) -> type[Rule]:
        return check_rule(self.spec)

    def where_fired(self, step: int) -> str:
        """Where the rule fired, for messages: a step here, a time window for a profiler rule."""
        return f"step {step}"

    def report_extra(self, rule: Rule) -> dict[str, Any]:
        """Members this kind of job adds to its report.json."""
        return {}

    def start(self) -> None:
        self._set("InProgress", "")
        self._thread.start()

    def join(self, timeout: float | None = None) -> bool:
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _stop_training_if_asked(self, step: int) -> None:
        """The rule fired: its StopTraining action (one without ``training_job_prefix``, which
        stops a SageMaker job instead) asks the launcher to stop this job."""
        from smdebug.rules.actions import parse_actions

        kinds = {
            s.kind
            for s in parse_actions(self.spec.parameters.get("action_json", ""), self.name)
            if "training_job_prefix" not in s.params
        }
        if "stoptraining" in kinds and self._on_stop is not None:
            self._on_stop(self, step)

    @property
    def ended(self) -> bool:
        return self.status in FINAL_STATUSES

    def stop(self) -> None:
        """The launcher was interrupted: the job ends Stopped once the trial's end is marked."""
        with self._end_lock:
            if self.status == "InProgress":
                self._stopping = True
                self._set("Stopping", "")

    def give_up(self, status: str, details: str) -> None:
        """The launcher stops waiting for the job: ``status`` is final (its report too), unless the
        job ended first; what its thread finds later is dropped."""
        self._end(status, details)

    def describe(self) -> dict[str, Any]:
        """A DebugRuleEvaluationStatus; ``Finding`` (ours) names what a firing found."""
        finding = {"Finding": self.finding} if self.finding is not None else {}
        return {
            "RuleConfigurationName": self.name,
            "RuleEvaluationJobArn": self.arn,
            "RuleEvaluationStatus": self.status,
            "StatusDetails": self.details,
            "LastModifiedTime": iso_time(self.modified),
            **finding,
        }

    def _set(self, status: str, details: str) -> None:
        self.status, self.details, self.modified = status, details[:STATUS_DETAILS_MAX], time.time()
        if self._on_change is not None:
            self._on_change(self)

    def _open_trial(self) -> Trial:
        from smdebug.trials import create_trial

        return create_trial(
            self.out_dir, name="base_trial", collection_wait_timeout=self._wait_s, poll_interval=self._poll
        )

    def _run(self) -> None:
        from smdebug.rules import create_rule, invoke_rule

        run = None
        try:
            try:
                trial = self._open_trial()
            except MissingCollectionFiles:
                if self._stopping:  # interrupted before the job saved anything: no fault of the hook
                    self._end("Stopped", "The launcher was interrupted before the training job saved any data.")
                    return
                self._end(
                    "Error",
                    "ClientError: No debugging data was saved by the training job. Check that "
                    "the debugger hook was attached (smdebug run prints one line when it attaches). "
                    f"Training ended and {self.out_dir} holds no collection files.",
                )
                return
            params = {k: v for k, v in self.spec.parameters.items() if k not in _RANGE_KEYS}
            params.pop("source_s3_uri", None)
            rule = create_rule(params, trial, rule_classes={self.spec.rule_to_invoke.strip(): self._cls})
            self._follow_judged(rule)
            start = _int_param(self.spec, "start_step") or 0
            run = invoke_rule(rule, start_step=start, end_step=_int_param(self.spec, "end_step"), raise_eval_cond=True)
        except RuleEvaluationConditionMet as exc:
            self.fired_step = exc.step
            self.finding = exc.finding.to_json() if getattr(exc, "finding", None) is not None else None
            self._end("IssuesFound", f"RuleEvaluationConditionMet: {exc}\n", rule=locals().get("rule"))
            self._stop_training_if_asked(exc.step)
            return
        except Exception as exc:
            self._failed(exc)
            return
        if self._stopping:
            self._end("Stopped", f"The launcher was interrupted after {len(run.evaluated)} steps.", run=run)
        elif not run.evaluated:
            self._end(
                "Error",
                f"ClientError: the rule evaluated no step ({run.skipped} skipped: the tensors "
                "it reads were not saved, or no step was saved). Check the collections it needs.",
                run=run,
            )
        elif run.looked_at_nothing:  # steps evaluated, but no tensor judged: "no issue" would mean nothing
            from smdebug.rules.rule_invoker import nothing_evaluated_message

            self._end(
                "Error",
                f"ClientError: {nothing_evaluated_message(rule, len(run.evaluated))}. Check the "
                "collections and parameters it needs.",
                run=run,
            )
        else:
            steps = f"{run.evaluated[0]}..{run.evaluated[-1]}"
            self._end(
                "NoIssuesFound", f"Evaluated {len(run.evaluated)} steps ({steps}); {run.skipped} skipped.", run=run
            )

    def _failed(self, exc: Exception, rule: Rule | None = None) -> None:
        """The job's thread raised ``exc`` (being handled): ``Error``, with the traceback; logged too."""
        tb = traceback.format_exc()
        logger.error("smdebug: %s %s failed: %s", self.label, self.name, exc)
        self._end("Error", f"ClientError: {type(exc).__name__}: {exc}\n{tb}", rule=rule)

    def _follow_judged(self, rule: Rule) -> None:
        """``on_judged(job)`` after each step the rule was invoked at (judged, skipped or the end):
        the hook holding training after a non-finite step waits on it (core.engine.nonfinite)."""
        on_judged = self._on_judged
        if on_judged is None:
            return
        invoke = rule.invoke

        def invoke_and_tell(step: int) -> None:
            try:
                invoke(step)
            finally:
                self.judged_step = max(self.judged_step, step)
                on_judged(self)

        rule.invoke = invoke_and_tell  # type: ignore[method-assign]  # this rule object's invoke, wrapped

    def _end(self, status: str, details: str, run: RuleRun | None = None, rule: Rule | None = None) -> None:
        with self._end_lock:  # the first end is the job's (the launcher may have given up on it)
            if not self.ended:
                self._write_end(status, details, run, rule)

    def _write_end(self, status: str, details: str, run: RuleRun | None, rule: Rule | None) -> None:
        if run is not None:
            self.evaluated = len(run.evaluated)
        report: dict[str, object] = {
            "RuleConfigurationName": self.name,
            "RuleEvaluationStatus": status,
            "RuleTriggered": int(status == "IssuesFound"),
            "FiredAtStep": self.fired_step,
            "StepsEvaluated": self.evaluated,
            "RuleParameters": self.spec.parameters,
            "StatusDetails": details[:STATUS_DETAILS_MAX],
        }
        if self.finding is not None:
            report["Finding"] = self.finding
        if rule is not None and isinstance(getattr(rule, "report", None), dict):
            report["Report"] = {k: v for k, v in rule.report.items() if k != "RuleParameters"}
        if rule is not None:
            report.update(self.report_extra(rule))
        try:
            os.makedirs(self.output_dir, exist_ok=True)
            with open(os.path.join(self.output_dir, "report.json"), "w") as f:
                json.dump(report, f, indent=2, default=str)
        except OSError as exc:
            logger.error("smdebug: rule job %s could not write its report to %s: %s", self.name, self.output_dir, exc)
        self._set(status, details)
