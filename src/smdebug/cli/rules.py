"""``smdebug rules`` (a finished trial) and ``smdebug watch`` (a running job): built-in rules over steps.

Several rules run in one pass over the steps. Exit status: 1 when any rule fired; else 2 when a
rule evaluated no tensor at all (its selection matched nothing, so its "no issue" means nothing:
a line says so), as on bad input (unknown rule or parameter, bad value, not a trial); 0 when every
rule looked at data and none fired. A firing wins over a rule that looked at nothing (exit 1;
the summary still names that rule). A rule that writes a report (CreateXgboostReport) prints where.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from smdebug.cli.common import (
    CliError,
    Reminder,
    add_json_argument,
    add_step_range,
    add_trial_argument,
    check_at_least,
    check_step_range,
    open_trial,
    poll_interval,
    progress,
    say,
)

if TYPE_CHECKING:
    from smdebug.rules.finding import Finding


class _RuleAction(argparse.Action):
    def __call__(self, parser, namespace, value, option_string=None):
        specs = getattr(namespace, self.dest, None) or []
        specs.append([value, {}])
        setattr(namespace, self.dest, specs)


class _ParamAction(argparse.Action):
    def __call__(self, parser, namespace, value, option_string=None):
        specs = getattr(namespace, "rule", None)
        if not specs:
            parser.error("--param comes after the --rule it configures")
        key, sep, val = value.partition("=")
        if not sep or not key.strip():
            parser.error(f"--param {value!r}: expected NAME=VALUE")
        rule, params = specs[-1]
        if key.strip() in params:
            parser.error(
                f"--param {key.strip()} given twice for --rule {rule} "
                f"({params[key.strip()]!r}, then {val!r}): give it once"
            )
        params[key.strip()] = val


_RULE_LIST = "the built-in rules"  # the epilog, replaced by the registry's listing when help is shown


def rule_listing() -> str:
    """The registered built-in rules with their parameters and defaults (``smdebug rules --help``)."""
    from smdebug.rules.builtin import rule_classes

    lines = ["built-in rules (--rule NAME, then --param NAME=VALUE for the parameters below):"]
    for name, cls in rule_classes().items():  # the profiler rules are `smdebug profile rules`'
        lines.append(f"  {name}: {cls.summary()}")
        params = ", ".join(f"{p.name}={p.default}" if p.default is not None else p.name for p in cls.params)
        lines.append(f"      parameters: {params or 'none'}")
    return "\n".join(lines)


class _RuleListFormatter(argparse.RawDescriptionHelpFormatter):
    """Help whose epilog lists the registered rules; built only when help is shown (imports the rules)."""

    def add_text(self, text):
        super().add_text(rule_listing() if text is _RULE_LIST else text)


def _rule_parser(sub: argparse._SubParsersAction, name: str, help: str) -> argparse.ArgumentParser:
    """The parser of ``smdebug rules`` or ``smdebug watch``, with the options they share."""
    p = sub.add_parser(name, help=help, epilog=_RULE_LIST, formatter_class=_RuleListFormatter)
    add_trial_argument(p)
    p.add_argument(
        "--rule",
        action=_RuleAction,
        required=True,
        metavar="NAME",
        help="a built-in rule (listed below); repeat for several",
    )
    p.add_argument(
        "--param",
        action=_ParamAction,
        metavar="NAME=VALUE",
        help="a parameter of the --rule before it (strings as in SageMaker's RuleParameters)",
    )
    add_step_range(p, "evaluate")
    p.add_argument(
        "--all-firings",
        action="store_true",
        help="keep evaluating a rule after it fired (default: a rule stops at its first firing, as on SageMaker)",
    )
    add_json_argument(p, "print one JSON object per firing, then a summary")
    return p


def add(sub) -> None:
    p = _rule_parser(
        sub, "rules", "run built-in rules over a trial; exit 1 when any fired, 2 when one evaluated no tensor"
    )
    p.set_defaults(func=run_rules)
    w = _rule_parser(sub, "watch", "follow a running job and run built-in rules on each new step")
    w.add_argument(
        "--stop-training", action="store_true", help="when a rule fires, ask the job to stop (the StopTraining action)"
    )
    w.add_argument(
        "--wait",
        type=float,
        default=600.0,
        metavar="SECONDS",
        help="how long to wait for a job that has not started writing (default 600)",
    )
    w.set_defaults(func=run_watch)


@dataclass
class Firing:
    rule: str
    step: int
    mode: str
    mode_step: int
    message: str
    finding: Finding | None = None  # when the rule says what it found

    def to_json(self) -> dict:
        """``{"event": "fired", ...}``: the finding's stable fields (smdebug.rules.finding.FINDING_FIELDS)."""
        out = {
            "event": "fired",
            "rule": self.rule,
            "step": self.step,
            "mode": self.mode,
            "mode_step": self.mode_step,
            "worker": None,
            "tensors": [],
            "values": [],
            "condition": "",
            "message": self.message,
        }
        if self.finding is not None:
            out.update(self.finding.to_json())
            out.update(rule=self.rule, step=self.step, mode=self.mode, mode_step=self.mode_step)
        return out

    def what(self) -> str:
        """The finding's sentence (the tensor, its value, the condition, the worker), else the message."""
        f = self.finding
        if f is None:
            return self.message
        return f.message + (f" ({f.worker})" if f.worker else "")


