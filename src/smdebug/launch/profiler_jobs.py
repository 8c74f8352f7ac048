"""Profiler rules as rule jobs beside the training: naming, checking, and the job itself.

A profiler rule is asked for as SageMaker users ask for one: a CreateTrainingJob's
``ProfilerRuleConfigurations``, smdebug-rulesconfig's ``profiler_rules`` objects
(``rule_configs.ProfilerReport(CPUBottleneck_threshold=90)``: ``.rule_name`` and ``.rule_parameters``,
or the same as a dict), the SDK's ``ProfilerRule.sagemaker(...)`` (``to_profiler_rule_config_dict()``),
or ``--rule NAME[:K=V...]`` where NAME is the rule's class name (``ProfilerReport``, ``StepOutlier``)
or its snake_case spelling (``profiler_report``, ``step_outlier``, ``cpu_bottleneck``): ``--rule``
looks NAME up among the debugger rules first, then among the profiler rules (no name is both).

Each rule job opens the profiler trial on the job's profiler folder and runs the rule window by
window (:mod:`smdebug.rules.profiler.base`) until the job's end markers appear, judging the part of
a window already written every 0.25 s (``live_step_us``) rather than waiting for the window's end;
when a rule reads framework events, the job's hooks finish a timeline file each second
(:func:`live_rotation`). Its status follows
the rule's verdict: ``IssuesFound`` when it fired, ``NoIssuesFound`` after a "no issue" verdict,
and ``Error`` ("evaluated nothing") when the rule judged nothing (no data, no GPU data, or not
enough data for it to judge). Its output goes to ``rule-output/<RuleConfigurationName>/``:
``report.json`` and, for ProfilerReport, ``profiler-output/profiler-reports/<Rule>.json`` and
``profiler-output/profiler-report.html`` (SageMaker's layout). Its StopTraining action writes the
stop request into the debugger trial (``stop_out_dir``), where the launched job's hook looks.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from smdebug.exceptions import RuleConfigurationError, RuleEvaluationConditionMet
from smdebug.launch.rule_job import RuleJob
from smdebug.launch.spec import LaunchConfigError, RuleSpec, rule_spec

if TYPE_CHECKING:
    from smdebug.rules.profiler.base import ProfilerRule
    from smdebug.rules.rule import Rule

__all__ = [
    "profiler_rule_classes",
    "resolve_profiler_rule",
    "profiler_rule_from_flag",
    "profiler_rule_dict",
    "is_profiler_rule_object",
    "check_profiler_rule",
    "ProfilerRuleJob",
    "PROFILER_POLL",
    "live_rotation",
    "training_marked_ended",
]

logger = logging.getLogger("smdebug")

PROFILER_POLL = 0.25  # seconds between looks at a local profiler folder while the job runs (each look may
# parse the growing system-metrics file of the minute again: not every 20 ms)
_OPT_OUT = "opt_out_telemetry"  # smdebug-rulesconfig 1.0.2's ProfilerReport parameter (nothing is sent here)


def profiler_rule_classes() -> dict[str, type[ProfilerRule]]:
    from smdebug.rules.profiler import profiler_rule_classes as classes

    return classes()


def _key(text: str) -> str:
    return text.strip().replace("_", "").replace("-", "").lower()


def resolve_profiler_rule(text: str) -> str | None:
    """The profiler rule's class name for ``StepOutlier``, ``step_outlier`` or ``stepoutlier``; else None."""
    by_key = {_key(n): n for n in profiler_rule_classes()}
    return by_key.get(_key(text))


def profiler_rule_from_flag(name: str, params: dict[str, str], where: str) -> dict[str, Any]:
    """``--rule step_outlier:stddev=5`` -> a ProfilerRuleConfiguration dict."""
    if "rule_to_invoke" in params:
        raise LaunchConfigError(f"{where}: you cannot provide a 'rule_to_invoke' for a built-in rule")
    return {"RuleConfigurationName": name, "RuleParameters": {"rule_to_invoke": name, **params}}


def is_profiler_rule_object(obj: object) -> bool:
    """An SDK ProfilerRule, a smdebug-rulesconfig profiler rule, or its ``rule_name`` dict."""
    if isinstance(obj, dict):
        return "rule_name" in obj and "rule_parameters" in obj
    return callable(getattr(obj, "to_profiler_rule_config_dict", None)) or (
        hasattr(obj, "rule_name") and hasattr(obj, "rule_parameters")
    )


def profiler_rule_dict(obj: Any, where: str) -> dict[str, Any]:
    """The ProfilerRuleConfiguration of an object :func:`is_profiler_rule_object` accepts."""
    to_dict = getattr(obj, "to_profiler_rule_config_dict", None)
    if callable(to_dict):
        doc = to_dict()
        if not isinstance(doc, dict):
            raise LaunchConfigError(f"{where}: to_profiler_rule_config_dict() returned {type(doc).__name__}")
        return {k: v for k, v in doc.items() if v is not None}
    name = obj["rule_name"] if isinstance(obj, dict) else obj.rule_name
    params = obj["rule_parameters"] if isinstance(obj, dict) else obj.rule_parameters
    if not isinstance(params, dict):
        raise LaunchConfigError(f"{where}: rule_parameters of profiler rule {name!r} must be a dict")
    params = {"rule_to_invoke": name, **{k: v for k, v in params.items() if v is not None}}
    return {"RuleConfigurationName": name, "RuleParameters": params}


