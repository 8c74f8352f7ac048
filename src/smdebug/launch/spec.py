"""The job spec: one normalised form of every way a user configures a debugged job.

The model is the CreateTrainingJob subset in PascalCase (docs/guide/zero-code-change.md, "Configuring it the ways you already have"):
``DebugHookConfig`` (written into the job as ``debughookconfig.json``, the file the hooks read),
``DebugRuleConfigurations`` (one rule job each) and ``TensorBoardOutputConfig``. Collections are
merged into one entry per name, the user's over a rule's defaults (:meth:`SpecBuilder.add_collection`:
SageMaker's SDK sends each distinct pair and the hook keeps whichever it reads last) and
the API's limits are enforced; everything wrong is a :class:`LaunchConfigError` naming the input.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from smdebug.exceptions import SMDebugValueError

__all__ = [
    "LaunchConfigError",
    "RuleSpec",
    "JobSpec",
    "SpecBuilder",
    "BUILTIN_IMAGE",
    "CUSTOM_IMAGE",
    "MAX_RULES",
    "MAX_COLLECTIONS",
]

BUILTIN_IMAGE = "DEFAULT_RULE_EVALUATOR_IMAGE"  # the SDK's placeholder before fit()
CUSTOM_IMAGE = "sagemaker-debugger-rule-evaluator:latest"
MAX_RULES = 20  # DebugRuleConfigurations
MAX_COLLECTIONS = 20  # CollectionConfigurations
MAX_MAP = 20  # HookParameters, CollectionParameters
MAX_RULE_PARAMS = 100  # RuleParameters
MAX_VALUE = 256  # ConfigKey / ConfigValue length
Collection = dict[str, Any]  # a CollectionConfiguration: {"CollectionName": ..., "CollectionParameters": {...}}
_NAME = re.compile(r"^[A-Za-z0-9\-_.]{1,256}$")
_BUILTIN_IMAGE = re.compile(r"(^|/)sagemaker-debugger-rules(:[^/]*)?$")
_HOOK_KEYS = {"S3OutputPath", "LocalPath", "HookParameters", "CollectionConfigurations", "DebugHookSpecification"}
_RULE_KEYS = {
    "RuleConfigurationName",
    "RuleEvaluatorImage",
    "RuleParameters",
    "LocalPath",
    "S3OutputPath",
    "InstanceType",
    "VolumeSizeInGB",
}


class LaunchConfigError(SMDebugValueError):
    """A job configuration that cannot run; the message names the file, flag or argument."""


def string_map(value: object, where: str, limit: int) -> dict[str, str]:
    """A SageMaker ``map<string,string>``: numbers and bools become strings as the SDK writes them."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise LaunchConfigError(f"{where} must be an object of string values, not {type(value).__name__}")
    if len(value) > limit:
        raise LaunchConfigError(f"{where} has {len(value)} entries; SageMaker allows at most {limit}")
    out: dict[str, str] = {}
    for k, v in value.items():
        if not isinstance(k, str) or not 1 <= len(k) <= MAX_VALUE:
            raise LaunchConfigError(f"{where}: key {k!r} must be a string of 1 to {MAX_VALUE} characters")
        if isinstance(v, bool):
            v = "true" if v else "false"
        elif isinstance(v, (int, float)):
            v = str(v)
        if not isinstance(v, str):
            raise LaunchConfigError(f"{where}: {k}={v!r} must be a string")
        if len(v) > MAX_VALUE:
            raise LaunchConfigError(f"{where}: the value of {k} has {len(v)} characters; SageMaker allows {MAX_VALUE}")
        out[k] = v
    return out


def collection_entry(value: object, where: str) -> Collection:
    """``{"CollectionName": ..., "CollectionParameters": {...}}`` checked (parameters left out when empty)."""
    if not isinstance(value, dict):
        raise LaunchConfigError(f"{where} must be an object with CollectionName, not {value!r}")
    unknown = set(value) - {"CollectionName", "CollectionParameters"}
    if unknown:
        raise LaunchConfigError(
            f"{where}: unknown member {sorted(unknown)[0]!r} (allowed: CollectionName, CollectionParameters)"
        )
    name = value.get("CollectionName")
    if not isinstance(name, str) or not name.strip():
        raise LaunchConfigError(f"{where} has no CollectionName")
    params = string_map(value.get("CollectionParameters"), f"CollectionParameters of {name!r} in {where}", MAX_MAP)
    entry: Collection = {"CollectionName": name.strip()}
    if params:
        entry["CollectionParameters"] = params
    return entry