@dataclass
class RuleRun:
    """One rule over the steps: its firings and how many steps it evaluated."""

    name: str
    rule: object
    firings: list = field(default_factory=list)
    evaluated: int = 0
    done: bool = False


def build_rules(trial, specs, action_str: str = "") -> list:
    """RuleRun objects for ``[[name, {param: value}], ...]``; bad input -> CliError naming it."""
    from smdebug.exceptions import RuleConfigurationError
    from smdebug.rules.config import find_rule_class

    runs = []
    for name, params in specs:
        try:
            cls = find_rule_class(name)
            if getattr(cls, "profiler_rule", False):
                raise CliError(
                    f"--rule {name}: a profiler rule, judged over the job's profiler data: "
                    f"smdebug profile rules PROFILE --rule {name}"
                )
            rule = cls(trial, action_str=action_str, **params)
        except RuleConfigurationError as exc:
            raise CliError(str(exc)) from None
        runs.append(RuleRun(name=name, rule=rule))
    return runs


class _NeedsTheTrial(Exception):
    pass


class _TrialNotOpenYet:
    """Stands for the trial while ``watch`` checks its rules before the job has started."""

    def __init__(self, path: str):
        self.path = self.trial_dir = path
        self.name = path.rstrip("/").rsplit("/", 1)[-1]

    def __getattr__(self, name):
        raise _NeedsTheTrial(name)


def check_rules(path: str, specs, action_str: str = "") -> None:
    """Build the rules without the trial (names, parameters, action): a CliError for bad input
    before ``watch`` waits for a job. A rule whose constructor reads the trial is checked when
    the trial opens; what the rules log on construction is said then, once."""
    import logging

    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        for spec in specs:
            try:
                build_rules(_TrialNotOpenYet(path), [spec], action_str)
            except _NeedsTheTrial:
                continue
    finally:
        logging.disable(previous)


def evaluate_step(runs, trial, step, all_firings=False) -> list:
    """Invoke every active rule at ``step``; the firings it produced."""
    from smdebug.exceptions import (
        RuleEvaluationConditionMet,
        StepUnavailable,
        TensorUnavailable,
        TensorUnavailableForStep,
    )

    fired = []
    for run in runs:
        if run.done:
            continue
        try:
            run.rule.invoke(step)
        except (StepUnavailable, TensorUnavailable, TensorUnavailableForStep):
            continue
        except RuleEvaluationConditionMet as exc:
            mode, mode_step = trial.mode(step), trial.mode_step(step)
            finding = getattr(exc, "finding", None)
            detail = (
                ""
                if finding is not None
                else (getattr(run.rule, "reason", None) or getattr(run.rule, "last_reason", None) or "")
            )
            message = str(exc) + (f": {detail}" if detail else "")
            f = Firing(run.name, step, getattr(mode, "name", str(mode)), mode_step, message, finding)
            run.firings.append(f)
            fired.append(f)
            if not all_firings or exc.end_of_rule:
                run.done = True
        finally:
            run.evaluated += 1
    return fired


def _print_firing(f: Firing, as_json: bool) -> None:
    if as_json:
        print(json.dumps(f.to_json()), flush=True)
    else:
        print(f"FIRED  {f.rule:<26} step {f.step} ({f.mode} step {f.mode_step})  {f.what()}", flush=True)