def _check_params(cls: type[ProfilerRule], params: dict[str, str], where: str) -> None:
    known = {p.name: p for p in cls.params}
    for key, value in params.items():
        if key not in known:
            raise LaunchConfigError(
                f"{where}: {cls.__name__} has no parameter {key!r} (accepted: {', '.join(sorted(known))})"
            )
        try:
            known[key].parse(value)
        except (ValueError, TypeError, OverflowError) as exc:
            raise LaunchConfigError(f"{where}: {cls.__name__}, parameter {key}={value!r}: {exc}") from None


def rule_parameters(spec: RuleSpec) -> dict[str, str]:
    """The parameters passed to the rule class (``rule_to_invoke``, ``action_json`` and ProfilerReport's
    ``opt_out_telemetry`` left out)."""
    params = {k: v for k, v in spec.parameters.items() if k not in ("rule_to_invoke", "action_json")}
    if spec.rule_to_invoke.strip() == "ProfilerReport":
        params.pop(_OPT_OUT, None)
    return params


def check_profiler_rule(spec: RuleSpec) -> type[ProfilerRule]:
    """Everything about a profiler rule that can be checked before the job starts; returns its class."""
    from smdebug.rules.actions import parse_actions

    where = spec.where or f"profiler rule {spec.name}"
    if spec.source is not None:
        raise LaunchConfigError(
            f"{where}: profiler rule {spec.name}: custom profiler rules (source_s3_uri) are not run by smdebug run"
        )
    name = spec.rule_to_invoke.strip()
    cls = profiler_rule_classes().get(name)
    if cls is None:
        raise LaunchConfigError(f"{where}: {name!r} is no profiler rule (one of {', '.join(profiler_rule_classes())})")
    params = rule_parameters(spec)
    if name == "ProfilerReport":
        from smdebug.rules.profiler.report import split_overrides

        try:
            overrides, params = split_overrides(params)
        except RuleConfigurationError as exc:
            raise LaunchConfigError(f"{where}: {exc}") from None
        for sub, kv in overrides.items():
            _check_params(profiler_rule_classes()[sub], kv, f"{where} ({sub}_...)")
    _check_params(cls, params, where)
    try:
        parse_actions(spec.parameters.get("action_json", ""), spec.name)
    except RuleConfigurationError as exc:
        raise LaunchConfigError(f"{where}: {exc}") from None
    return cls


def profiler_rule_spec(value: object, where: str) -> RuleSpec:
    """A ProfilerRuleConfiguration dict, checked."""
    spec = rule_spec(value, where)
    check_profiler_rule(spec)
    return spec


