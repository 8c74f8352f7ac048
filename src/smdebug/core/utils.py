"""Small helpers that trials (below the analysis package) need: refresh control and name matching.
``smdebug.analysis.utils`` re-exports them under their documented names."""

from __future__ import annotations

from contextlib import contextmanager

__all__ = ["no_refresh", "refresh", "match_any"]


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
    from smdebug.patterns import compile_all

    return any(c.search(name) for c in compile_all(patterns, arg="pattern"))