def _summary(runs, as_json: bool) -> int:
    """One line (or JSON object) per rule; the exit status (module docstring: 1, 2 or 0)."""
    from smdebug.rules.rule_invoker import nothing_evaluated_message

    any_fired = any(r.firings for r in runs)
    blind = False
    for r in runs:
        tensors = getattr(r.rule, "tensors_evaluated", None)
        nothing = tensors == 0 and not r.firings
        blind = blind or nothing
        report = getattr(r.rule, "report_path", None) if getattr(r.rule, "reports_written", 0) else None
        if as_json:
            first = r.firings[0].to_json() if r.firings else None
            print(
                json.dumps(
                    {
                        "event": "summary",
                        "rule": r.name,
                        "fired": bool(r.firings),
                        "steps": [f.step for f in r.firings],
                        "first": first,
                        "evaluated": r.evaluated,
                        "tensors_evaluated": tensors,
                        "evaluated_nothing": nothing,
                        "reason": nothing_evaluated_message(r.rule, r.evaluated) if nothing else None,
                        **({"report": report} if report else {}),
                    }
                )
            )
            continue
        if r.firings:
            steps = ", ".join(str(f.step) for f in r.firings)
            print(f"{r.name}: fired at step {steps}: {r.firings[0].what()}")
        elif nothing:
            print(nothing_evaluated_message(r.rule, r.evaluated))
        elif report:  # a rule that writes a report (CreateXgboostReport) never fires: "no issue" says nothing
            print(f"{r.name}: report written to {report} ({r.evaluated} step evaluations, {tensors} tensor values)")
        else:
            counted = f", {tensors} tensor values" if tensors is not None else ""
            print(f"{r.name}: no issue found ({r.evaluated} step evaluations{counted})")
        if report and (r.firings or nothing):
            print(f"{r.name}: report written to {report}")
    return 1 if any_fired else 2 if blind else 0


def run_rules(args) -> int:
    check_step_range(args.start_step, args.end_step)
    trial = open_trial(args.trial)
    runs = build_rules(trial, args.rule)
    steps = [s for s in trial.steps() if s >= args.start_step and (args.end_step is None or s < args.end_step)]
    for step in progress(steps, len(steps), "steps"):
        for f in evaluate_step(runs, trial, step, args.all_firings):
            _print_firing(f, args.json)
        if all(r.done for r in runs):
            break
    return _summary(runs, args.json)


def follow_steps(trial, start: int, end: int | None, *, clock=None, sleep=None, speak=None, quiet_for: float = 60.0):
    """Complete global steps >= start as the job writes them; ends when training has ended.

    When no step comes for ``quiet_for`` seconds, says on stderr (then sparsely) which step it
    waits for and for how long: a job that died without ``training_job_end.ts`` is otherwise
    waited for in silence. ``clock``, ``sleep``, ``speak`` are injectable for tests.
    """
    import time

    from smdebug.exceptions import NoMoreData, StepUnavailable

    clock, sleep, speak = clock or time.monotonic, sleep or time.sleep, speak or say
    nxt = start
    remind = None
    while end is None or nxt < end:
        ready = [s for s in trial.steps() if s >= nxt and (end is None or s < end)]
        if ready:
            remind = None
            yield from ready
            nxt = ready[-1] + 1
            continue
        try:
            trial.wait_for_steps([nxt], timeout=0)
        except NoMoreData:
            return
        except StepUnavailable:
            nxt += 1  # skipped by the save schedule; the next listing finds the later steps
        except TimeoutError:
            remind = remind or Reminder(clock, speak, first=quiet_for)
            last = trial.last_complete_step

            def message(waited, step=nxt, last=last):
                seen = f"the last complete step is {last}" if last >= 0 else "no step is complete yet"
                return (
                    f"still waiting for step {step} after {waited:.0f} s ({seen}; no training_job_end.ts: "
                    "if the job has stopped, Ctrl-C ends the watch)"
                )

            remind(message)
            sleep(poll_interval())


def run_watch(args) -> int:
    check_step_range(args.start_step, args.end_step)
    check_at_least("--wait", args.wait, 0)
    action = json.dumps({"name": "StopTraining"}) if args.stop_training else ""
    check_rules(args.trial, args.rule, action_str=action)
    trial = open_trial(args.trial, wait=args.wait)
    runs = build_rules(trial, args.rule, action_str=action)
    print(f"watching {trial.path} with {', '.join(r.name for r in runs)}", file=sys.stderr, flush=True)
    for step in follow_steps(trial, args.start_step, args.end_step):
        for f in evaluate_step(runs, trial, step, args.all_firings):
            _print_firing(f, args.json)
            if args.stop_training and not args.json:
                print(f"asked the job to stop (rule {f.rule}, step {f.step})", flush=True)
        if all(r.done for r in runs):
            break
    return _summary(runs, args.json)
