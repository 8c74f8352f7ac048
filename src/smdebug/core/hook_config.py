"""The SageMaker hook JSON (format.md section 8) parsed into plain settings a Hook is built from.

``{"LocalPath": ..., "HookParameters": {...}, "CollectionConfigurations": [{"CollectionName": ...,
"CollectionParameters": {...}}]}``. Parameter values are strings as SageMaker writes them
("true", "1,2,3", "10"); JSON booleans, numbers and lists are accepted too. Save-schedule keys may
carry a ``train.`` / ``eval.`` / ``predict.`` / ``global.`` prefix that applies to that mode only;
collection parameters override the hook's for that collection only.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from typing import Any

from smdebug.core.hook_options import HookOptions
from smdebug.core.modes import ModeKeys
from smdebug.core.reduction_config import ReductionConfig
from smdebug.core.save_config import SaveConfig, SaveConfigMode
from smdebug.exceptions import SMDebugValueError

__all__ = [
    "DEFAULT_CONFIG_PATH",
    "CONFIG_FILE_PATH_ENV",
    "TENSORBOARD_CONFIG_FILE_PATH_ENV",
    "DEFAULT_TENSORBOARD_CONFIG_PATH",
    "DEFAULT_OUT_DIR",
    "CollectionSettings",
    "HookSettings",
    "config_file_path",
    "parse_hook_config",
    "load_hook_config",
    "is_sagemaker_job",
]

DEFAULT_CONFIG_PATH = "/opt/ml/input/config/debughookconfig.json"
CONFIG_FILE_PATH_ENV = "SMDEBUG_CONFIG_FILE_PATH"
TENSORBOARD_CONFIG_FILE_PATH_ENV = "TENSORBOARD_CONFIG_FILE_PATH"
DEFAULT_TENSORBOARD_CONFIG_PATH = "/opt/ml/input/config/tensorboardoutputconfig.json"
DEFAULT_OUT_DIR = "/opt/ml/output/tensors"  # used when LocalPath is absent, as in 1.0.34

logger = logging.getLogger(__name__)

_SAVE_KEYS = ("save_interval", "save_steps", "start_step", "end_step")
_PREFIXES = {"train": ModeKeys.TRAIN, "eval": ModeKeys.EVAL, "predict": ModeKeys.PREDICT, "global": ModeKeys.GLOBAL}
_REDUCTION_KEYS = ("reductions", "save_raw_tensor", "save_shape")
_HOOK_KEYS = {"include_regex", "include_workers", "save_all", "dry_run", "export_tensorboard", "tensorboard_dir"}
_COLLECTION_KEYS = {"include_regex", "save_histogram"}


@dataclass
class CollectionSettings:
    name: str
    include_regex: list[str] | None = None
    save_config: SaveConfig | None = None
    reduction_config: ReductionConfig | None = None
    save_histogram: bool | None = None


@dataclass
class HookSettings(HookOptions):
    """The hook options a JSON document gives (HookOptions, declared there) plus its collections."""

    include_collections: list[str] = field(default_factory=list)
    collections: list[CollectionSettings] = field(default_factory=list)

    def hook_kwargs(self) -> dict:
        """Keyword arguments for a ``Hook(...)`` constructor (collections are applied separately)."""
        # an empty list and None both mean "the framework's defaults" to a 1.0.34 hook
        return {**self.kwargs(), "include_collections": list(self.include_collections) or None}


class _Parser:
    """Parses one document; ``where`` (a file path) goes into every error message."""

    def __init__(self, where: str, default_values: dict | None):
        self.where = where
        self.default_values = default_values
        self.unknown: list[str] = []

    def error(self, section: str, key: str, value: Any, expected: str) -> SMDebugValueError:
        return SMDebugValueError(f"{key}={value!r} in {section} of {self.where}: expected {expected}")

    def integer(self, section: str, key: str, value: Any) -> int | None:
        if value is None:  # JSON null: the SaveConfigMode default, as in 1.0.34
            return None
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str):
            try:
                return int(value.strip())
            except ValueError:
                pass
        raise self.error(section, key, value, "an integer")

    def int_list(self, section: str, key: str, value: Any) -> list[int]:
        items = value.split(",") if isinstance(value, str) else value if isinstance(value, list) else [value]
        out = []
        for item in items:
            if isinstance(item, str) and not item.strip():
                continue
            parsed = self.integer(section, key, item)
            if parsed is None:
                raise self.error(section, key, value, "a comma-separated list of integers")
            out.append(parsed)
        return out

    def boolean(self, section: str, key: str, value: Any, default: bool | None = False) -> bool | None:
        if value is None:  # absent or JSON null
            return default
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise self.error(section, key, value, '"true" or "false"')

    def str_list(self, section: str, key: str, value: Any) -> list[str]:
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(x, str) for x in items):
            raise self.error(section, key, value, "a comma-separated list of strings")
        return [x.strip() for x in items if x.strip()]

    def save_modes(self, section: str, params: dict, known: set[str]) -> dict[ModeKeys, dict]:
        """Per mode, the save keys given: the mode's prefixed key wins over the plain one."""
        base: dict[str, Any] = {}
        per_mode: dict[ModeKeys, dict[str, Any]] = {m: {} for m in ModeKeys}
        for key, value in params.items():
            prefix, dot, name = key.partition(".")
            target = per_mode.get(_PREFIXES.get(prefix)) if dot else base
            name = name if dot else key
            if target is None or name not in _SAVE_KEYS:
                if dot or key not in known:
                    self.unknown.append(f"{section}.{key}")
                continue
            target[name] = (
                self.int_list(section, key, value) if name == "save_steps" else self.integer(section, key, value)
            )
        return {m: {**base, **per_mode[m]} for m in ModeKeys}

    def save_config(self, section: str, modes: dict[ModeKeys, dict]) -> SaveConfig:
        try:
            return SaveConfig(
                mode_save_configs={m: SaveConfigMode.from_dict(d, self.default_values) for m, d in modes.items()}
            )
        except SMDebugValueError as exc:
            raise SMDebugValueError(f"{exc} (in {section} of {self.where})") from None

    def reduction_config(self, section: str, params: dict, inherited: dict | None) -> ReductionConfig | None:
        given = {k: params[k] for k in _REDUCTION_KEYS if k in params}
        for k in ("save_raw_tensor", "save_shape"):
            if k in given:
                given[k] = self.boolean(section, k, given[k])
        if not given:
            return None
        if "reductions" not in given:
            # flags without reductions: 1.0.34 drops them; we apply them to what would apply otherwise
            given = {"save_raw_tensor": True, **(inherited or {}), **given}
        if not isinstance(given.get("reductions", ""), str | list):
            raise self.error(section, "reductions", given["reductions"], "a comma-separated list of reductions")
        try:
            return ReductionConfig.from_dict(given)
        except SMDebugValueError as exc:
            raise SMDebugValueError(f"{exc} (in {section} of {self.where})") from None


