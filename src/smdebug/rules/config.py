"""``create_rule``: a rule built from SageMaker's ``RuleParameters`` (all values strings).

``{"rule_to_invoke": "VanishingGradient", "threshold": "20.0", "action_json": "...",
"other_trial_0": "s3://..."}`` -> ``VanishingGradient(base_trial, action_str=..., threshold="20.0")``.
Keys that are no parameter of the rule are ignored with one warning (as SageMaker's rule container
did); everything else that is wrong is a RuleConfigurationError naming the key.

A custom rule: ``{"source_s3_uri": "s3://bucket/rules/my_rule.py", "rule_to_invoke": "MyRule", ...}``
loads the class ``MyRule`` from that Python file (a local path, ``file://`` or ``s3://`` URL, read
through :mod:`smdebug.storage`) and builds it with the other keys (strings) as its parameters.
The file must define that class (a :class:`~smdebug.rules.Rule`): a built-in rule of the same
name is never used in its place.
"""

from __future__ import annotations

import inspect
import itertools
import logging
import re
import sys
import types
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from smdebug.exceptions import RuleConfigurationError

if TYPE_CHECKING:
    from smdebug.rules.rule import Rule
    from smdebug.trials.trial import Trial

__all__ = ["create_rule", "find_rule_class", "load_custom_rule", "unknown_parameters", "OTHER_TRIAL_KEYS", "SOURCE_KEY"]

logger = logging.getLogger("smdebug")

_OTHER_TRIAL = re.compile(r"^other_trial_(\d+)$")
OTHER_TRIAL_KEYS = ("other_trials", "other_trial")  # besides other_trial_<i>: comma-separated paths
_NOT_PARAMS = {"self", "base_trial", "other_trials", "action_str"}
SOURCE_KEY = "source_s3_uri"  # the Python file of a custom rule
_loaded = itertools.count()


def _read_source(source: str, name: str) -> tuple[str, bytes]:
    """(where, bytes) of the custom rule file at a local path, ``file://`` or remote URL."""
    from smdebug.storage import is_remote, open_store

    def bad(msg: str) -> RuleConfigurationError:
        return RuleConfigurationError(name, SOURCE_KEY, msg)

    if not isinstance(source, str) or not source.strip():
        raise bad(f"expected the path or URL of a Python file, got {source!r}")
    source = source.strip()
    if source.endswith("/"):
        raise bad(f"{source} is a folder; give the Python file that defines {name}")
    path = source[len("file://") :] if source.startswith("file://") else source
    folder, _, key = path.rpartition("/")
    if not is_remote(path):
        folder = folder or "."
    try:
        store = open_store(folder)
        return store.describe(key), store.read(key)
    except RuleConfigurationError:
        raise
    except Exception as exc:  # not found, no permission, no s3 extra: said with the file's name
        raise bad(f"cannot read the rule file {source}: {exc}") from exc


def load_custom_rule(source: str, name: str) -> type[Rule]:
    """The :class:`~smdebug.rules.Rule` subclass ``name`` defined in the Python file at ``source``
    (local path, ``file://`` or ``s3://``); RuleConfigurationError if it cannot be loaded or
    defines no such class."""
    from smdebug.rules.rule import Rule

    where, code = _read_source(source, name)
    module = types.ModuleType(f"smdebug_custom_rule_{next(_loaded)}")
    module.__file__ = where
    sys.modules[module.__name__] = module  # dataclasses and pickling look their module up
    try:
        exec(compile(code, where, "exec"), module.__dict__)  # noqa: S102 - the user's own rule file
    except (Exception, SystemExit) as exc:  # a sys.exit() at import is the file's failure, not the caller's exit
        sys.modules.pop(module.__name__, None)
        what = f"calls sys.exit({exc.code!r})" if isinstance(exc, SystemExit) else f"{type(exc).__name__}: {exc}"
        raise RuleConfigurationError(name, SOURCE_KEY, f"{where} fails to load: {what}") from exc
    cls = module.__dict__.get(name)
    if not (isinstance(cls, type) and issubclass(cls, Rule)):
        found = sorted(
            k
            for k, v in module.__dict__.items()
            if isinstance(v, type) and issubclass(v, Rule) and v.__module__ == module.__name__
        )
        what = "no Rule subclass" if cls is None or isinstance(cls, type) else f"a {type(cls).__name__}"
        raise RuleConfigurationError(
            name, "rule_to_invoke", f"{where} defines {what} named {name!r} (its rules: {', '.join(found) or 'none'})"
        )
    return cls


def _lookup(name: str, rule_classes: Any) -> Any:  # the class, or None
    if rule_classes is not None:
        table = dict(rule_classes) if isinstance(rule_classes, Mapping) else {c.__name__: c for c in rule_classes}
        if name in table:
            return table[name]
    try:
        return find_rule_class(name)  # raises with the list of built-in rules (and a hint)
    except RuleConfigurationError as exc:
        extra = f"; or one of {', '.join(table)}" if rule_classes is not None and table else ""
        raise RuleConfigurationError(name, "rule_to_invoke", exc.message + extra) from None


