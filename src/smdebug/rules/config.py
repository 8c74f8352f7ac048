"""``create_rule``: a rule built from SageMaker's ``RuleParameters`` (all values strings).

``{"rule_to_invoke": "VanishingGradient", "threshold": "20.0", "action_json": "...",
"other_trial_0": "s3://..."}`` -> ``VanishingGradient(base_trial, action_str=..., threshold="20.0")``.
Keys that are no parameter of the rule are ignored with one warning (as SageMaker's rule container
did); everything else that is wrong is a RuleConfigurationError naming the key.
"""

from __future__ import annotations

import inspect
import logging
import re
from collections.abc import Mapping

from smdebug.exceptions import RuleConfigurationError

__all__ = ["create_rule", "OTHER_TRIAL_KEYS"]

logger = logging.getLogger("smdebug")

_OTHER_TRIAL = re.compile(r"^other_trial_(\d+)$")
OTHER_TRIAL_KEYS = ("other_trials", "other_trial")  # besides other_trial_<i>: comma-separated paths
_NOT_PARAMS = {"self", "base_trial", "other_trials", "action_str"}


def _lookup(name, rule_classes):
    if rule_classes is not None:
        table = dict(rule_classes) if isinstance(rule_classes, Mapping) else {c.__name__: c for c in rule_classes}
        if name in table:
            return table[name]
    from smdebug.rules.builtin import RULE_MODULES, get_rule_class

    if name not in RULE_MODULES:
        try:
            get_rule_class(name)  # raises with the list of built-in rules (and a hint)
        except RuleConfigurationError as exc:
            extra = f"; or one of {', '.join(table)}" if rule_classes is not None and table else ""
            raise RuleConfigurationError(name, "rule_to_invoke", exc.message + extra) from None
    return get_rule_class(name)


def _signature(cls) -> tuple[set, bool, set]:
    """(parameter names, whether any keyword goes, which of action_str/other_trials it takes)."""
    from smdebug.rules.builtin.base import BuiltinRule

    if issubclass(cls, BuiltinRule):
        return {p.name for p in cls.params}, False, {"action_str", "other_trials"}
    sig = inspect.signature(cls.__init__)
    names = {n for n, p in sig.parameters.items() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    var_kw = any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())
    takes = {"action_str", "other_trials"} if var_kw else names & {"action_str", "other_trials"}
    return names - _NOT_PARAMS, var_kw, takes


def _other_trial_paths(params: dict, rule_name: str) -> list[tuple[str, str]]:
    """(key, path) of the other trials, other_trial_0, other_trial_1, ... in order."""
    numbered = []
    for key in list(params):
        m = _OTHER_TRIAL.match(key)
        if m:
            numbered.append((int(m.group(1)), key, params.pop(key)))
    out = [(key, path) for _i, key, path in sorted(numbered)]
    for key in OTHER_TRIAL_KEYS:
        if key in params:
            value = params.pop(key)
            paths = value.split(",") if isinstance(value, str) else list(value)
            out += [(key, p) for p in paths]
    for key, path in out:
        if not isinstance(path, str) or not path.strip():
            raise RuleConfigurationError(rule_name, key, f"expected the path of a trial, got {path!r}")
    return [(key, path.strip()) for key, path in out]


def _open(path: str, key: str, rule_name: str):
    from smdebug.trials import create_trial

    try:
        return create_trial(path)
    except Exception as exc:
        raise RuleConfigurationError(rule_name, key, f"cannot open the trial at {path}: {exc}") from exc


def create_rule(rule_parameters: dict, base_trial, other_trials=None, *, rule_classes=None):
    """Build the rule named by ``rule_parameters["rule_to_invoke"]`` with the other keys as parameters.

    ``base_trial`` is a Trial or a path. ``other_trial_<i>`` (or ``other_trials``, comma-separated)
    paths are opened with ``create_trial``; alternatively pass opened trials as ``other_trials``.
    ``action_json`` becomes the rule's ``action_str``. ``rule_classes`` (a dict name -> class, or
    classes) adds custom rules to look up before the built-in ones.
    """
    if not isinstance(rule_parameters, Mapping):
        raise RuleConfigurationError("?", "rule_parameters", f"expected a dict, got {type(rule_parameters).__name__}")
    params = dict(rule_parameters)
    name = params.pop("rule_to_invoke", None)
    if not isinstance(name, str) or not name.strip():
        raise RuleConfigurationError("?", "rule_to_invoke", f"missing or not a rule name: {name!r}")
    name = name.strip()
    cls = _lookup(name, rule_classes)
    accepted, var_kw, takes = _signature(cls)
    action_str = params.pop("action_json", "")
    paths = _other_trial_paths(params, name)
    if paths and other_trials is not None:
        raise RuleConfigurationError(name, paths[0][0], "other trials given both as paths and as other_trials=")
    if action_str and "action_str" not in takes:
        raise RuleConfigurationError(name, "action_json", f"{cls.__name__}.__init__ takes no action_str")
    if (paths or other_trials) and "other_trials" not in takes:
        raise RuleConfigurationError(name, paths[0][0] if paths else "other_trials",
                                     f"{cls.__name__}.__init__ takes no other_trials")
    kwargs = {k: v for k, v in params.items() if var_kw or k in accepted}
    ignored = sorted(set(params) - set(kwargs))
    if ignored:
        logger.warning("smdebug: rule %s: ignoring RuleParameters that are no parameter of the rule: %s",
                       name, ", ".join(ignored))
    if isinstance(base_trial, str):
        base_trial = _open(base_trial, "base_trial", name)
    if paths:
        other_trials = [_open(path, key, name) for key, path in paths]
    extra = {}
    if action_str:
        extra["action_str"] = action_str
    if other_trials:
        extra["other_trials"] = list(other_trials)
    return cls(base_trial, **extra, **kwargs)