def _section(parent: dict, key: str, kind: type, where: str) -> Any:
    value = parent.get(key)
    if value is None:  # absent or JSON null
        return kind()
    if not isinstance(value, kind):
        raise SMDebugValueError(f"{key} in {where} must be a JSON {'object' if kind is dict else 'array'}")
    return value


def parse_hook_config(
    data: bytes | str | dict, where: str = "<hook config>", *, default_values: dict | None = None
) -> HookSettings:
    """Parse a hook JSON document (bytes, text or an already-decoded dict).

    ``default_values`` (save_interval, start_step, end_step, save_steps) replace SaveConfigMode's
    defaults where the document gives none, as 1.0.34's XGBoost hook does (save_interval 10).
    """
    if not isinstance(data, dict):
        try:
            data = json.loads(data)
        except (ValueError, UnicodeDecodeError) as exc:
            raise SMDebugValueError(f"{where} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise SMDebugValueError(f"{where} must hold a JSON object, not {type(data).__name__}")
    p = _Parser(where, default_values)
    hp = _section(data, "HookParameters", dict, where)
    sec = "HookParameters"
    hook_modes = p.save_modes(sec, hp, _HOOK_KEYS | set(_REDUCTION_KEYS))
    workers = hp.get("include_workers") or "one"
    if not isinstance(workers, str) or workers.strip().lower() not in ("one", "all"):
        raise p.error(sec, "include_workers", workers, '"one" or "all"')
    tb_dir = hp.get("tensorboard_dir")
    if tb_dir is not None and not isinstance(tb_dir, str):
        raise p.error(sec, "tensorboard_dir", tb_dir, "a path")
    out_dir = data.get("LocalPath") or DEFAULT_OUT_DIR
    if not isinstance(out_dir, str):
        raise SMDebugValueError(f"LocalPath={out_dir!r} in {where}: expected a path")
    settings = HookSettings(
        out_dir=out_dir,
        export_tensorboard=p.boolean(sec, "export_tensorboard", hp.get("export_tensorboard")),
        tensorboard_dir=tb_dir,
        dry_run=p.boolean(sec, "dry_run", hp.get("dry_run")),
        save_config=p.save_config(sec, hook_modes),
        reduction_config=p.reduction_config(sec, hp, None),
        include_regex=p.str_list(sec, "include_regex", hp["include_regex"]) if "include_regex" in hp else None,
        include_workers=workers.strip().lower(),
        save_all=p.boolean(sec, "save_all", hp.get("save_all")),
    )
    hook_reduction_params = {k: hp[k] for k in _REDUCTION_KEYS if k in hp} or None
    for i, entry in enumerate(_section(data, "CollectionConfigurations", list, where)):
        if not isinstance(entry, dict) or not isinstance(entry.get("CollectionName"), str):
            raise SMDebugValueError(f"CollectionConfigurations[{i}] in {where} must have a 'CollectionName' string")
        name = entry["CollectionName"]
        sec = f"CollectionParameters of collection {name!r}"
        cp = _section(entry, "CollectionParameters", dict, f"collection {name!r} of {where}")
        modes = p.save_modes(sec, cp, _COLLECTION_KEYS | set(_REDUCTION_KEYS))
        settings.include_collections.append(name)
        settings.collections.append(
            CollectionSettings(
                name=name,
                include_regex=p.str_list(sec, "include_regex", cp["include_regex"]) if "include_regex" in cp else None,
                save_config=p.save_config(sec, {m: {**hook_modes[m], **modes[m]} for m in ModeKeys}),
                reduction_config=p.reduction_config(sec, cp, hook_reduction_params),
                save_histogram=p.boolean(sec, "save_histogram", cp.get("save_histogram"), None),
            )
        )
    if p.unknown:
        logger.warning("smdebug: ignoring unknown hook parameters in %s: %s", where, ", ".join(p.unknown))
    return settings


def is_sagemaker_job() -> bool:
    """True inside a SageMaker training job (TRAINING_JOB_NAME is set)."""
    return "TRAINING_JOB_NAME" in os.environ


def config_file_path() -> str | None:
    """$SMDEBUG_CONFIG_FILE_PATH if set, else DEFAULT_CONFIG_PATH if it exists, else None."""
    env = os.environ.get(CONFIG_FILE_PATH_ENV)
    if env:
        return env
    return DEFAULT_CONFIG_PATH if os.path.isfile(DEFAULT_CONFIG_PATH) else None


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise SMDebugValueError(f"cannot read hook config {path}: {exc}") from None


def _sagemaker_tensorboard_dir() -> str | None:
    """LocalPath of SageMaker's TensorBoard output config, or None when there is none."""
    path = os.environ.get(TENSORBOARD_CONFIG_FILE_PATH_ENV) or DEFAULT_TENSORBOARD_CONFIG_PATH
    if not os.path.isfile(path):
        return None
    try:
        doc = json.loads(_read(path))
    except ValueError as exc:
        raise SMDebugValueError(f"{path} is not valid JSON: {exc}") from None
    return doc.get("LocalPath") if isinstance(doc, dict) else None


def load_hook_config(path: str | None = None, *, default_values: dict | None = None) -> HookSettings | None:
    """Read the hook JSON at ``path`` or, when None, at :func:`config_file_path`.

    Returns None when no file applies (nothing configured, or $SMDEBUG_CONFIG_FILE_PATH names a
    missing file: logged). An explicit ``path`` that does not exist raises SMDebugValueError.
    On SageMaker, TensorBoard export follows SageMaker's TensorBoard config file, as in 1.0.34.
    """
    if path is not None:
        if not os.path.isfile(path):
            raise SMDebugValueError(f"hook config file {path} does not exist")
    else:
        path = config_file_path()
        if path is None:
            return None
        if not os.path.isfile(path):
            logger.warning("smdebug: %s=%s does not exist; no hook is configured", CONFIG_FILE_PATH_ENV, path)
            return None
    settings = parse_hook_config(_read(path), path, default_values=default_values)
    logger.info("smdebug: hook configured from %s", path)
    if is_sagemaker_job():
        settings.tensorboard_dir = _sagemaker_tensorboard_dir()
        settings.export_tensorboard = settings.tensorboard_dir is not None
    return settings


def create_hook(hook_cls, path: str | None = None, *, default_values: dict | None = None):
    """A ``hook_cls`` configured by the hook JSON that applies (see :func:`load_hook_config`,
    also for ``default_values``), with its collection settings applied; None when no file applies."""
    settings = load_hook_config(path, default_values=default_values)
    if settings is None:
        return None
    hook = hook_cls(**settings.hook_kwargs())
    for cs in settings.collections:
        c = hook.get_collection(cs.name)
        if cs.include_regex:
            c.include(cs.include_regex)
        if cs.save_config is not None:
            c.save_config = cs.save_config
        if cs.reduction_config is not None:
            c.reduction_config = cs.reduction_config
        if cs.save_histogram is not None:
            c.save_histogram = cs.save_histogram
    return hook
