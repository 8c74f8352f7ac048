"""Every regular expression smdebug matches against tensor names is compiled here, with RE2.

Python's ``re`` backtracks: ``(a+)+$`` against a 41-character name runs for days, and a pattern
comes from users in many places (``Trial.tensor_names(regex=)``, a collection's
``include_regex``, the hook's ``include_regex`` and its JSON config, rule parameters such as
``tensor_regex``, ``smdebug plot/export --tensor``). RE2 (PyPI ``google-re2``) runs every pattern
it accepts in time linear in the name's length.

Decision: no fallback to ``re``. RE2 refuses lookarounds, backreferences, atomic groups,
possessive quantifiers, conditionals, ``(?x)``, ``(?#...)`` and repetition counts over 1000; such a
pattern raises :class:`PatternError` naming the argument that carried it. The one exception is
:data:`KNOWN_DEFAULTS`: the default collection regexes of smdebug 1.0.34 and of this package that
use a lookaround (1.0.34 writes them into every collections file). Each is run as an RE2 pattern
that matches the same names, its lookaround unrolled (``.*loss._(?!input).*output`` was cubic in
``re``: 2.6 s on a 2000-character name).

Semantics kept from ``re``: the caller picks ``search`` / ``match`` / ``fullmatch`` on the returned
object exactly as with a ``re.Pattern``. Translated: ``\\Z`` (Python's end of string) becomes RE2's
``\\z``, ``{,n}`` becomes ``{0,n}``, and a compiled ``re.Pattern``'s IGNORECASE / MULTILINE /
DOTALL flags become inline flags. Left different (documented): ``\\d \\w \\s \\b`` are ASCII in RE2
(Unicode in ``re``), and ``$`` does not match before a final newline.
"""

from __future__ import annotations

import functools
import re

import re2

from smdebug.exceptions import SMDebugValueError

__all__ = ["PatternError", "KNOWN_DEFAULTS", "compile", "compile_all", "names_matching"]


def _first_line_has(target: str, not_prefix: str) -> str:
    """RE2 for ``(?!not_prefix).*target`` (what it consumes): text whose first line contains
    ``target`` and which does not start with ``not_prefix`` (``target[0]`` must not occur in
    ``not_prefix``, so that the two cannot overlap)."""
    assert target[0] not in not_prefix
    out = ""
    for k in reversed(range(len(not_prefix))):
        c = re.escape(not_prefix[k])
        alts = [re.escape(target), f"[^{c}\\n][^\\n]*{re.escape(target)}"] + ([c + out] if out else [])
        out = "(?:" + "|".join(alts) + ")"
    return out


def _esc(c: str) -> str:
    return "\\n" if c == "\n" else re.escape(c)


def _none_of(words: set, prefixes: set, excluded: str) -> str:
    """RE2 for non-empty text of characters other than ``excluded`` (a class body, e.g. ``/``) that
    is none of ``words`` and starts with none of ``prefixes`` (a trie of the two, walked once)."""

    def node(w: str):
        if w in prefixes:
            return None
        nexts = sorted({x[len(w)] for x in words | prefixes if len(x) > len(w) and x.startswith(w)})
        alts = [f"[^{excluded}{''.join(_esc(c) for c in nexts)}][^{excluded}]*"]
        alts += [_esc(c) + sub for c in nexts if (sub := node(w + c)) is not None]
        optional = "?" if w and w not in words else ""
        return "(?:" + "|".join(alts) + ")" + optional

    return node("")


_INCREASING = ("auc", "aucpr", "map", "ndcg", "pre")
# 1.0.34's default collection regexes that use a lookaround (they are in every collections file it
# writes), and ours, each with an RE2 pattern that matches the same names (search and match; the
# lookaround unrolled: tests/reliability/test_backtracking_regex.py compares them with ``re``)
KNOWN_DEFAULTS = {
    # weights / biases of the PyTorch and MXNet hooks (and TF 2 eager biases), 1.0.34's and ours
    "^(?!gradient).*weight": "^" + _first_line_has("weight", "gradient"),
    "^(?!gradient).*bias": "^" + _first_line_has("bias", "gradient"),
    # losses: PyTorch, MXNet (1.0.34's and ours)
    "[Ll]oss_(?!input).*output": "[Ll]oss_" + _first_line_has("output", "input"),
    ".*loss._(?!input).*output": "[^\\n]*loss[^\\n]_" + _first_line_has("output", "input"),
    # XGBoost: 1.0.34's losses (the lookbehind: the last three characters are not auc / map) ...
    "^[a-zA-z]+-.+(?<!(auc|map))$": "^[a-zA-z]+-(?:[^\\n]{1,2}|[^\\n]*(?:[^am\\n][^\\n]{2}|a[^u\\n][^\\n]|au[^c\\n]|m[^a\\n][^\\n]|ma[^p\\n]))\\n?\\z",
    # ... and ours (smdebug/xgboost/collection.py)
    "^[^/]+-(?!(auc|aucpr|map|ndcg|pre)(@[^/]*)?$)[^/]+$": "^[^/]+-"
    + _none_of({*_INCREASING, *(m + "\n" for m in _INCREASING)}, {m + "@" for m in _INCREASING}, "/")
    + "\\z",
    "^average_shap/(?!bias$).+$": "^average_shap/" + _none_of({"bias"}, set(), "\\n") + "\\n?\\z",
    "^full_shap/(?!bias$).+$": "^full_shap/" + _none_of({"bias"}, set(), "\\n") + "\\n?\\z",
}

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # the refusal is raised as a PatternError, not printed by RE2 too
_FLAGS = ((re.IGNORECASE, "i"), (re.MULTILINE, "m"), (re.DOTALL, "s"))
_IGNORED_FLAGS = re.UNICODE | re.ASCII  # a str pattern always has UNICODE; RE2's classes are ASCII anyway