def find_rule_class(name: str) -> type[Rule]:
    """A rule of either kind by name: a built-in (debugger) rule, else a profiler rule
    (SageMaker's ``rule_to_invoke`` names both)."""
    from smdebug.rules.builtin import get_rule_class
    from smdebug.rules.profiler import profiler_rule_classes

    profiler = profiler_rule_classes()
    if isinstance(name, str) and name in profiler:
        return profiler[name]
    return get_rule_class(name)


def _given(name: str, rule_classes: Mapping[str, type[Rule]] | Iterable[type[Rule]] | None) -> bool:
    """Whether the caller passed the class ``name`` in ``rule_classes`` (it then wins over a file)."""
    if rule_classes is None:
        return False
    if isinstance(rule_classes, Mapping):
        return name in rule_classes
    return any(c.__name__ == name for c in rule_classes)


def _signature(cls: type[Rule]) -> tuple[set[str], bool, set[str]]:
    """(parameter names, whether any keyword goes, which of action_str/other_trials it takes)."""
    from smdebug.rules.builtin.base import BuiltinRule

    if issubclass(cls, BuiltinRule):
        return {p.name for p in cls.params}, False, {"action_str", "other_trials"}
    sig = inspect.signature(cls.__init__)
    names = {n for n, p in sig.parameters.items() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    var_kw = any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())
    takes = {"action_str", "other_trials"} if var_kw else names & {"action_str", "other_trials"}
    return names - _NOT_PARAMS, var_kw, takes


def unknown_parameters(cls: type[Rule], params: Mapping[str, Any]) -> dict[str, list[str]]:
    """The keys of ``params`` (RuleParameters) that are no parameter of ``cls``, each with the
    parameter names it may be a misspelling of; ``create_rule`` ignores them with a warning,
    ``smdebug run`` refuses them before the job starts."""
    import difflib

    accepted, var_kw, takes = _signature(cls)
    if var_kw:
        return {}
    fixed = {"rule_to_invoke", SOURCE_KEY, "action_json", "start_step", "end_step"}
    out = {}
    for key in params:
        if (
            key in accepted
            or key in fixed
            or (_OTHER_TRIAL.match(key) or key == "other_trials")
            and ("other_trials" in takes)
        ):
            continue
        out[key] = difflib.get_close_matches(key, sorted(accepted), n=2, cutoff=0.7)
    return out


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


def _open(path: str, key: str, rule_name: str) -> Trial:
    from smdebug.trials import create_trial

    try:
        return create_trial(path)
    except Exception as exc:
        raise RuleConfigurationError(rule_name, key, f"cannot open the trial at {path}: {exc}") from exc


def create_rule(
    rule_parameters: dict[str, Any],
    base_trial: Trial | str,
    other_trials: Iterable[Trial] | None = None,
    *,
    rule_classes: Mapping[str, type[Rule]] | Iterable[type[Rule]] | None = None,
) -> Rule:
    """Build the rule named by ``rule_parameters["rule_to_invoke"]`` with the other keys as parameters.

    ``base_trial`` is a Trial or a path. ``other_trial_<i>`` (or ``other_trials``, comma-separated)
    paths are opened with ``create_trial``; alternatively pass opened trials as ``other_trials``.
    ``action_json`` becomes the rule's ``action_str``. ``rule_classes`` (a dict name -> class, or
    classes) adds custom rules to look up before the built-in ones. With ``source_s3_uri`` (and no
    class of that name in ``rule_classes``), the class comes from that file (:func:`load_custom_rule`).
    """
    if not isinstance(rule_parameters, Mapping):
        raise RuleConfigurationError("?", "rule_parameters", f"expected a dict, got {type(rule_parameters).__name__}")
    params = dict(rule_parameters)
    name = params.pop("rule_to_invoke", None)
    if not isinstance(name, str) or not name.strip():
        raise RuleConfigurationError("?", "rule_to_invoke", f"missing or not a rule name: {name!r}")
    name = name.strip()
    if SOURCE_KEY in params and not _given(name, rule_classes):
        # a custom rule: the class of its file, never a built-in rule of that name
        cls = load_custom_rule(params.pop(SOURCE_KEY), name)
    else:
        cls = _lookup(name, rule_classes)
    accepted, var_kw, takes = _signature(cls)
    action_str = params.pop("action_json", "")
    paths = _other_trial_paths(params, name)
    if paths and other_trials is not None:
        raise RuleConfigurationError(name, paths[0][0], "other trials given both as paths and as other_trials=")
    if action_str and "action_str" not in takes:
        raise RuleConfigurationError(name, "action_json", f"{cls.__name__}.__init__ takes no action_str")
    if (paths or other_trials) and "other_trials" not in takes:
        raise RuleConfigurationError(
            name, paths[0][0] if paths else "other_trials", f"{cls.__name__}.__init__ takes no other_trials"
        )
    kwargs = {k: v for k, v in params.items() if var_kw or k in accepted}
    ignored = sorted(set(params) - set(kwargs))
    if ignored:
        logger.warning(
            "smdebug: rule %s: ignoring RuleParameters that are no parameter of the rule: %s", name, ", ".join(ignored)
        )
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
