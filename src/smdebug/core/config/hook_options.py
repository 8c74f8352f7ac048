"""The options of every hook, declared once.

:class:`HookOptions` is the signature of ``smdebug.<framework>.Hook(...)`` (BaseHook takes it),
what ``create_from_json_file`` builds from SageMaker's JSON (core.config.hook_config.HookSettings
extends it) and what the environment configures. A framework's Hook declares only its own extra
arguments, as keyword-only fields of a dataclass extending HookOptions, and its ``__init__`` says
so with :func:`hook_init`: type checkers (through a ParamSpec), ``inspect.signature`` and the
documentation site (tools/griffe_typed_init.py) all read that one declaration.
"""

from __future__ import annotations

import inspect
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, Concatenate, ParamSpec, TypeVar

from smdebug.core.config.reduction_config import ReductionConfig
from smdebug.core.config.save_config import SaveConfig

__all__ = ["HookOptions", "OPTION_DOCS", "hook_init", "options_signature", "tensorboard_dir_for"]

_P = ParamSpec("_P")
_CALLEE = re.compile(r"^[\w.]+\(\):? ")  # "XGBoostHookOptions.__init__() " at the start of a TypeError


_O = TypeVar("_O", bound="HookOptions")


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
        """The options common to every hook (HookOptions' fields) as keyword arguments of a Hook."""
        return {f.name: getattr(self, f.name) for f in fields(HookOptions)}

    @classmethod
    def from_call(cls: type[_O], owner: str, args: tuple, kwargs: dict) -> _O:
        """The options of ``owner(*args, **kwargs)``; a TypeError names ``owner`` otherwise."""
        try:
            return cls(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{owner}(): {_CALLEE.sub('', str(exc))}") from None


# what each option means, written once: the documentation site gives every hook's page these
# (tools/griffe_typed_init.py), after the hook's own parameters
OPTION_DOCS = {
    "out_dir": "where the trial goes: a folder or ``s3://bucket/prefix`` (required)",
    "export_tensorboard": "also write TensorBoard event files (to ``tensorboard_dir``, else ``<out_dir>/tensorboard``)",
    "tensorboard_dir": "where TensorBoard event files go (implies ``export_tensorboard``)",
    "dry_run": "go through the motions and write nothing (to check a configuration)",
    "reduction_config": "what is saved of each tensor: the raw values and/or reductions (min, max, mean, "
    "std, variance, sum, prod, norms); None: the raw tensor",
    "save_config": 'when to save: a ``SaveConfig`` (or ``{mode: SaveConfigMode}``, or ``{"save_interval": N}``); '
    "None: every 500th step of each mode (the XGBoost hook: every 10th round), as SageMaker. "
    "Whatever the schedule, the first step whose loss is NaN or infinite and the next 3 are "
    "saved in full",
    "include_regex": "also save the tensors whose names match these regexes (RE2 syntax), in a collection of their own",
    "include_collections": 'the collections to save (e.g. ``["weights", "gradients", "losses"]``); '
    "None: the framework's default (PyTorch and MXNet: ``losses``; Keras: ``losses``, "
    "``metrics``, ``sm_metrics``; XGBoost: ``metrics``)",
    "save_all": "save every tensor the hook sees (large)",
    "include_workers": '``"one"``: only the chief worker (rank 0) writes; ``"all"``: every worker writes '
    "its ``worker_<rank>`` files",
    "profiler_config": "a ``smdebug.profiler.ProfilerConfig`` (or SageMaker's ProfilerConfig dict): record "
    "system and framework metrics beside the tensors; None: the profiler config file "
    "($SMPROFILER_CONFIG_PATH) when there is one, else no profiling",
}


def options_signature(options: Callable[..., Any] = HookOptions) -> inspect.Signature:
    """``(self, out_dir=None, ..., include_workers='one', *, <extras>)``: a Hook's ``__init__`` that
    takes ``options`` (HookOptions or a dataclass extending it)."""
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    return inspect.Signature(params + list(inspect.signature(options).parameters.values()))


def hook_init(options: Callable[_P, Any]) -> Callable[[Callable[..., None]], Callable[Concatenate[Any, _P], None]]:
    """``@hook_init(MyHookOptions)`` on ``def __init__(self, *args, **kwargs)``: the hook takes the
    fields of ``options`` (HookOptions, or a dataclass extending it with keyword-only fields), and
    builds them with ``MyHookOptions.from_call(...)``. Type checkers check calls against those
    fields; ``inspect.signature`` gives them; ``__init__.__hook_options__`` is ``options``."""

    def declare(init: Callable[..., None]) -> Callable[Concatenate[Any, _P], None]:
        init.__signature__ = options_signature(options)  # type: ignore[attr-defined]
        init.__hook_options__ = options  # type: ignore[attr-defined]
        return init

    return declare


def tensorboard_dir_for(export_tensorboard: Any, tensorboard_dir: Any, out_dir: str) -> str | None:
    """Where TensorBoard files go: ``tensorboard_dir``, else <out_dir>/tensorboard when exported."""
    if tensorboard_dir is not None:
        return os.path.expanduser(tensorboard_dir) if "://" not in tensorboard_dir else tensorboard_dir
    if export_tensorboard:
        return out_dir.rstrip("/") + "/tensorboard"
    return None
