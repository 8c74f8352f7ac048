"""Refresh control for trials, and small parsing helpers."""

from __future__ import annotations

from collections.abc import Iterable

from smdebug.core.utils import match_any, no_refresh, refresh

__all__ = ["no_refresh", "refresh", "parse_list_from_str", "parse_bool", "match_any"]


def parse_list_from_str(arg: str | Iterable[str] | None, delimiter: str = ",") -> list[str]:
    if arg is None:
        return []
    if isinstance(arg, str):
        return arg.split(delimiter) if arg else []
    return list(arg)


def parse_bool(arg: object, default: bool) -> bool:
    """``arg`` as a bool (:func:`smdebug.codec.values.parse_bool`); None gives ``default``."""
    from smdebug.codec.values import parse_bool as parse

    if arg is None:
        return default
    return parse(arg)
