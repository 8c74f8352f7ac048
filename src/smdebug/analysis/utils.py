"""Refresh control for trials, and small parsing helpers."""

from __future__ import annotations

import re
from contextlib import contextmanager

__all__ = ["no_refresh", "refresh", "parse_list_from_str", "parse_bool", "match_any"]


def _as_list(trials) -> list:
    return list(trials) if isinstance(trials, (list, tuple, set)) else [trials]


@contextmanager
def _set_refresh(trials, value: bool):
    ts = _as_list(trials)
    before = [t.dynamic_refresh for t in ts]
    for t in ts:
        t.dynamic_refresh = value
    try:
        yield trials
    finally:
        for t, b in zip(ts, before):
            t.dynamic_refresh = b


def no_refresh(trials):
    """Within the block the trial(s) read nothing new; the previous setting comes back after."""
    return _set_refresh(trials, False)


def refresh(trials):
    """Within the block the trial(s) look for new data on each query; the previous setting comes back after."""
    return _set_refresh(trials, True)


def match_any(name: str, patterns) -> bool:
    """Whether any regex matches anywhere in the name (``re.search``)."""
    return any(re.search(p, name) for p in patterns)


def parse_list_from_str(arg, delimiter=",") -> list:
    if arg is None:
        return []
    if isinstance(arg, str):
        return arg.split(delimiter) if arg else []
    return list(arg)


def parse_bool(arg, default):
    if arg is None:
        return default
    if arg in (True, False):
        return bool(arg)
    if arg in ("True", "true"):
        return True
    if arg in ("False", "false"):
        return False
    raise ValueError(f"boolean argument expected, but found {arg!r}")
