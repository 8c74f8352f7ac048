"""Refresh control for trials, and small parsing helpers."""

from __future__ import annotations

from smdebug.core.utils import match_any, no_refresh, refresh

__all__ = ["no_refresh", "refresh", "parse_list_from_str", "parse_bool", "match_any"]


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
