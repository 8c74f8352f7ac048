"""The values of SageMaker's hook JSON (see core.config.hook_config): integers, lists, booleans, regexes,
save schedules and reduction configs as SageMaker writes them (strings) or as JSON values, each
error naming the file, the section and the key."""

from __future__ import annotations

from typing import Any

from smdebug.codec.values import parse_bool
from smdebug.core.config.reduction_config import ReductionConfig
from smdebug.core.config.save_config import SaveConfig, SaveConfigMode
from smdebug.core.modes import ModeKeys
from smdebug.exceptions import SMDebugValueError

__all__ = ["ValueParser", "SAVE_KEYS", "PREFIXES", "REDUCTION_KEYS"]

SAVE_KEYS = ("save_interval", "save_steps", "start_step", "end_step")
PREFIXES = {"train": ModeKeys.TRAIN, "eval": ModeKeys.EVAL, "predict": ModeKeys.PREDICT, "global": ModeKeys.GLOBAL}
REDUCTION_KEYS = ("reductions", "save_raw_tensor", "save_shape")


class ValueParser:
    """Parses one document; ``where`` (a file path) goes into every error message."""

    def __init__(self, where: str, default_values: dict | None, strict: bool = True):
        self.where = where
        self.default_values = default_values
        self.strict = strict  # raise the first problem; else collect them in problems
        self.problems: list[str] = []
        self.unknown: list[str] = []

    def report(self, exc: SMDebugValueError) -> None:
        if self.strict:
            raise exc
        self.problems.append(str(exc))

    def attempt(self, parse, default=None):
        """``parse()``, or (not strict) ``default`` with the problem recorded."""
        try:
            return parse()
        except SMDebugValueError as exc:
            self.report(exc)
            return default

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
        try:
            return parse_bool(value)
        except ValueError:
            raise self.error(section, key, value, "true or false (or 1/0)") from None

    def str_list(self, section: str, key: str, value: Any) -> list[str]:
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(x, str) for x in items):
            raise self.error(section, key, value, "a comma-separated list of strings")
        return [x.strip() for x in items if x.strip()]

    def regexes(self, section: str, key: str, value: Any) -> list[str]:
        """The patterns that compile (a pattern that does not is a problem)."""
        from smdebug.patterns import PatternError
        from smdebug.patterns import compile as compile_pattern

        out = []
        for pattern in self.str_list(section, key, value):
            try:  # refused here when RE2 cannot run it in linear time (smdebug/patterns.py)
                compile_pattern(pattern, arg=f"{key} in {section} of {self.where}")
            except PatternError as exc:
                self.report(SMDebugValueError(str(exc)))
                continue
            out.append(pattern)
        return out

    def save_modes(self, section: str, params: dict, known: set[str]) -> dict[ModeKeys, dict]:
        """Per mode, the save keys given: the mode's prefixed key wins over the plain one."""
        base: dict[str, Any] = {}
        per_mode: dict[ModeKeys | None, dict[str, Any]] = {m: {} for m in ModeKeys}  # (get(None): None)
        for key, value in params.items():
            prefix, dot, name = key.partition(".")
            target = per_mode.get(PREFIXES.get(prefix)) if dot else base
            name = name if dot else key
            if target is None or name not in SAVE_KEYS:
                if dot or key not in known:
                    self.unknown.append(f"{section}.{key}")
                continue
            try:
                target[name] = (
                    self.int_list(section, key, value) if name == "save_steps" else self.integer(section, key, value)
                )
            except SMDebugValueError as exc:
                self.report(exc)
        return {m: {**base, **per_mode[m]} for m in ModeKeys}

    def save_config(self, section: str, modes: dict[ModeKeys, dict]) -> SaveConfig:
        try:
            return SaveConfig(
                mode_save_configs={m: SaveConfigMode.from_dict(d, self.default_values) for m, d in modes.items()}
            )
        except SMDebugValueError as exc:
            raise SMDebugValueError(f"{exc} (in {section} of {self.where})") from None

    def reduction_config(self, section: str, params: dict, inherited: dict | None) -> ReductionConfig | None:
        given = {k: params[k] for k in REDUCTION_KEYS if k in params}
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