@dataclass
class RuleSpec:
    """One DebugRuleConfiguration: a built-in rule (by ``rule_to_invoke``) or a custom one (``source_s3_uri``)."""

    name: str
    parameters: dict[str, str]
    image: str = BUILTIN_IMAGE
    where: str = ""

    @property
    def rule_to_invoke(self) -> str:
        return self.parameters["rule_to_invoke"]

    @property
    def source(self) -> str | None:
        return self.parameters.get("source_s3_uri")

    def to_request_dict(self) -> dict[str, Any]:
        return {
            "RuleConfigurationName": self.name,
            "RuleEvaluatorImage": self.image,
            "RuleParameters": dict(self.parameters),
        }


def rule_spec(value: object, where: str) -> RuleSpec:
    """A RuleSpec from a DebugRuleConfiguration dict."""
    if not isinstance(value, dict):
        raise LaunchConfigError(f"{where} must be a DebugRuleConfiguration object, not {type(value).__name__}")
    unknown = set(value) - _RULE_KEYS
    if unknown:
        raise LaunchConfigError(f"{where}: unknown member {sorted(unknown)[0]!r} of a DebugRuleConfiguration")
    name = value.get("RuleConfigurationName")
    if not isinstance(name, str) or not _NAME.match(name):
        raise LaunchConfigError(
            f"{where}: RuleConfigurationName {name!r} must be 1 to 256 letters, digits, '-', '_' or '.'"
        )
    params = string_map(value.get("RuleParameters"), f"RuleParameters of rule {name} ({where})", MAX_RULE_PARAMS)
    if not params.get("rule_to_invoke", "").strip():
        raise LaunchConfigError(f"{where}: rule {name} has no RuleParameters.rule_to_invoke")
    image = value.get("RuleEvaluatorImage") or BUILTIN_IMAGE
    if not isinstance(image, str):
        raise LaunchConfigError(f"{where}: RuleEvaluatorImage of rule {name} must be a string")
    builtin = image == BUILTIN_IMAGE or _BUILTIN_IMAGE.search(image)
    if "source_s3_uri" in params:
        if builtin and image != BUILTIN_IMAGE:
            raise LaunchConfigError(f"{where}: rule {name} names the built-in rules image and a source_s3_uri")
    elif not builtin:
        raise LaunchConfigError(
            f"{where}: rule {name} runs in the container image {image!r}; container images "
            "are not run here: give the rule's Python file as RuleParameters.source_s3_uri"
        )
    return RuleSpec(name=name, parameters=params, image=image, where=where)


@dataclass
class JobSpec:
    """Everything a launch needs, normalised; ``hook_config()`` is the in-job debughookconfig.json."""

    name: str
    out_dir: str
    s3_output_path: str | None = None
    hook_parameters: dict[str, str] = field(default_factory=dict)
    collections: list[Collection] = field(default_factory=list)
    rules: list[RuleSpec] = field(default_factory=list)
    tensorboard: dict[str, str] | None = None
    profiler: dict[str, Any] | None = None  # the job's profilerconfig.json (smdebug.launch.profiling)
    profiler_rules: list[RuleSpec] = field(default_factory=list)  # RuleSpecs of ProfilerRuleConfigurations
    profiling_auto: bool = False  # profiling was switched on because a profiler rule needs it
    schedule_notes: list[str] = field(default_factory=list)  # the save intervals chosen for the rules (launch.schedule)

    def hook_config(self) -> dict[str, Any]:
        hp = dict(self.hook_parameters)
        if self.tensorboard and self.tensorboard.get("LocalPath"):
            hp.setdefault("export_tensorboard", "true")
            hp.setdefault("tensorboard_dir", self.tensorboard["LocalPath"])
        doc = {
            "S3OutputPath": self.s3_output_path,
            "LocalPath": self.out_dir,
            "HookParameters": hp or None,
            "CollectionConfigurations": [dict(c) for c in self.collections] or None,
        }
        return doc

    def hook_config_json(self) -> str:
        return json.dumps(self.hook_config(), indent=2, sort_keys=True) + "\n"

    def request_dict(self) -> dict[str, Any]:
        """The CreateTrainingJob members this spec stands for."""
        hook = {k: v for k, v in self.hook_config().items() if v is not None}
        out = {
            "TrainingJobName": self.name,
            "DebugHookConfig": hook,
            "DebugRuleConfigurations": [r.to_request_dict() for r in self.rules],
        }
        if self.tensorboard:
            out["TensorBoardOutputConfig"] = dict(self.tensorboard)
        if self.profiler:
            out["ProfilerConfig"] = dict(self.profiler)
            out["ProfilerRuleConfigurations"] = [r.to_request_dict() for r in self.profiler_rules]
        return out


