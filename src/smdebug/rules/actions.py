"""Actions a rule takes when its condition is met, from the ``action_str`` JSON of smdebug 1.0.34.

``action_str`` is a JSON object or a list of them; SageMaker's SDK sends it with its quotes
backslash-escaped (``{\\"name\\": \\"stoptraining\\"}``), which is accepted too. Names are matched
without regard to case; values (job prefixes, addresses) are kept as written.

- ``{"name": "StopTraining"}``: stop the local job writing the base trial: a stop request is
  written into the trial, and the hooks end training at their next step boundary.
- ``{"name": "StopTraining", "training_job_prefix": "my-job"}``: SageMaker's StopTrainingJob on
  the one InProgress training job whose name starts with the prefix (none or several: skipped,
  logged). Needs boto3.
- ``{"name": "Email", "endpoint": "me@example.com"}`` / ``{"name": "SMS", "endpoint": "+1..."}``:
  a message through the SNS topic ``SMDebugRules`` (created and subscribed when the rule is built).
- ``{"name": "Log"}``: a warning in the ``smdebug`` log, nothing else.

Everything is checked when the rule is built; a malformed string is a RuleConfigurationError
naming ``action_str``. Errors while an action runs are logged, never raised.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from typing import Any

from smdebug.exceptions import RuleConfigurationError

__all__ = ["ActionSpec", "Firing", "Actions", "parse_actions", "ACTION_NAMES"]

logger = logging.getLogger("smdebug")

ACTION_NAMES = {"stoptraining": "StopTraining", "email": "Email", "sms": "SMS", "log": "Log"}
_KEYS = {
    "stoptraining": {"training_job_prefix"},
    "email": {"endpoint"},
    "sms": {"endpoint"},
    "log": {"message"},
}
_PREFIX = re.compile(r"^[A-Za-z0-9\-]+$")  # what SageMaker's SDK accepts for a training job prefix
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_PHONE = re.compile(r"^\+\d{1,15}$")  # E.164


@dataclass(frozen=True)
class ActionSpec:
    """One parsed action: its lower-case ``kind`` (stoptraining, email, sms, log) and its values."""

    kind: str
    params: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        return ACTION_NAMES[self.kind]


@dataclass(frozen=True)
class Firing:
    """What an action is told when the rule's condition is met."""

    rule_name: str
    step: int
    message: str
    base_trial: Any = None
    finding: Any = None  # a smdebug.rules.finding.Finding: what the rule found, when it says

    @property
    def reason(self) -> str:
        """What a stop request, a log line or a text message says: the finding, else the message."""
        return f"{self.rule_name}: {self.finding.text()}" if self.finding is not None else self.message


def _loads(text: str, rule_name: str) -> Any:
    try:
        return json.loads(text)
    except RecursionError:
        raise RuleConfigurationError(rule_name, "action_str", "JSON nested too deeply to be an action") from None
    except ValueError as first:
        if '\\"' in text:  # the SDK's serialized form: quotes escaped with backslashes
            try:
                return json.loads(text.replace('\\"', '"'))
            except (ValueError, RecursionError):
                pass
        shown = text if len(text) <= 200 else text[:200] + "..."
        raise RuleConfigurationError(rule_name, "action_str", f"not valid JSON ({first}): {shown!r}") from None


def _check(kind: str, d: dict, rule_name: str) -> dict:
    def bad(msg: str) -> RuleConfigurationError:
        return RuleConfigurationError(rule_name, "action_str", f"action {ACTION_NAMES[kind]}: {msg}")

    params = {}
    for k, v in d.items():
        if k == "name":
            continue
        if k not in _KEYS[kind]:
            allowed = ", ".join(sorted(_KEYS[kind] | {"name"}))
            raise bad(f"unknown key {k!r} (allowed: {allowed})")
        if v is None:
            continue
        if not isinstance(v, str):
            raise bad(f"{k!r} must be a string, got {v!r}")
        params[k] = v.strip()
    if kind == "stoptraining" and "training_job_prefix" in params:
        if not _PREFIX.match(params["training_job_prefix"]):
            raise bad(
                f"training_job_prefix {params['training_job_prefix']!r} must be letters, digits and '-' "
                "(leave the key out to stop a local training job)"
            )
    if kind in ("email", "sms"):
        ep = params.get("endpoint")
        if not ep:
            raise bad("needs an 'endpoint' (an e-mail address or a phone number)")
        if kind == "email" and not _EMAIL.match(ep):
            raise bad(f"endpoint {ep!r} is not an e-mail address")
        if kind == "sms" and not _PHONE.match(ep):
            raise bad(f"endpoint {ep!r} is not a phone number in E.164 form (+ and up to 15 digits)")
    return params


