"""A profiler rule's windows: what one window holds (:class:`WindowData`) and where windows come
from (:class:`WindowSource`, one per rule or shared by rules judged together). See
:mod:`smdebug.rules.profiler.base` for how rules walk them."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from smdebug.profiler.reading.frames import FrameworkEvents

__all__ = ["WindowData", "WindowSource", "fetch_window", "READ_AHEAD_US"]

READ_AHEAD_US = 3_600_000_000  # what a WindowSource reads in one query: an hour of the profile


@dataclass
class WindowData:
    """What one window holds: the system series and the framework events that start in it."""

    start_us: int
    end_us: int  # exclusive
    series: list
    events: FrameworkEvents | None = None
    _picked: dict = field(default_factory=dict, repr=False, compare=False)  # metric()/by_type(), once each

    def metric(self, dimension: str, type: str | None = None) -> list:
        """The non-empty series of one dimension (and type), in (node, name) order."""
        key = ("metric", dimension, type)
        if key not in self._picked:
            out = [s for s in self.series if s.dimension == dimension and (type is None or s.type == type) and len(s)]
            self._picked[key] = sorted(out, key=lambda s: (s.node_id, s.name))
        return list(self._picked[key])

    def by_type(self, type: str) -> list:
        key = ("type", type)
        if key not in self._picked:
            self._picked[key] = sorted(
                (s for s in self.series if s.type == type and len(s)), key=lambda s: (s.node_id, s.name)
            )
        return list(self._picked[key])

    def part(self, start_us: int, end_us: int) -> WindowData:
        """The window ``[start_us, end_us)`` inside this one (views of its arrays, no copy)."""
        series = [p for s in self.series if len(p := s.window(start_us, end_us - 1))]
        events = None
        if self.events is not None:
            lo, hi = np.searchsorted(self.events.start_us, [start_us, end_us], side="left")
            events = self.events.take(np.arange(lo, hi))
        return WindowData(start_us, end_us, series, events)


def fetch_window(trial, start_us: int, end_us: int, *, framework: bool) -> WindowData:
    """The window ``[start_us, end_us)`` of the trial: one query of its files."""
    series = [s.window(start_us, end_us - 1) for s in trial.system_series(start_us, end_us - 1)]
    events = None
    if framework:
        ev = trial.framework_events(start_us, end_us - 1)
        events = ev.take((ev.start_us >= start_us) & (ev.start_us < end_us))
    return WindowData(start_us, end_us, series, events)


class WindowSource:
    """Where a rule's windows come from: one per rule, or one shared by rules judged together
    (ProfilerReport's sub-rules, :func:`judge_together`).

    Between two refreshes of the trial its answers do not change (its file list, and each file
    once parsed, are fixed until then), so the source reads ``READ_AHEAD_US`` of data in one query
    and cuts the following windows out of it, and keeps the trial's latest timestamp, until it
    refreshes the trial (the rule waits for data, or the job ended): a long profile read offline
    costs one query an hour instead of one a window (each lists the files, concatenates and sorts).
    """

    def __init__(self, trial):
        self.trial = trial
        self._ahead: WindowData | None = None
        self._latest: tuple | None = None  # (the trial's latest timestamp,) until the next refresh
        self._horizon: tuple | None = None  # (the trial's framework horizon,) until the next refresh
        self._events_from: int | None = None  # the framework events before it were given to a window

    def refresh(self) -> None:
        """Refresh the trial; what was read ahead is dropped."""
        self.trial.refresh()
        self._ahead = None
        self._latest = None
        self._horizon = None

    def latest(self) -> int | None:
        """The trial's ``get_complete_timestamp()`` (else ``get_latest_timestamp()``), asked once
        between two refreshes: a window is judged once every event starting in it can be there."""
        if self._latest is None:
            fn = getattr(self.trial, "get_complete_timestamp", None) or self.trial.get_latest_timestamp
            self._latest = (fn(),)
        return self._latest[0]

    def window(self, start_us: int, end_us: int, *, framework: bool) -> WindowData:
        """The window ``[start_us, end_us)``, what :func:`fetch_window` gives; its framework events
        are those that start before its end and were not in an earlier window, except those after
        the trial's framework horizon (a node's first timeline still being written), which come in
        the window judged once they are there: no event is lost to a window judged early."""
        a = self._ahead
        if a is None or start_us < a.start_us or end_us > a.end_us or (framework and a.events is None):
            a = self._ahead = fetch_window(
                self.trial, start_us, max(end_us, start_us + READ_AHEAD_US), framework=framework
            )
        data = a.part(start_us, end_us)
        if not framework:
            return data
        # the first window takes the events before it too: a timeline may start before the first sample
        lo = 0 if self._events_from is None else min(self._events_from, start_us)
        if self._horizon is None:
            fn = getattr(self.trial, "get_framework_horizon", None)
            self._horizon = (fn() if fn is not None else None,)
        horizon = self._horizon[0]
        hi = end_us if horizon is None else max(lo, min(end_us, int(horizon)))
        self._events_from = hi
        if (lo, hi) != (start_us, end_us):
            if a.start_us <= lo and hi <= a.end_us:
                assert a.events is not None
                cut = np.searchsorted(a.events.start_us, [lo, hi], side="left")
                events = a.events.take(np.arange(cut[0], cut[1]))
            else:
                ev = self.trial.framework_events(lo, max(lo, hi - 1))
                events = ev.take((ev.start_us >= lo) & (ev.start_us < hi))
            data = WindowData(start_us, end_us, data.series, events)
        return data