MAX_JSON_BYTES = 16 << 20  # a request or hook configuration is a few KiB


def read_json_file(path: str, what: str) -> bytes:
    """The bytes of a configuration file, which must be a regular file of at most MAX_JSON_BYTES
    (``--config /dev/zero`` would read until memory runs out)."""
    import stat

    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise LaunchConfigError(f"{what} {path} is not a regular file")
            if st.st_size > MAX_JSON_BYTES:
                raise LaunchConfigError(
                    f"{what} {path} is {st.st_size} bytes; a configuration file may hold "
                    f"{MAX_JSON_BYTES >> 20} MiB at most"
                )
            return f.read(MAX_JSON_BYTES + 1)
    except OSError as exc:
        raise LaunchConfigError(f"{what} {path}: {exc.strerror or exc}") from None


def parse_json(text: str | bytes, source: str) -> Any:
    """JSON text read from ``source``, or a LaunchConfigError naming it (deep nesting included)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise LaunchConfigError(f"{source}: JSON nested too deeply") from None
    except ValueError as exc:
        raise LaunchConfigError(f"{source} is not valid JSON: {exc}") from None


_JOB_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")  # SageMaker's TrainingJobName


def check_name(name: object, where: str = "--name") -> str:
    """A job name as SageMaker takes it (letters, digits and dashes, 63 at most): it names the run's
    folder under smdebug-runs/, so ``../../x`` never writes outside it."""
    if not isinstance(name, str) or not _JOB_NAME.match(name):
        raise LaunchConfigError(
            f"{where} {name!r}: a job name is 1 to 63 letters, digits and dashes, starting "
            "and ending with a letter or digit"
        )
    return name


def check_seconds(value: Any, where: str) -> float:
    """A duration in seconds given as ``where`` (``--stop-grace``): finite and not negative."""
    import math

    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise LaunchConfigError(f"{where} {value!r}: expected a number of seconds") from None
    if not math.isfinite(seconds) or seconds < 0:
        raise LaunchConfigError(f"{where} {value!r}: expected a finite number of seconds, 0 or more")
    return seconds


def check_output(out_dir: str, where: str = "the output location") -> None:
    """Before the job starts: a local ``out_dir`` must be a folder (or creatable: its nearest existing
    parent is a writable folder); an object-store one must be listable (a missing bucket, refused
    access or bad credentials is found now, not after training). A LaunchConfigError says which."""
    from smdebug.storage import is_remote, open_store

    if is_remote(out_dir):
        try:
            open_store(out_dir).list("")
        except Exception as exc:  # noqa: BLE001 - the store's error names the bucket and the cause
            raise LaunchConfigError(f"{where} {out_dir}: {exc}") from None
        return
    path = os.path.abspath(out_dir[len("file://") :] if out_dir.startswith("file://") else out_dir)
    probe = path
    while not os.path.exists(probe):
        probe = os.path.dirname(probe)
    if not os.path.isdir(probe):
        raise LaunchConfigError(f"{where} {out_dir}: {probe} is not a folder")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise LaunchConfigError(f"{where} {out_dir}: {probe} is not writable")


def check_hook_values(doc: dict[str, Any], where: str) -> None:
    """The hook parameters or a collection entry of ``doc`` (a DebugHookConfig's members), read by
    the parser the job's hook uses (core.config.hook_config), before the job starts: a bad value,
    an unknown key or an unknown collection without include_regex is a LaunchConfigError naming
    ``where`` (the flag or file), where the hook would log it and leave it out."""
    import difflib

    from smdebug.core.config.collection import CollectionKeys
    from smdebug.core.config.hook_config import parse_hook_config
    from smdebug.exceptions import SMDebugValueError

    known = frozenset(v for k, v in vars(CollectionKeys).items() if k.isupper())
    unknown: list[str] = []
    try:
        parse_hook_config({**doc, "LocalPath": "."}, where, known_collections=known, unknown=unknown)
    except SMDebugValueError as exc:
        text = str(exc).replace(f" of {where}", "").replace(f" in {where}", "")
        if "expected a collection of this framework" in text:
            name = doc["CollectionConfigurations"][0]["CollectionName"]
            near = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.7)
            hint = f"did you mean {near[0]}? " if near else ""
            text = (
                f"no collection {name!r}: {hint}the hooks' collections are {', '.join(sorted(known))}; another "
                "name needs an include_regex saying what it holds"
            )
        raise LaunchConfigError(f"{where}: {text}") from None
    if unknown:
        key = unknown[0].rpartition(".")[2]
        from smdebug.core.config.hook_config_values import REDUCTION_KEYS, SAVE_KEYS

        choices = sorted(
            {
                *SAVE_KEYS,
                *REDUCTION_KEYS,
                "include_regex",
                "save_histogram",
                "include_workers",
                "save_all",
                "dry_run",
                "export_tensorboard",
                "tensorboard_dir",
            }
        )
        near = difflib.get_close_matches(key, choices, n=1, cutoff=0.7)
        raise LaunchConfigError(f"{where}: unknown parameter {key!r}" + (f" (did you mean {near[0]}?)" if near else ""))


class SpecBuilder:
    """Collects hook settings, collections and rules from any input, then checks them as a whole."""

    def __init__(self, profiler_rule_spec: Callable[[Any, str], RuleSpec] | None = None) -> None:
        """``profiler_rule_spec(value, where)`` checks a ProfilerRuleConfiguration against the profiler
        rules (smdebug.launch.profiler_jobs.profiler_rule_spec; given by the caller, which knows them)."""
        self._profiler_rule_spec = profiler_rule_spec
        self.hook_parameters: dict[str, str] = {}
        self._hook_where: str | None = None
        self.local_path: str | None = None
        self.s3_output_path: str | None = None
        self.collections: list[Collection] = []
        self._collection_keys: set[tuple[str, bool]] = set()  # (name, added by a rule)
        self.rules: list[RuleSpec] = []
        self.tensorboard: dict[str, str] | None = None
        self.name: str | None = None
        self.profiler_config: tuple[Any, str] | None = None  # (document, where) of a request's ProfilerConfig
        self.profiler_rules: list[RuleSpec] = []  # ProfilerRuleConfigurations, checked

    def add_hook_config(self, doc: object, where: str) -> None:
        """A DebugHookConfig or a debughookconfig.json document."""
        if not isinstance(doc, dict):
            raise LaunchConfigError(f"{where} must be a DebugHookConfig object, not {type(doc).__name__}")
        if self._hook_where is not None:
            raise LaunchConfigError(f"a hook configuration is given twice: in {self._hook_where} and in {where}")
        self._hook_where = where
        unknown = set(doc) - _HOOK_KEYS
        if unknown:
            raise LaunchConfigError(
                f"{where}: unknown member {sorted(unknown)[0]!r} of a DebugHookConfig "
                f"(allowed: {', '.join(sorted(_HOOK_KEYS))})"
            )
        for key in ("S3OutputPath", "LocalPath"):
            if doc.get(key) is not None and not isinstance(doc[key], str):
                raise LaunchConfigError(f"{where}: {key} must be a path string")
        self.s3_output_path = doc.get("S3OutputPath") or None
        self.local_path = doc.get("LocalPath") or None
        self.add_hook_parameters(doc.get("HookParameters"), f"HookParameters of {where}")
        colls = doc.get("CollectionConfigurations")
        if colls is not None and not isinstance(colls, list):
            raise LaunchConfigError(f"{where}: CollectionConfigurations must be a list")
        for i, c in enumerate(colls or []):
            self.add_collection(c, f"CollectionConfigurations[{i}] of {where}")

    def add_hook_parameters(self, params: object, where: str) -> None:
        params = string_map(params, where, MAX_MAP)
        check_hook_values({"HookParameters": params}, where)
        for k, v in params.items():
            if k in self.hook_parameters and self.hook_parameters[k] != v:
                raise LaunchConfigError(
                    f"{where}: hook parameter {k} is set twice ({self.hook_parameters[k]!r} and {v!r})"
                )
            self.hook_parameters[k] = v

    def add_collection(self, value: object, where: str, from_rule: bool = False) -> None:
        """One entry per collection name. SageMaker's SDK sends every distinct (name, parameters)
        pair and the hook keeps the last one it reads, so a rule's default (``losses`` every 500
        steps) could silently replace the user's ``losses:save_interval=10``. Here the user's
        entries (flags, DebugHookConfig) win over the collections a rule asks for, a later user
        entry's parameters update an earlier one's, and a rule's entry only adds a name not yet
        configured."""
        entry = collection_entry(value, where)
        check_hook_values({"CollectionConfigurations": [entry]}, where)
        name = entry["CollectionName"]
        current = next((c for c in self.collections if c["CollectionName"] == name), None)
        if current is None:
            self.collections.append(entry)
            self._collection_keys.add((name, from_rule))
            return
        if from_rule:
            return  # configured already (by the user, or by an earlier rule)
        if (name, True) in self._collection_keys:  # a rule's default, replaced by the user's entry
            self._collection_keys.discard((name, True))
            self._collection_keys.add((name, False))
            self.collections[self.collections.index(current)] = entry
            return
        params = {**current.get("CollectionParameters", {}), **entry.get("CollectionParameters", {})}
        if params:
            current["CollectionParameters"] = params

    def add_rule(self, value: object, where: str, collections: object = None) -> RuleSpec:
        spec = rule_spec(value, where)
        self.rules.append(spec)
        if collections is not None and not isinstance(collections, list):
            raise LaunchConfigError(f"{where}: the rule's CollectionConfigurations must be a list")
        for i, c in enumerate(collections or []):
            self.add_collection(c, f"collection {i} of rule {spec.name} ({where})", from_rule=True)
        return spec

    def add_tensorboard(self, doc: object, where: str) -> None:
        if not isinstance(doc, dict) or not isinstance(doc.get("LocalPath") or doc.get("S3OutputPath"), str):
            raise LaunchConfigError(f"{where}: TensorBoardOutputConfig needs a LocalPath or S3OutputPath string")
        self.tensorboard = {k: doc[k] for k in ("LocalPath", "S3OutputPath") if isinstance(doc.get(k), str)}

    def add_request(self, doc: object, where: str) -> None:
        """A CreateTrainingJob request (or DescribeTrainingJob response): its Debug* and Profiler* members
        (the latter checked by :func:`smdebug.launch.inputs.build_spec`)."""
        if not isinstance(doc, dict):
            raise LaunchConfigError(f"{where} must hold a JSON object (a CreateTrainingJob request)")
        known = {
            "DebugHookConfig",
            "DebugRuleConfigurations",
            "TensorBoardOutputConfig",
            "ProfilerConfig",
            "ProfilerRuleConfigurations",
        }
        if not known & set(doc):
            raise LaunchConfigError(
                f"{where} has none of {', '.join(sorted(known))}: not a CreateTrainingJob "
                "request with a debugger configuration"
            )
        if isinstance(doc.get("TrainingJobName"), str):
            self.name = doc["TrainingJobName"]
        if doc.get("DebugHookConfig") is not None:
            self.add_hook_config(doc["DebugHookConfig"], f"DebugHookConfig of {where}")
        rules = doc.get("DebugRuleConfigurations") or []
        if not isinstance(rules, list):
            raise LaunchConfigError(f"{where}: DebugRuleConfigurations must be a list")
        for i, r in enumerate(rules):
            self.add_rule(r, f"DebugRuleConfigurations[{i}] of {where}")
        if doc.get("TensorBoardOutputConfig") is not None:
            self.add_tensorboard(doc["TensorBoardOutputConfig"], f"TensorBoardOutputConfig of {where}")
        if doc.get("ProfilerConfig") is not None:
            self.profiler_config = (doc["ProfilerConfig"], f"ProfilerConfig of {where}")
        if doc.get("ProfilerRuleConfigurations") is not None:
            rules = doc["ProfilerRuleConfigurations"]
            if not isinstance(rules, list):
                raise LaunchConfigError(f"{where}: ProfilerRuleConfigurations must be a list")
            if len(rules) > MAX_RULES:
                raise LaunchConfigError(f"{where}: {len(rules)} profiler rules; SageMaker allows at most {MAX_RULES}")
            for i, r in enumerate(rules):
                self.add_profiler_rule(r, f"ProfilerRuleConfigurations[{i}] of {where}")

    def add_profiler_rule(self, value: object, where: str) -> RuleSpec:
        """A ProfilerRuleConfiguration dict (checked against the profiler rules)."""
        if self._profiler_rule_spec is None:
            raise LaunchConfigError(f"{where}: this configuration takes no profiler rule")
        spec = self._profiler_rule_spec(value, where)
        self.profiler_rules.append(spec)
        return spec

    def add_action(self, action_json: dict[str, str], where: str) -> None:
        """Add an action (``{"name": "StopTraining"}``) to every rule's action_json (profiler rules'
        too), once."""
        from smdebug.rules.actions import parse_actions

        for r in [*self.rules, *self.profiler_rules]:
            current = r.parameters.get("action_json", "")
            specs = parse_actions(current, r.name)
            kind = action_json["name"].lower()
            if any(s.kind == kind and s.params == {k: v for k, v in action_json.items() if k != "name"} for s in specs):
                continue
            items = json.loads(current.replace('\\"', '"')) if current.strip() else []
            items = [items] if isinstance(items, dict) else items
            r.parameters["action_json"] = json.dumps([*items, action_json])

    def build(self, name: str, out_dir: str | None, default_out_dir: str | None = None) -> JobSpec:
        """The checked spec. The trial goes to ``out_dir`` (--out-dir), else the configuration's
        LocalPath, else ``<S3OutputPath>/<job>/debug-output``, else ``default_out_dir``."""
        if len(self.rules) > MAX_RULES:
            raise LaunchConfigError(f"{len(self.rules)} rules; SageMaker allows at most {MAX_RULES}")
        if len(self.profiler_rules) > MAX_RULES:
            raise LaunchConfigError(f"{len(self.profiler_rules)} profiler rules; SageMaker allows at most {MAX_RULES}")
        seen: dict[str, str] = {}
        for r in [*self.rules, *self.profiler_rules]:  # one rule-output/<name>/ each
            if r.name in seen:
                raise LaunchConfigError(
                    f"two rules are named {r.name} ({seen[r.name]} and {r.where}): RuleConfigurationName must be unique"
                )
            seen[r.name] = r.where
        if len(self.collections) > MAX_COLLECTIONS:
            names = ", ".join(c["CollectionName"] for c in self.collections)
            raise LaunchConfigError(
                f"{len(self.collections)} collection configurations ({names}); SageMaker "
                f"allows at most {MAX_COLLECTIONS}"
            )
        if len(self.hook_parameters) > MAX_MAP:
            raise LaunchConfigError(f"{len(self.hook_parameters)} hook parameters; SageMaker allows {MAX_MAP}")
        job = check_name(self.name, "TrainingJobName") if self.name else name
        if out_dir is None:
            if self.local_path is not None:
                out_dir = self.local_path
            elif self.s3_output_path is not None:
                out_dir = f"{self.s3_output_path.rstrip('/')}/{job}/debug-output"
        out_dir = out_dir or default_out_dir
        if out_dir is None:
            raise LaunchConfigError("no output folder: give --out-dir (or LocalPath / S3OutputPath)")
        from smdebug.launch.schedule import choose_intervals

        collections = [dict(c) for c in self.collections]
        notes = choose_intervals(
            collections, {n for n, from_rule in self._collection_keys if from_rule}, self.rules, self.hook_parameters
        )
        return JobSpec(
            name=job,
            out_dir=out_dir,
            s3_output_path=self.s3_output_path,
            hook_parameters=dict(self.hook_parameters),
            collections=collections,
            rules=list(self.rules),
            tensorboard=self.tensorboard,
            profiler_rules=list(self.profiler_rules),
            schedule_notes=notes,
        )
