"""Inputs as users already have them, turned into the dicts of :mod:`smdebug.launch.spec`.

- command-line strings: ``--rule exploding_tensor:tensor_regex=.*``, ``--rule-file rules.py:MyRule:threshold=20``,
  ``--collection weights:save_interval=10``, ``--action stop``;
- ``rule_configs.<function>()`` dicts (``{"DebugRuleConfiguration": ..., "CollectionConfigurations": ...}``);
- DebugRuleConfiguration / DebugHookConfig / CollectionConfiguration dicts;
- the SageMaker SDK's ``Rule``, ``DebuggerHookConfig``, ``CollectionConfig`` and ``TensorBoardOutputConfig``
  objects, duck-typed (``to_debugger_rule_config_dict()``, ``_to_request_dict()``): ``sagemaker`` is never imported.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from typing import Any

from smdebug.launch.catalog import RULE_CONFIGS, resolve_rule_name, rule_config
from smdebug.launch.spec import CUSTOM_IMAGE, JobSpec, LaunchConfigError, SpecBuilder, parse_json, read_json_file

__all__ = [
    "parse_params",
    "rule_from_flag",
    "rule_file_from_flag",
    "collection_from_flag",
    "action_from_flag",
    "add_rule",
    "add_collection",
    "add_hook_config",
    "load_json_file",
    "build_spec",
]

_SCHEMES = ("file://", "s3://")
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")


def parse_params(tokens: list[str], where: str) -> dict[str, str]:
    """``["a=1", "b=x", "y"]`` -> ``{"a": "1", "b": "x:y"}``: a token without '=' continues the value
    before it (a regex or a path may hold ':')."""
    out: dict[str, str] = {}
    last = None
    for tok in tokens:
        key, sep, value = tok.partition("=")
        if sep and _KEY.match(key.strip()):
            last = key.strip()
            if last in out:
                raise LaunchConfigError(f"{where}: parameter {last} is given twice")
            out[last] = value
        elif last is not None:
            out[last] += ":" + tok
        else:
            raise LaunchConfigError(f"{where}: expected NAME=VALUE after ':', got {tok!r}")
    return out


def _split_head(text: str, where: str) -> tuple[str, list[str]]:
    if not isinstance(text, str) or not text.strip():
        raise LaunchConfigError(f"{where}: empty value")
    head, *rest = text.strip().split(":")
    if not head.strip():
        raise LaunchConfigError(f"{where}: {text!r} starts with ':'")
    return head.strip(), rest


def rule_from_flag(text: str, where: str = "--rule") -> tuple[dict[str, Any], list[Any] | None]:
    """``exploding_tensor:tensor_regex=.*`` -> (DebugRuleConfiguration, the rule's collections), as
    ``Rule.sagemaker(rule_configs.exploding_tensor(), rule_parameters={"tensor_regex": ".*"})`` gives.
    A profiler rule (``ProfilerReport``, ``step_outlier:n_outliers=0``) gives (its
    ProfilerRuleConfiguration, None): see :mod:`smdebug.launch.profiler_jobs`."""
    from smdebug.launch.profiler_jobs import profiler_rule_classes, profiler_rule_from_flag, resolve_profiler_rule

    where = f"{where} {text}"
    head, rest = _split_head(text, where)
    fn = resolve_rule_name(head)
    if fn is None:
        prof = resolve_profiler_rule(head)
        if prof is not None:
            return profiler_rule_from_flag(prof, parse_params(rest, where), where), None
        import difflib

        near = difflib.get_close_matches(
            head.lower(), [*RULE_CONFIGS, *(c.lower() for c in profiler_rule_classes())], n=1, cutoff=0.6
        )
        match = next((c for c in profiler_rule_classes() if c.lower() == near[0]), near[0]) if near else None
        raise LaunchConfigError(
            f"{where}: {head!r} is no built-in rule (debugger rules: {', '.join(RULE_CONFIGS)}; "
            f"profiler rules: {', '.join(profiler_rule_classes())}; a rule of your own goes "
            "in --rule-file FILE.py:CLASS)" + (f"; did you mean {match}?" if match else "")
        )
    return _from_rule_configs(rule_config(fn), parse_params(rest, where), where)


def _from_rule_configs(doc: dict[str, Any], params: dict[str, str], where: str) -> tuple[dict[str, Any], list[Any]]:
    conf = doc["DebugRuleConfiguration"]
    if "rule_to_invoke" in params:
        raise LaunchConfigError(f"{where}: you cannot provide a 'rule_to_invoke' for a built-in rule")
    rule = {
        "RuleConfigurationName": conf["RuleConfigurationName"],
        "RuleParameters": {**conf.get("RuleParameters", {}), **params},
    }
    return rule, list(doc.get("CollectionConfigurations") or [])


def rule_file_from_flag(text: str, where: str = "--rule-file") -> dict[str, Any]:
    """``my_rules.py:MyRule:threshold=20`` (or ``file://...``, ``s3://...``) -> a custom DebugRuleConfiguration."""
    where = f"{where} {text}"
    scheme = next((s for s in _SCHEMES if text.startswith(s)), "")
    path, rest = _split_head(text[len(scheme) :], where)
    if not rest or not rest[0].strip() or "=" in rest[0]:
        raise LaunchConfigError(f"{where}: expected FILE.py:CLASS[:NAME=VALUE...]")
    cls = rest[0].strip()
    params = parse_params(rest[1:], where)
    source = scheme + path
    if scheme != "s3://":
        local = path if scheme == "file://" else os.path.abspath(path)
        if not os.path.isfile(local):
            raise LaunchConfigError(f"{where}: the rule file {local} does not exist")
        source = local
    return {
        "RuleConfigurationName": cls,
        "RuleEvaluatorImage": CUSTOM_IMAGE,
        "RuleParameters": {"source_s3_uri": source, "rule_to_invoke": cls, **params},
    }


def collection_from_flag(text: str, where: str = "--collection") -> dict[str, Any]:
    """``weights:save_interval=10`` -> ``{"CollectionName": "weights", "CollectionParameters": {...}}``."""
    where = f"{where} {text}"
    head, rest = _split_head(text, where)
    params = parse_params(rest, where)
    return {"CollectionName": head, **({"CollectionParameters": params} if params else {})}


def action_from_flag(text: str, where: str = "--action") -> dict[str, str]:
    """``stop`` | ``log`` | ``email:ADDRESS`` | ``sms:+NUMBER`` -> one action_json object."""
    kind, _sep, arg = text.strip().partition(":")
    kind = kind.lower()
    if kind in ("stop", "stoptraining") and not arg:
        return {"name": "StopTraining"}
    if kind == "log" and not arg:
        return {"name": "Log"}
    if kind in ("email", "sms") and arg:
        return {"name": "Email" if kind == "email" else "SMS", "endpoint": arg}
    raise LaunchConfigError(f"{where} {text}: expected stop, log, email:ADDRESS or sms:+NUMBER")


def _request_dict(obj: Any, where: str) -> Any:
    to_dict = getattr(obj, "_to_request_dict", None)
    if callable(to_dict):
        return to_dict()
    return obj


def add_rule(builder: SpecBuilder, obj: Any, where: str) -> None:
    """Any rule form: a flag string, a rule_configs dict, a DebugRuleConfiguration dict, an SDK Rule;
    or a profiler rule: an SDK ProfilerRule, a smdebug-rulesconfig profiler rule (object or
    ``{"rule_name", "rule_parameters"}`` dict), a configuration dict whose ``rule_to_invoke`` is a
    profiler rule."""
    from smdebug.launch.profiler_jobs import is_profiler_rule_object, profiler_rule_classes, profiler_rule_dict

    if isinstance(obj, str):
        rule, colls = rule_from_flag(obj, where)
        if colls is None:
            builder.add_profiler_rule(rule, f"{where} {obj}")
        else:
            builder.add_rule(rule, f"{where} {obj}", colls)
    elif is_profiler_rule_object(obj):
        builder.add_profiler_rule(profiler_rule_dict(obj, where), where)
    elif (
        isinstance(obj, dict)
        and isinstance(obj.get("RuleParameters"), dict)
        and "source_s3_uri" not in obj["RuleParameters"]
        and str(obj["RuleParameters"].get("rule_to_invoke", "")).strip() in profiler_rule_classes()
    ):
        builder.add_profiler_rule(obj, where)
    elif isinstance(obj, dict) and "DebugRuleConfiguration" in obj:
        extra = set(obj) - {"DebugRuleConfiguration", "CollectionConfigurations"}
        if extra:
            raise LaunchConfigError(f"{where}: unknown member {sorted(extra)[0]!r} of a rule_configs dict")
        rule, colls = _from_rule_configs(obj, {}, where)
        builder.add_rule(rule, where, colls)
    elif isinstance(obj, dict):
        builder.add_rule(obj, where)
    elif callable(getattr(obj, "to_debugger_rule_config_dict", None)):
        _add_sdk_rule(builder, obj, where)
    else:
        raise LaunchConfigError(
            f"{where}: {type(obj).__name__} is no rule (give a rule_configs dict, a "
            "DebugRuleConfiguration dict, a SageMaker SDK Rule or a flag string)"
        )


def _add_sdk_rule(builder: SpecBuilder, rule: Any, where: str) -> None:
    doc = rule.to_debugger_rule_config_dict()
    if not isinstance(doc, dict):
        raise LaunchConfigError(f"{where}: to_debugger_rule_config_dict() returned {type(doc).__name__}")
    doc = {k: v for k, v in doc.items() if v is not None}
    params = dict(doc.get("RuleParameters") or {})
    actions = getattr(rule, "actions", None)
    if actions is not None and "action_json" not in params and callable(getattr(actions, "serialize", None)):
        # not prepare_actions(job): that names a SageMaker job, and StopTraining would call AWS
        params["action_json"] = actions.serialize()
    if "action_json" in params:  # the SDK escapes the quotes (a Python literal); plain JSON here
        text = params["action_json"]
        try:
            params["action_json"] = json.dumps(json.loads(text.replace('\\"', '"') if '\\"' in text else text))
        except ValueError:
            raise LaunchConfigError(f"{where}: action_json is not JSON: {text!r}") from None
    doc["RuleParameters"] = params
    colls = [_request_dict(c, where) for c in (getattr(rule, "collection_configs", None) or [])]
    builder.add_rule(doc, where, colls)


def add_collection(builder: SpecBuilder, obj: Any, where: str) -> None:
    if isinstance(obj, str):
        obj = collection_from_flag(obj, where)
    builder.add_collection(_request_dict(obj, where), where)


def add_hook_config(builder: SpecBuilder, obj: Any, where: str) -> None:
    """A DebuggerHookConfig object or dict (None: the defaults)."""
    if obj is None:
        return
    if obj is False:
        raise LaunchConfigError(f"{where}=False turns the debugger hook off; smdebug launch exists to attach it")
    builder.add_hook_config(_request_dict(obj, where), where)


def load_json_file(path: str, what: str) -> dict[str, Any]:
    """A JSON file's object, or a LaunchConfigError naming the file."""
    doc = parse_json(read_json_file(path, what), f"{what} {path}")
    if not isinstance(doc, dict):
        raise LaunchConfigError(f"{what} {path} must hold a JSON object")
    return doc


def build_spec(
    *,
    name: str,
    out_dir: str | None = None,
    default_out_dir: str | None = None,
    job: str | dict[str, Any] | None = None,
    config: str | None = None,
    hook_config: Any = None,
    hook_parameters: dict[str, Any] | Iterable[str] | None = None,
    collections: Iterable[Any] = (),
    rules: Iterable[Any] = (),
    rule_files: Iterable[str] = (),
    actions: Iterable[str | dict[str, str]] = (),
    tensorboard: Any = None,
    profile: bool = False,
    profiler_config: Any = None,
    profile_interval_ms: int | str | None = None,
    default_profiler_dir: str | None = None,
) -> JobSpec:
    """One JobSpec from every input: ``job`` (a CreateTrainingJob request: path or dict), ``config``
    (a debughookconfig.json path), ``hook_config`` (DebugHookConfig dict or SDK object), flag strings.
    Profiling (:mod:`smdebug.launch.profiling`): ``profile`` (the defaults), ``profiler_config`` (a
    ProfilerConfig: dict, JSON text or file), ``profile_interval_ms``; its data goes to the config's
    LocalPath, else ``default_profiler_dir``, else ``profiler-output`` beside ``default_out_dir``."""
    from smdebug.launch.profiler_jobs import profiler_rule_spec

    b = SpecBuilder(profiler_rule_spec)
    if job is not None:
        where = job if isinstance(job, str) else "job="
        b.add_request(load_json_file(job, "job file") if isinstance(job, str) else job, where)
    if config is not None:
        b.add_hook_config(load_json_file(config, "hook config"), config)
    add_hook_config(b, hook_config, "debugger_hook_config")
    if hook_parameters:
        if isinstance(hook_parameters, dict):
            items = dict(hook_parameters)
        else:
            items = {}
            for p in hook_parameters:
                key, value = parse_params([p], f"--hook-param {p}").popitem()
                if key in items and items[key] != value:
                    raise LaunchConfigError(f"--hook-param {p}: {key} is given twice ({items[key]!r} and {value!r})")
                items[key] = value
        b.add_hook_parameters(items, "--hook-param")
    for c in collections:
        add_collection(b, c, f"--collection {c}" if isinstance(c, str) else "collection")
    for i, r in enumerate(rules):
        add_rule(b, r, "--rule" if isinstance(r, str) else f"rules[{i}]")
    for r in rule_files:
        b.add_rule(rule_file_from_flag(r), f"--rule-file {r}")
    if tensorboard is not None:
        b.add_tensorboard(
            {"LocalPath": tensorboard} if isinstance(tensorboard, str) else _request_dict(tensorboard, "tensorboard"),
            "tensorboard",
        )
    for a in actions:
        b.add_action(a if isinstance(a, dict) else action_from_flag(a), f"--action {a}")
    spec = b.build(name, out_dir, default_out_dir)
    _add_profiling(
        spec,
        b,
        profile,
        profiler_config,
        profile_interval_ms,
        default_profiler_dir or os.path.join(os.path.dirname(default_out_dir or spec.out_dir), "profiler-output"),
    )
    if actions and not spec.rules and not spec.profiler_rules:
        raise LaunchConfigError("--action needs a rule to act when it fires (--rule or --rule-file)")
    return spec


def _add_profiling(
    spec: JobSpec, builder: SpecBuilder, profile: bool, config: Any, interval_ms: int | str | None, default_dir: str
) -> None:
    from smdebug.launch.profiling import profiler_document, read_profiler_config

    doc, where = None, "--profile"
    if config is not None and builder.profiler_config is not None:
        raise LaunchConfigError(
            f"a profiler configuration is given twice: in {builder.profiler_config[1]} and in --profiler-config"
        )
    if config is not None:
        where = "--profiler-config"
        doc = read_profiler_config(config, where)
    elif builder.profiler_config is not None:
        doc, where = builder.profiler_config
        doc = read_profiler_config(doc, where)
    if interval_ms is not None:
        try:
            interval_ms = int(interval_ms)
        except (TypeError, ValueError):
            raise LaunchConfigError(f"--profile-interval-ms {interval_ms!r} is not a whole number") from None
    if doc is None and not profile and interval_ms is None:
        if not spec.profiler_rules:
            return
        spec.profiling_auto = True  # the profiler rules need profiling: on, with the defaults
    spec.profiler = profiler_document(doc, where, default_local_path=default_dir, interval_ms=interval_ms)
    if spec.profiler_rules and str(spec.profiler.get("DisableProfiler", "")).strip().lower() in ("true", "1"):
        names = ", ".join(r.name for r in spec.profiler_rules)
        raise LaunchConfigError(f"{where}: DisableProfiler is true, but the profiler rules {names} need profiling")
