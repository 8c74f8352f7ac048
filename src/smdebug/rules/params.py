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
_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})


def is_none(value: Any) -> bool:
    """None, ``""``, ``"None"``, ``"none"`` and ``"null"`` all mean "not given"."""
    return value is None or (isinstance(value, str) and value.strip().lower() in NONE_STRINGS)


def as_float(value: Any) -> float:
    """A finite or infinite float from a number or a string such as ``"1e-7"``; never from a bool."""
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got the bool {value!r}")
    if isinstance(value, (int, float)):
        out = float(value)
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
    """An int; ``"10"``, ``"10.0"`` and ``10.0`` are accepted, ``"10.5"`` is not."""
    f = as_float(value)
    if not f.is_integer():
        raise ValueError(f"expected a whole number, got {value!r}")
    return int(f)


def as_bool(value: Any) -> bool:
    """``True``/``"True"``/``"true"``/``"1"``/``"yes"`` and their opposites; never ``bool("False")``."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        v = value.strip().lower()
        if v in _TRUE:
            return True
        if v in _FALSE:
            return False
    raise ValueError(f"expected True or False, got {value!r}")


def as_str(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {type(value).__name__} {value!r}")
    return value.strip()


def _items(value: Any) -> list:
    """A comma-separated string (optionally in brackets or parentheses) or a list/tuple."""
    if isinstance(value, str):
        s = value.strip()
        if len(s) >= 2 and s[0] + s[-1] in ("[]", "()"):
            s = s[1:-1]
        parts = [p.strip().strip("'\"").strip() for p in s.split(",")]
        return [p for p in parts if p]
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def as_str_list(value: Any) -> list[str]:
    """``"a, b"`` or ``["a", "b"]`` -> ``["a", "b"]``; empty items are dropped; None -> []."""
    if is_none(value):
        return []
    out = []
    for item in _items(value):
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
    """Several regexes, comma-separated (use ``|`` inside one regex rather than ``{1,3}``)."""
    if isinstance(value, re.Pattern):
        return [as_regex(value)]
    return [as_regex(s) for s in as_str_list(value)]


def as_mode(value: Any):
    """A ModeKeys member from ``"TRAIN"``, ``"modes.EVAL"``, ``"eval"``, an int value, or a ModeKeys."""
    from smdebug.modes import ModeKeys

    if isinstance(value, ModeKeys):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return ModeKeys(value)
        except ValueError:
            pass
    if isinstance(value, str):
        name = value.strip().upper().rsplit(".", 1)[-1]
        if name in ModeKeys.__members__:
            return ModeKeys[name]
    raise ValueError(f"expected a mode (TRAIN, EVAL, PREDICT or GLOBAL), got {value!r}")


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