def parse_actions(action_str: str | list[Any] | dict[str, Any] | None, rule_name: str = "rule") -> list[ActionSpec]:
    """The actions in ``action_str`` (a JSON string, or an already parsed dict or list)."""
    if action_str is None:
        return []
    if isinstance(action_str, str):
        text = action_str.strip()
        if not text:
            return []
        obj = _loads(text, rule_name)
        if isinstance(obj, str):  # a JSON string holding the JSON (double-encoded)
            obj = _loads(obj, rule_name)
    else:
        obj = action_str
    items = [obj] if isinstance(obj, dict) else obj
    if not isinstance(items, list):
        raise RuleConfigurationError(rule_name, "action_str", f"expected an object or a list of objects, got {obj!r}")
    specs = []
    for item in items:
        if not isinstance(item, dict):
            raise RuleConfigurationError(rule_name, "action_str", f"each action must be an object, got {item!r}")
        item = {str(k).strip().lower(): v for k, v in item.items()}  # keys as 1.0.34 read them; values kept
        name = item.get("name")
        if not isinstance(name, str) or not name.strip():
            raise RuleConfigurationError(rule_name, "action_str", f"action {item!r} has no 'name'")
        kind = name.strip().lower()
        if kind not in ACTION_NAMES:
            allowed = ", ".join(ACTION_NAMES.values())
            raise RuleConfigurationError(rule_name, "action_str", f"unknown action {name!r} (allowed: {allowed})")
        specs.append(ActionSpec(kind, _check(kind, item, rule_name)))
    return specs


class LocalStopTraining:
    """Writes a stop request into the base trial, once; the hooks writing it stop training."""

    request: Any  # the StopRequest written, once fired

    def __init__(self, rule_name: str):
        self.rule_name = rule_name
        self.request = None  # the StopRequest written, once fired

    def invoke(self, firing: Firing) -> None:
        if self.request is not None:
            logger.debug("smdebug: rule %s already asked training to stop", self.rule_name)
            return
        from smdebug.core.engine.stop_request import write_stop_request

        store = getattr(firing.base_trial, "store", None)
        if store is None:
            logger.error("smdebug: rule %s: StopTraining needs a trial with a store; nothing written", self.rule_name)
            return
        try:
            self.request = write_stop_request(store, firing.rule_name, firing.step, firing.reason)
        except Exception as exc:  # an action never ends the rule
            logger.error("smdebug: rule %s could not write its stop request to %s: %s", self.rule_name, store.url, exc)
            return
        logger.warning(
            "smdebug: rule %s fired at step %s (%s): asked training at %s to stop",
            firing.rule_name,
            firing.step,
            firing.reason,
            store.url,
        )


class LogAction:
    """Only logs that the rule fired."""

    def __init__(self, rule_name: str, message: str = ""):
        self.rule_name = rule_name
        self.message = message

    def invoke(self, firing: Firing) -> None:
        extra = f" {self.message}" if self.message else ""
        logger.warning("smdebug: rule %s fired at step %s: %s%s", firing.rule_name, firing.step, firing.message, extra)


def build_action(spec: ActionSpec, rule_name: str) -> Any:
    """The action object for ``spec``; AWS ones import boto3 here, and only here."""
    if spec.kind == "log":
        return LogAction(rule_name, spec.params.get("message", ""))
    if spec.kind == "stoptraining" and "training_job_prefix" not in spec.params:
        return LocalStopTraining(rule_name)
    from smdebug.rules import aws_actions

    if spec.kind == "stoptraining":
        return aws_actions.SageMakerStopTraining(rule_name, spec.params["training_job_prefix"])
    return aws_actions.SnsMessage(rule_name, spec.kind, spec.params["endpoint"])


class Actions:
    """The actions of one rule, parsed and checked (and SNS subscriptions made) when built."""

    def __init__(self, action_str: str | list[Any] | dict[str, Any] | None = "", rule_name: str = "rule") -> None:
        self.rule_name = rule_name
        self.specs = parse_actions(action_str, rule_name)
        self.actions = [build_action(s, rule_name) for s in self.specs]
        if self.specs:
            logger.info("smdebug: rule %s will act when it fires: %s", rule_name, ", ".join(s.name for s in self.specs))

    def __len__(self) -> int:
        return len(self.actions)

    def invoke(self, firing: Firing) -> None:
        for action in self.actions:
            try:
                action.invoke(firing)
            except Exception:  # one failing action neither stops the others nor the rule
                logger.exception("smdebug: rule %s: action %s failed", self.rule_name, type(action).__name__)
