"""The options of every hook, declared once.

:class:`HookOptions` is the signature of ``smdebug.<framework>.Hook(...)`` (BaseHook takes it),
what ``create_from_json_file`` builds from SageMaker's JSON (core.config.hook_config.HookSettings
extends it) and what the environment configures. A framework's Hook adds only its own extra
arguments, as keyword arguments before ``**options``.
"""

from __future__ import annotations

import inspect
import os
from dataclasses import dataclass, fields
from typing import Any

from smdebug.core.config.reduction_config import ReductionConfig
from smdebug.core.config.save_config import SaveConfig

__all__ = ["HookOptions", "options_signature", "tensorboard_dir_for"]


@dataclass
class HookOptions:
    out_dir: str | None = None
    export_tensorboard: bool = False
    tensorboard_dir: str | None = None
    dry_run: bool = False
    reduction_config: ReductionConfig | None = None
    save_config: SaveConfig | dict | None = None
    include_regex: str | list[str] | None = None
    include_collections: str | list[str] | None = None
    save_all: bool = False
    include_workers: str = "one"

    def kwargs(self) -> dict:
        """The options as keyword arguments of a Hook."""
        return {f.name: getattr(self, f.name) for f in fields(HookOptions)}

    @classmethod
    def from_call(cls, owner: str, args: tuple, kwargs: dict) -> HookOptions:
        """The options of ``owner(*args, **kwargs)``; a TypeError names ``owner`` otherwise."""
        try:
            return cls(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{owner}(): {str(exc).partition('(): ')[2] or exc}") from None


def options_signature(extra: tuple[inspect.Parameter, ...] = ()) -> inspect.Signature:
    """``(self, out_dir=None, ..., include_workers='one', <extra>)`` for a Hook's ``__init__``."""
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    params += list(inspect.signature(HookOptions).parameters.values())
    return inspect.Signature(params + list(extra))


def tensorboard_dir_for(export_tensorboard: Any, tensorboard_dir: Any, out_dir: str) -> str | None:
    """Where TensorBoard files go: ``tensorboard_dir``, else <out_dir>/tensorboard when exported."""
    if tensorboard_dir is not None:
        return os.path.expanduser(tensorboard_dir) if "://" not in tensorboard_dir else tensorboard_dir
    if export_tensorboard:
        return out_dir.rstrip("/") + "/tensorboard"
    return None
