"""The SageMaker hook JSON (docs/format.md section 8) parsed into plain settings a Hook is built from.

``{"LocalPath": ..., "HookParameters": {...}, "CollectionConfigurations": [{"CollectionName": ...,
"CollectionParameters": {...}}]}``. Parameter values are strings as SageMaker writes them
("true", "1,2,3", "10"); JSON booleans, numbers and lists are accepted too. Save-schedule keys may
carry a ``train.`` / ``eval.`` / ``predict.`` / ``global.`` prefix that applies to that mode only;
collection parameters override the hook's for that collection only.

The whole document is checked when the hook is built (regexes compiled, collection names known to
the framework or given an ``include_regex``, schedules that save something). Each problem names
the file and the key. With errors propagating ($SMDEBUG_PROPAGATE_ERRORS) the first one is
raised; otherwise they are logged once and what is valid is used: a bad hook parameter is left
out (its default applies, a bad ``include_regex`` pattern is dropped), a collection entry with a
problem is left out (not saved). A document that cannot be read as a whole (not JSON, nested
too deeply, not an object, a bad ``LocalPath``, a section of the wrong type) is always an error.
"""

from __future__ import annotations

import json
import logging
import os
import stat
from dataclasses import dataclass, field
from typing import Any

from smdebug.core.config.hook_config_values import REDUCTION_KEYS, ValueParser
from smdebug.core.config.hook_options import HookOptions
from smdebug.core.config.reduction_config import ReductionConfig
from smdebug.core.config.save_config import SaveConfig
from smdebug.core.modes import ModeKeys
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


def _section(parent: dict, key: str, kind: type, where: str) -> Any:
    value = parent.get(key)
    if value is None:  # absent or JSON null
        return kind()
    if not isinstance(value, kind):
        raise SMDebugValueError(f"{key} in {where} must be a JSON {'object' if kind is dict else 'array'}")
    return value


def _decode(data: bytes | str | dict, where: str) -> dict:
    if not isinstance(data, dict):
        try:
            data = json.loads(data)
        except (ValueError, UnicodeDecodeError) as exc:
            raise SMDebugValueError(f"{where} is not valid JSON: {exc}") from None
        except RecursionError:
            raise SMDebugValueError(f"{where} is nested too deeply to be a hook config") from None
    if not isinstance(data, dict):
        raise SMDebugValueError(f"{where} must hold a JSON object, not {type(data).__name__}")
    return data


def _workers(p: ValueParser, hp: dict) -> str:
    workers = hp.get("include_workers") or "one"
    if not isinstance(workers, str) or workers.strip().lower() not in ("one", "all"):
        raise p.error("HookParameters", "include_workers", workers, '"one" or "all"')
    return workers.strip().lower()


def _tensorboard_dir(p: ValueParser, hp: dict) -> str | None:
    tb_dir = hp.get("tensorboard_dir")
    if tb_dir is not None and not isinstance(tb_dir, str):
        raise p.error("HookParameters", "tensorboard_dir", tb_dir, "a path")
    return tb_dir


def _collection(
    p: ValueParser, i: int, entry: Any, hook_modes: dict, hook_reductions: dict | None, known: frozenset | None
) -> CollectionSettings:
    if not isinstance(entry, dict) or not isinstance(entry.get("CollectionName"), str):
        raise SMDebugValueError(f"CollectionConfigurations[{i}] in {p.where} must have a 'CollectionName' string")
    name = entry["CollectionName"]
    sec = f"CollectionParameters of collection {name!r}"
    cp = _section(entry, "CollectionParameters", dict, f"collection {name!r} of {p.where}")
    modes = p.save_modes(sec, cp, _COLLECTION_KEYS | set(REDUCTION_KEYS))
    regexes = p.regexes(sec, "include_regex", cp["include_regex"]) if "include_regex" in cp else None
    if known is not None and name not in known and not regexes:
        raise SMDebugValueError(
            f"CollectionName={name!r} in CollectionConfigurations[{i}] of {p.where}: expected a collection of "
            f"this framework ({', '.join(sorted(known))}) or an include_regex saying what it holds"
        )
    return CollectionSettings(
        name=name,
        include_regex=regexes,
        save_config=p.save_config(sec, {m: {**hook_modes[m], **modes[m]} for m in ModeKeys}),
        reduction_config=p.reduction_config(sec, cp, hook_reductions),
        save_histogram=p.boolean(sec, "save_histogram", cp.get("save_histogram"), None),
    )


_FAILED = object()


