"""When to save: SaveConfig (one SaveConfigMode per mode) and its JSON (docs/format.md section 7)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, overload

from smdebug.core.modes import ModeKeys
from smdebug.exceptions import SMDebugTypeError, SMDebugValueError
from smdebug.modes import parse_mode

__all__ = ["SaveConfig", "SaveConfigMode", "DEFAULT_SAVE_CONFIG_INTERVAL"]

DEFAULT_SAVE_CONFIG_INTERVAL = 500
DEFAULT_SAVE_CONFIG_START_STEP = 0
DEFAULT_SAVE_CONFIG_END_STEP = None
_PARAMS = ("save_interval", "save_steps", "start_step", "end_step")


def _as_int(name: str, value: Any, allow_none: bool = False) -> Any:
    if value is None and allow_none:
        return None
    try:
        if isinstance(value, bool):
            raise TypeError
        return int(value)
    except (TypeError, ValueError):
        raise SMDebugValueError(f"{name}={value!r} must be an integer") from None


class SaveConfigMode:
    """The schedule of one mode: save when ``step in save_steps`` or when
    ``start_step <= step < end_step`` and ``step % save_interval == 0``."""

    def __init__(
        self,
        save_interval: int | None = None,
        start_step: int | None = None,
        end_step: int | None = None,
        save_steps: Iterable[int] | None = None,
    ) -> None:
        self.save_interval = (
            DEFAULT_SAVE_CONFIG_INTERVAL if save_interval is None else _as_int("save_interval", save_interval)
        )
        if self.save_interval <= 0:
            raise SMDebugValueError(f"save_interval={self.save_interval} must be positive")
        if save_steps is None:
            save_steps = []
        elif isinstance(save_steps, str):
            save_steps = [s for s in save_steps.split(",") if s.strip()]
        if not isinstance(save_steps, (list, tuple, set)):
            raise SMDebugValueError(f"save_steps={save_steps!r} must be a list of integers")
        self.save_steps = [_as_int("save_steps", s) for s in save_steps]
        self.start_step = DEFAULT_SAVE_CONFIG_START_STEP if start_step is None else _as_int("start_step", start_step)
        self.end_step = _as_int("end_step", end_step, allow_none=True)
        if self.end_step is not None and self.start_step > self.end_step:
            raise SMDebugValueError(
                f"start_step={self.start_step} is after end_step={self.end_step}: no step would be saved"
            )
        self._save_steps_set = frozenset(self.save_steps)

    def should_save_step(self, step_num: int) -> bool:
        if step_num in self._save_steps_set:
            return True
        if step_num < self.start_step or (self.end_step is not None and step_num >= self.end_step):
            return False
        return step_num % self.save_interval == 0

    def to_json_dict(self) -> dict:
        return {
            "save_interval": self.save_interval,
            "save_steps": list(self.save_steps),
            "start_step": self.start_step,
            "end_step": self.end_step,
        }

    @overload
    @classmethod
    def from_dict(cls, params: dict[str, Any], default_values: dict[str, Any] | None = None) -> SaveConfigMode: ...
    @overload
    @classmethod
    def from_dict(cls, params: None, default_values: dict[str, Any] | None = None) -> None: ...
    @classmethod
    def from_dict(
        cls, params: dict[str, Any] | None, default_values: dict[str, Any] | None = None
    ) -> SaveConfigMode | None:
        if params is None:
            return None
        if not isinstance(params, dict):
            raise SMDebugTypeError(f"params={params!r} is not a dict")
        defaults = default_values or {}
        unknown = set(params) - set(_PARAMS)
        if unknown:
            raise SMDebugValueError(f"unknown SaveConfigMode keys {sorted(unknown)}; allowed: {_PARAMS}")
        return cls(**{k: params.get(k, defaults.get(k)) for k in _PARAMS})

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SaveConfigMode):
            return NotImplemented
        return self.to_json_dict() == other.to_json_dict()

    def __hash__(self) -> int:
        return hash((self.save_interval, tuple(self.save_steps), self.start_step, self.end_step))

    def __repr__(self) -> str:
        return (
            f"<class SaveConfig: save_interval={self.save_interval}, save_steps={self.save_steps}, "
            f"start_step={self.start_step}, end_step={self.end_step}>"
        )


class SaveConfig:
    """Maps each mode to a SaveConfigMode.

     ``SaveConfig(save_interval=10)`` applies to every mode;
     ``SaveConfig(mode_save_configs={ModeKeys.TRAIN: SaveConfigMode(...)})`` sets some modes and
    leaves the others None until :meth:`merge_default_save_config` fills them.
    """

    mode_save_configs: dict[ModeKeys, SaveConfigMode | None]

    def __init__(
        self,
        mode_save_configs: dict[ModeKeys, SaveConfigMode | None] | None = None,
        save_interval: int | None = None,
        start_step: int | None = None,
        end_step: int | None = None,
        save_steps: Iterable[int] | None = None,
    ) -> None:
        if mode_save_configs is None:
            one = SaveConfigMode(save_interval, start_step, end_step, save_steps)
            self.mode_save_configs = {m: one for m in ModeKeys}
            return
        for mode, value in mode_save_configs.items():
            if not isinstance(mode, ModeKeys) or not (value is None or isinstance(value, SaveConfigMode)):
                raise SMDebugValueError(f"mode_save_configs={mode_save_configs!r} must map ModeKeys to SaveConfigMode")
        self.mode_save_configs = {m: mode_save_configs.get(m) for m in ModeKeys}

    def get_save_config(self, mode: ModeKeys) -> SaveConfigMode:
        cfg = self.mode_save_configs[mode]
        if cfg is None:
            raise SMDebugValueError(f"SaveConfig has no schedule for mode {mode.name}")
        return cfg

    def set_save_config(self, mode: ModeKeys, save_config_mode: SaveConfigMode) -> None:
        if not isinstance(save_config_mode, SaveConfigMode):
            raise SMDebugValueError(f"save_config_mode={save_config_mode!r} must be a SaveConfigMode")
        self.mode_save_configs[mode] = save_config_mode

    def should_save_step(self, mode: ModeKeys, step_num: int) -> bool:
        return self.get_save_config(mode).should_save_step(step_num)

    def merge_default_save_config(self, default_save_config: SaveConfig) -> None:
        for mode in ModeKeys:
            if self.mode_save_configs[mode] is None:
                self.mode_save_configs[mode] = default_save_config.mode_save_configs.get(mode) or SaveConfigMode()

    def to_json_dict(self) -> dict:
        return {m.name: (c.to_json_dict() if c else None) for m, c in self.mode_save_configs.items()}

    def to_json(self) -> str:
        return json.dumps(self.to_json_dict())

    @overload
    @classmethod
    def from_dict(cls, params: dict[Any, Any], default_values: dict[str, Any] | None = None) -> SaveConfig: ...
    @overload
    @classmethod
    def from_dict(cls, params: None, default_values: dict[str, Any] | None = None) -> None: ...
    @classmethod
    def from_dict(
        cls, params: dict[Any, Any] | None, default_values: dict[str, Any] | None = None
    ) -> SaveConfig | None:
        if params is None:
            return None
        if not isinstance(params, dict):
            raise SMDebugTypeError(f"save_config={params!r} is not a dict")
        configs: dict[Any, Any] = {}
        for k, v in params.items():
            try:
                mode = parse_mode(k)
            except ValueError:
                mode = None
            if mode is None:
                raise SMDebugValueError(
                    f"save_config key {k!r} is not a mode ({', '.join(ModeKeys.__members__)}) "
                    f"nor one of {', '.join(_PARAMS)} for every mode"
                )
            configs[mode] = (
                v if isinstance(v, SaveConfigMode) or v is None else SaveConfigMode.from_dict(v, default_values)
            )
        return cls(mode_save_configs=configs)

    @classmethod
    def from_json(cls, json_str: str) -> SaveConfig | None:
        return cls.from_dict(json.loads(json_str))

    @classmethod
    def from_save_config_mode(cls, save_config_mode: SaveConfigMode) -> SaveConfig:
        return cls(mode_save_configs={m: save_config_mode for m in ModeKeys})

    @classmethod
    def parse(cls, obj: object) -> SaveConfig:
        """A SaveConfig from None (the default schedule), a SaveConfig, a SaveConfigMode (every
        mode), a dict of SaveConfigMode parameters (``{'save_interval': 10}``: every mode) or a
        dict of modes (ModeKeys or their names) to SaveConfigMode objects or parameter dicts."""
        if obj is None:
            return cls()
        if isinstance(obj, SaveConfig):
            return obj
        if isinstance(obj, SaveConfigMode):
            return cls.from_save_config_mode(obj)
        if isinstance(obj, dict):
            if obj and all(isinstance(k, str) and k in _PARAMS for k in obj):
                # {'save_interval': 10}: one schedule for every mode (as SaveConfig(save_interval=10))
                return cls.from_save_config_mode(SaveConfigMode.from_dict(obj))
            return cls.from_dict(obj)
        raise SMDebugTypeError(f"save_config={obj!r} cannot be parsed into a SaveConfig")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SaveConfig):
            return NotImplemented
        return self.mode_save_configs == other.mode_save_configs

    def __repr__(self) -> str:
        return f"<class SaveConfig: {self.mode_save_configs}>"