class ProfilerRuleJob(RuleJob):
    """One profiler rule on the profiler trial at ``profiler_dir``; stop requests go to ``stop_out_dir``."""

    kind = "profiler"
    label = "profiler rule job"
    _cls: type[ProfilerRule]

    def __init__(
        self, spec: RuleSpec, profiler_dir: str, stop_out_dir: str, output_dir: str, run_name: str, **kwargs: Any
    ) -> None:
        kwargs.setdefault("poll", PROFILER_POLL)
        self.profiler_dir = profiler_dir
        self.stop_out_dir = stop_out_dir
        self.fired_window: list | None = None
        self.fired_at: float | None = None  # time.time() when the rule fired, before its actions ran
        super().__init__(spec, profiler_dir, output_dir, run_name, **kwargs)

    def _check(self) -> type[ProfilerRule]:
        return check_profiler_rule(self.spec)

    def where_fired(self, step: int) -> str:
        if self.fired_window:
            return f"window {step} ([{self.fired_window[0]}, {self.fired_window[1]}) us)"
        return f"window {step}"

    def _make_rule(self) -> ProfilerRule:
        from smdebug.trials import create_trial

        trial = create_trial(
            self.profiler_dir, profiler=True, output_dir=os.path.join(self.output_dir, "profiler-output")
        )
        from smdebug.rules.profiler.base import LIVE_STEP_US

        kwargs: dict[str, Any] = {
            "stop_out_dir": self.stop_out_dir,
            "live_step_us": LIVE_STEP_US,
        }  # judged as the data comes
        if self.spec.rule_to_invoke.strip() == "ProfilerReport":
            kwargs["output_dir"] = os.path.join(self.output_dir, "profiler-output")
        rule = self._cls(
            trial, action_str=self.spec.parameters.get("action_json", ""), **kwargs, **rule_parameters(self.spec)
        )
        # the driver's wait between two looks at a running job (poll_s is a class default: set on this object)
        rule.poll_s = self._poll  # type: ignore[misc]
        return rule

    def _run(self) -> None:
        from smdebug.rules import invoke_rule

        rule = None
        try:
            rule = self._make_rule()
            run = invoke_rule(rule, raise_eval_cond=True)
        except RuleEvaluationConditionMet as exc:
            self.fired_step = exc.step
            self.fired_at = getattr(rule, "fired_at", None)
            fired = rule.report["Verdict"]["fired_windows"] if rule is not None else []
            self.fired_window = fired[-1] if fired else None
            reason = getattr(rule, "reason", "")
            self._end("IssuesFound", f"RuleEvaluationConditionMet: {exc}{': ' + reason if reason else ''}\n", rule=rule)
            self._stop_training_if_asked(exc.step)
            return
        except Exception as exc:
            self._failed(exc, rule)
            return
        self.evaluated = len(run.evaluated)
        verdict = rule.report["Verdict"]
        if self._stopping:
            self._end("Stopped", f"The launcher was interrupted after {verdict['windows_judged']} windows.", rule=rule)
        elif verdict["status"] == "no issue":
            self._end(
                "NoIssuesFound",
                f"Evaluated {verdict['windows_judged']} windows of "
                f"{rule.scan_interval_us} us: {verdict['message']}{_sub_verdicts(rule)}.",
                rule=rule,
            )
        else:  # "no data", "no GPU data", "not enough data": a "no issue" would mean nothing
            windows = f"{verdict['windows_judged']} windows of {self.profiler_dir}"
            self._end("Error", f"ClientError: the rule evaluated nothing in {windows}: {verdict['message']}", rule=rule)

    def report_extra(self, rule: Rule) -> dict[str, Any]:
        out: dict[str, Any] = {"ProfilerOutput": self.profiler_dir}
        html = getattr(rule, "html_path", None)
        if html:
            out["ProfilerReportHtml"] = html
        if self.fired_window:
            out["FiredWindowUs"] = list(self.fired_window)
        return out


# RotateFileCloseIntervalInSeconds of a job whose live profiler rules read framework events: shorter than
# the writer's flush interval (1 s), so that each flush finishes the file
LIVE_ROTATE_S = "0.5"


def live_rotation(profiler: dict[str, Any], rule_classes: Iterable[type[Rule]]) -> dict[str, Any]:
    """The profilerconfig.json to write: when a live rule reads framework events (StepOutlier,
    Dataloader, MaxInitializationTime, ProfilerReport...) and the user did not set
    ``RotateFileCloseIntervalInSeconds``, the hooks finish a timeline file about every second (1.0.34's
    default, 60 s, keeps the events of a step out of the rule's sight for up to a minute, and a
    short job's for all its life)."""
    params = profiler.get("ProfilingParameters") or {}
    if not any(getattr(c, "reads_framework", False) for c in rule_classes) or any(
        k.lower() == "rotatefilecloseintervalinseconds" for k in params
    ):
        return profiler
    return {**profiler, "ProfilingParameters": {**params, "RotateFileCloseIntervalInSeconds": LIVE_ROTATE_S}}


def _sub_verdicts(rule: Rule) -> str:
    """ProfilerReport's rules' verdicts, for StatusDetails."""
    subs = getattr(rule, "rules", None)
    if not isinstance(subs, dict):
        return ""
    return "; " + ", ".join(f"{n}: {r.report['Verdict']['status']}" for n, r in subs.items())


def write_end_markers(profiler_dir: str) -> None:
    """``{system,framework}/training_job_end.ts`` in the profiler folder, where absent (a job killed
    with ``kill -9`` wrote none): the profiler rule jobs end at them."""
    from smdebug.profiler.locations import END_MARKER
    from smdebug.storage import open_store

    try:
        store = open_store(profiler_dir)
        for sub in ("system", "framework"):
            key = f"{sub}/{END_MARKER}"
            if not store.exists(key):
                store.write(key, b"")
    except Exception as exc:
        logger.error("smdebug: could not mark the end of training in %s: %s", profiler_dir, exc)


def training_marked_ended(out_dir: str, profiler_dir: str | None, before: float) -> bool:
    """Whether the job's hook or profiler marked the end of training (``training_job_end.ts`` in the
    trial, or the profiler's end markers) before the time ``before`` (a rule's firing): it had
    closed, and its process may still be exiting. A marker written later may be the hook's answer to
    the rule's stop request. Local folders only (an object store's markers are not timed here)."""
    from smdebug.core.output.locations import END_OF_JOB
    from smdebug.profiler.locations import END_MARKER
    from smdebug.storage import is_remote

    paths = [os.path.join(out_dir, END_OF_JOB)] if not is_remote(out_dir) else []
    if profiler_dir is not None and not is_remote(profiler_dir):
        paths += [os.path.join(profiler_dir, s, END_MARKER) for s in ("system", "framework")]
    for path in paths:
        try:
            if os.path.getmtime(path) < before:
                return True
        except OSError:
            continue
    return False