def parse_hook_config(
    data: bytes | str | dict,
    where: str = "<hook config>",
    *,
    default_values: dict | None = None,
    known_collections: frozenset | None = None,
    problems: list[str] | None = None,
    unknown: list[str] | None = None,
) -> HookSettings:
    """Parse a hook JSON document (bytes, text or an already-decoded dict).

    ``default_values`` (save_interval, start_step, end_step, save_steps) replace SaveConfigMode's
    defaults where the document gives none, as 1.0.34's XGBoost hook does (save_interval 10).
    ``known_collections``: the framework's collection names; another name needs an include_regex.
    ``problems``: when a list, a problem in a parameter or a collection entry is appended to it
    and left out (see the module docstring) instead of raised. ``unknown``: when a list, the
    unknown keys (``"HookParameters.save_intervl"``) go to it instead of a logged warning.
    """
    data = _decode(data, where)
    p = ValueParser(where, default_values, strict=problems is None)
    hp = _section(data, "HookParameters", dict, where)
    sec = "HookParameters"
    out_dir = data.get("LocalPath") or DEFAULT_OUT_DIR
    if not isinstance(out_dir, str):
        raise SMDebugValueError(f"LocalPath={out_dir!r} in {where}: expected a path")
    hook_modes = p.save_modes(sec, hp, _HOOK_KEYS | set(REDUCTION_KEYS))
    save_config = p.attempt(lambda: p.save_config(sec, hook_modes))
    if save_config is None:  # the hook's schedule is left out: every collection gets the default one
        hook_modes = {m: {} for m in ModeKeys}
        save_config = p.save_config(sec, hook_modes)
    reduction_config = p.attempt(lambda: p.reduction_config(sec, hp, None), _FAILED)
    hook_reductions = {k: hp[k] for k in REDUCTION_KEYS if k in hp} or None
    if reduction_config is _FAILED:
        reduction_config = hook_reductions = None
    settings = HookSettings(
        out_dir=out_dir,
        export_tensorboard=p.attempt(lambda: p.boolean(sec, "export_tensorboard", hp.get("export_tensorboard")), False),
        tensorboard_dir=p.attempt(lambda: _tensorboard_dir(p, hp)),
        dry_run=p.attempt(lambda: p.boolean(sec, "dry_run", hp.get("dry_run")), False),
        save_config=save_config,
        reduction_config=reduction_config,
        include_regex=p.attempt(lambda: p.regexes(sec, "include_regex", hp["include_regex"]))
        if "include_regex" in hp
        else None,
        include_workers=p.attempt(lambda: _workers(p, hp), "one"),
        save_all=p.attempt(lambda: p.boolean(sec, "save_all", hp.get("save_all")), False),
    )
    for i, entry in enumerate(_section(data, "CollectionConfigurations", list, where)):
        before = len(p.problems)
        cs = p.attempt(
            lambda i=i, entry=entry: _collection(p, i, entry, hook_modes, hook_reductions, known_collections)
        )
        if cs is None or len(p.problems) > before:
            name = entry.get("CollectionName") if isinstance(entry, dict) else None
            p.problems[-1] += f" (collection {name!r} is left out: not saved)"
            continue
        settings.include_collections.append(cs.name)
        settings.collections.append(cs)
    if unknown is not None:
        unknown.extend(p.unknown)
    elif p.unknown:
        logger.warning("smdebug: ignoring unknown hook parameters in %s: %s", where, ", ".join(p.unknown))
    if problems is not None:
        problems.extend(p.problems)
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


def _not_a_file(path: str) -> str | None:
    """Why ``path`` cannot be read as a hook config, or None when it can."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "does not exist"
    except OSError as exc:
        return f"cannot be read: {exc}"
    if stat.S_ISDIR(mode):
        return "is a folder, not a file"
    if not stat.S_ISREG(mode):
        return f"is not a regular file ({stat.filemode(mode)})"
    return None


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
    doc = _decode(_read(path), path)
    return doc.get("LocalPath")


def load_hook_config(
    path: str | None = None,
    *,
    default_values: dict | None = None,
    known_collections: frozenset | None = None,
    problems: list[str] | None = None,
) -> HookSettings | None:
    """Read the hook JSON at ``path`` or, when None, at :func:`config_file_path`.

    Returns None when no file applies (nothing configured, or $SMDEBUG_CONFIG_FILE_PATH names a
    missing file: logged). An explicit ``path`` that is not a readable file (missing, a folder)
    raises SMDebugValueError saying which. On SageMaker, TensorBoard export follows SageMaker's
    TensorBoard config file, as in 1.0.34. ``known_collections``, ``problems``: see
    :func:`parse_hook_config`.
    """
    if path is not None:
        why = _not_a_file(path)
        if why:
            raise SMDebugValueError(f"hook config file {path} {why}")
    else:
        path = config_file_path()
        if path is None:
            return None
        why = _not_a_file(path)
        if why:
            logger.warning("smdebug: %s=%s %s; no hook is configured", CONFIG_FILE_PATH_ENV, path, why)
            return None
    settings = parse_hook_config(
        _read(path), path, default_values=default_values, known_collections=known_collections, problems=problems
    )
    logger.info("smdebug: hook configured from %s", path)
    if is_sagemaker_job():
        settings.tensorboard_dir = _sagemaker_tensorboard_dir()
        settings.export_tensorboard = settings.tensorboard_dir is not None
    return settings
