"""Parsing of rule parameters, written once for every rule.

Built-in rules take their parameters as strings (so that SageMaker's ``RuleParameters`` JSON can
configure them); Python values (floats, lists, bools) are accepted too. Every parser raises
``ValueError`` with a message saying what was expected; :class:`~smdebug.rules.builtin.base.BuiltinRule`
turns it into a :class:`~smdebug.exceptions.RuleConfigurationError` naming the rule and parameter.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from smdebug.codec.values import parse_bool
from smdebug.modes import parse_mode
from smdebug.patterns import compile as compile_pattern

__all__ = [
    "NONE_STRINGS",
    "is_none",
    "as_float",
    "as_int",
    "as_bool",
    "as_str",
    "as_str_list",
    "as_float_list",
    "as_int_list",
    "as_regex",
    "as_regex_list",
    "as_mode",
    "optional",
    "bounded",
]

NONE_STRINGS = frozenset({"", "none", "null"})
_INT64 = 2**63


def is_none(value: Any) -> bool:
    """None, ``""``, ``"None"``, ``"none"`` and ``"null"`` all mean "not given"."""
    return value is None or (isinstance(value, str) and value.strip().lower() in NONE_STRINGS)


def as_float(value: Any) -> float:
    """A finite or infinite float from a number or a string such as ``"1e-7"``; never from a bool."""
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got the bool {value!r}")
    if isinstance(value, (int, float)):
        try:
            out = float(value)
        except OverflowError:
            raise ValueError(
                f"expected a number a float can hold, got an int of {int(value).bit_length()} bits"
            ) from None
    elif isinstance(value, str):
        try:
            out = float(value.strip())
        except ValueError:
            raise ValueError(f"expected a number, got {value!r}") from None
    else:
        raise ValueError(f"expected a number, got {type(value).__name__} {value!r}")
    if math.isnan(out):
        raise ValueError(f"expected a number, got NaN ({value!r})")
    return out


def as_int(value: Any) -> int:
    """An int; ``"10"``, ``"10.0"`` and ``10.0`` are accepted, ``"10.5"`` and ``"1e400"`` are not."""
    if isinstance(value, int) and not isinstance(value, bool):
        out = value
    else:
        f = as_float(value)
        if not f.is_integer():
            raise ValueError(f"expected a whole number, got {value!r}")
        out = int(f)
    if not -_INT64 <= out < _INT64:  # numpy takes counts and steps as 64-bit ints
        raise ValueError(f"expected a whole number of at most 63 bits, got one of {out.bit_length()} bits")
    return out


def as_bool(value: Any) -> bool:
    """``True``/``"True"``/``"true"``/``"1"`` and their opposites; never ``bool("False")``
    (:func:`smdebug.codec.values.parse_bool`, the one parser of booleans)."""
    return parse_bool(value)


def as_str(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {type(value).__name__} {value!r}")
    return value.strip()


_CLOSE = {"{": "}", "[": "]", "(": ")"}


def split_top_level(s: str) -> list[str]:
    """``s`` split at the commas outside ``{}``, ``[]`` and ``()`` and not escaped with a backslash:
    ``"Seq.{1,3}, loss"`` -> ``["Seq.{1,3}", " loss"]``. An escaped comma (``\\,``) stays in its
    item as written (``re`` reads ``\\,`` as a comma). Inside ``[...]`` only ``]`` closes."""
    parts: list[str] = []
    depth: list[str] = []  # the closing brackets awaited, innermost last
    start = i = 0
    while i < len(s):
        c = s[i]
        if c == "\\":
            i += 2
            continue
        if depth and depth[-1] == "]":
            if c == "]":
                depth.pop()
        elif c in _CLOSE:
            depth.append(_CLOSE[c])
        elif depth and c == depth[-1]:
            depth.pop()
        elif c == "," and not depth:
            parts.append(s[start:i])
            start = i + 1
        i += 1
    parts.append(s[start:])
    return parts


def _unquote(p: str) -> str:
    p = p.strip()
    if len(p) >= 2 and p[0] == p[-1] and p[0] in "'\"":
        p = p[1:-1].strip()
    return p


def _items(value: Any, regex: bool = False) -> list:
    """A comma-separated string (optionally in brackets or parentheses) or a list/tuple.

    Commas inside ``{}``, ``[]`` and ``()`` do not separate items (a regex's ``{1,3}``). For
    regexes (``regex=True``) brackets around the whole string make a list only when they hold a
    quoted item or a top-level comma (``"['.*relu']"``, ``"[a, b]"``), never a regex's own
    ``[0-9]``; parentheses around a whole regex are the regex's own.
    """
    if isinstance(value, str):
        s = value.strip()
        if len(s) >= 2 and s[0] + s[-1] in ("[]", "()"):
            inner = s[1:-1].strip()
            if not regex or (s[0] == "[" and (inner[:1] in ("'", '"') or len(split_top_level(inner)) > 1)):
                s = inner
        parts = [_unquote(p) for p in split_top_level(s)]
        return [p for p in parts if p]
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def as_str_list(value: Any, regex: bool = False) -> list[str]:
    """``"a, b"`` or ``["a", "b"]`` -> ``["a", "b"]``; empty items are dropped; None -> []."""
    if is_none(value):
        return []
    out = []
    for item in _items(value, regex):
        if not isinstance(item, str):
            raise ValueError(f"expected strings, got {type(item).__name__} {item!r}")
        if item.strip():
            out.append(item.strip())
    return out


def as_float_list(value: Any) -> list[float]:
    """``"50.0, 50.0"`` or ``[50, 50]`` or a single number -> a list of floats."""
    if is_none(value):
        return []
    return [as_float(item) for item in _items(value)]


def as_int_list(value: Any) -> list[int]:
    if is_none(value):
        return []
    return [as_int(item) for item in _items(value)]


def as_regex(value: Any) -> re.Pattern:
    """A compiled regular expression; a pattern that does not compile is refused here, not at step 500."""
    if isinstance(value, re.Pattern):
        return compile_pattern(value, arg="regex")
    return compile_pattern(as_str(value), arg="regex")  # RE2 (linear time); a PatternError is a ValueError


def as_regex_list(value: Any) -> list[re.Pattern]:
    """Several regexes: a list, or one string split at its top-level commas (:func:`split_top_level`):
    ``"Seq.{1,3}, .*loss"`` is two regexes, ``Seq.{1,3}`` whole; ``"a\\,b"`` is one regex."""
    if isinstance(value, re.Pattern):
        return [as_regex(value)]
    return [as_regex(s) for s in as_str_list(value, regex=True)]


def as_mode(value: Any):
    """A ModeKeys member from ``"TRAIN"``, ``"modes.EVAL"``, ``"eval"``, an int value, or a ModeKeys
    (:func:`smdebug.modes.parse_mode`, the one parser of mode names)."""
    return parse_mode(value)


def optional(parse: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``parse`` that lets None (and its string spellings) through as None."""

    def parse_optional(value: Any) -> Any:
        return None if is_none(value) else parse(value)

    parse_optional.__name__ = f"optional_{getattr(parse, '__name__', 'value')}"
    return parse_optional


def bounded(parse: Callable[[Any], Any], lo=None, hi=None, *, above=None) -> Callable[[Any], Any]:
    """``parse`` whose result must be >= ``lo``, <= ``hi`` and > ``above`` (each optional):
    ``bounded(as_float, 0, 1)`` for a fraction, ``bounded(as_int, 1)`` for a positive count."""
    kind = "a whole number" if parse is as_int else "a number"
    if lo is not None and hi is not None:
        want = f"{kind} between {lo} and {hi}"
    elif above is not None:
        want = f"{kind} > {above}"
    else:
        want = f"{kind} >= {lo}" if lo is not None else f"{kind} <= {hi}"

    def parse_bounded(value: Any) -> Any:
        out = parse(value)
        if (lo is not None and out < lo) or (hi is not None and out > hi) or (above is not None and out <= above):
            raise ValueError(f"expected {want}, got {value!r}")
        return out

    parse_bounded.__name__ = f"bounded_{getattr(parse, '__name__', 'value')}"
    return parse_bounded