class PatternError(SMDebugValueError, re.error):
    """A pattern smdebug will not match: not a regular expression, or one RE2 cannot run in linear time.

    Also a ``re.error`` (what 1.0.34 raised for a pattern that does not compile) and a ``ValueError``.
    """

    def __init__(self, message: str, pattern=None):
        re.error.__init__(self, message, pattern)  # msg, pattern; pos, lineno and colno None


def compile(pattern, *, arg: str):
    """``pattern`` (a str, a ``re.Pattern`` or an already compiled pattern) compiled for matching
    tensor names: an object with ``search``, ``match``, ``fullmatch`` and ``pattern``, like a
    ``re.Pattern``. ``arg`` names where the pattern came from, for the error."""
    if isinstance(pattern, re2._Regexp):
        return pattern
    if isinstance(pattern, re.Pattern):
        pattern = _with_inline_flags(pattern, arg)
    if not isinstance(pattern, str):
        raise PatternError(f"{arg} {pattern!r}: expected a regular expression (str), got {type(pattern).__name__}")
    compiled = _compiled(pattern)
    if isinstance(compiled, str):
        raise PatternError(f"{arg} {pattern!r}: {compiled}", pattern)
    return compiled


def compile_all(patterns, *, arg: str) -> list:
    """:func:`compile` for one pattern or a list / tuple of them."""
    items = patterns if isinstance(patterns, (list, tuple)) else [patterns]
    return [compile(p, arg=arg) for p in items]


def names_matching(names, patterns, *, arg: str) -> set:
    """The names that any of ``patterns`` (one or a list) finds (``search``, as 1.0.34's
    ``re.search``). A refused pattern raises before any name is looked at. Answers are remembered
    per (patterns, name): rules ask for the same names at every step, and a call into RE2 costs
    about 4 us where a lookup costs 0.2."""
    key = tuple(c.pattern for c in compile_all(patterns, arg=arg))
    return {n for n in names if _found(key, n)}


@functools.lru_cache(maxsize=1 << 18)  # at most ~40 MB
def _found(key: tuple, name: str) -> bool:
    return any(_compiled(p).search(name) for p in key)  # each p compiled (and accepted) by names_matching


@functools.lru_cache(maxsize=1024)
def _compiled(pattern: str):
    """The compiled pattern, or the reason it is refused (a str: the cache keeps refusals too)."""
    if pattern in KNOWN_DEFAULTS:
        return re2.compile(KNOWN_DEFAULTS[pattern], _OPTIONS)
    try:
        return re2.compile(_translate(pattern), _OPTIONS)
    except re2.error as exc:
        why = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
    try:
        re.compile(pattern)
    except re.error as exc:
        return f"not a valid regular expression: {exc}"
    except (OverflowError, RecursionError) as exc:
        return f"not a valid regular expression: {exc}"
    return (
        f"RE2 refuses it ({why}). smdebug matches tensor names with RE2, in time linear in the name, "
        "so lookarounds ((?=, (?!, (?<=, (?<!), backreferences (\\1, (?P=name)), atomic groups, "
        "possessive quantifiers, conditionals, (?x) and repetition counts over 1000 are not available: "
        "rewrite the pattern without them (e.g. match more, then filter the names in Python)"
    )


def _with_inline_flags(p: re.Pattern, arg: str) -> str:
    """A compiled ``re.Pattern`` as a str with its flags written inline (``(?i)`` ...)."""
    if not isinstance(p.pattern, str):
        raise PatternError(f"{arg} {p.pattern!r}: expected a str pattern, got {type(p.pattern).__name__}")
    rest = p.flags & ~_IGNORED_FLAGS
    letters = ""
    for flag, letter in _FLAGS:
        if rest & flag:
            letters += letter
            rest &= ~flag
    if rest:
        raise PatternError(
            f"{arg} {p.pattern!r}: flags {re.RegexFlag(rest)!r} are not supported (only I, M, S)", p.pattern
        )
    return f"(?{letters}){p.pattern}" if letters else p.pattern


_OPEN_REPEAT = re.compile(r"\{,(\d*)\}")


def _translate(pattern: str) -> str:
    """Python's spellings RE2 reads differently: ``\\Z`` -> ``\\z``, ``{,n}`` -> ``{0,n}``
    (outside character classes; escapes are copied as they are)."""
    if "\\Z" not in pattern and "{," not in pattern:
        return pattern
    out = []
    i, n, in_class = 0, len(pattern), False
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            out.append("\\z" if pattern[i + 1] == "Z" and not in_class else pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            # a "]" right after "[" or "[^" is a literal, not the end of the class
            j = i + 1 + (pattern.startswith("^", i + 1))
            j += pattern.startswith("]", j)
            out.append(pattern[i:j])
            i, in_class = j, True
            continue
        elif c == "{":
            m = _OPEN_REPEAT.match(pattern, i)
            if m:
                out.append("{0," + m.group(1) + "}")
                i = m.end()
                continue
        out.append(c)
        i += 1
    return "".join(out)
