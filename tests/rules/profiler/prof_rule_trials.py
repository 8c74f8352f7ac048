"""Synthetic profiles for the profiler rule tests: a trial-like object over Series and
FrameworkEvents (the profiler trial's protocol), optionally revealed bit by bit as a live job."""

from __future__ import annotations

import numpy as np

from smdebug.profiler.reading.frames import FrameworkEvents, Series

T0 = 1_700_000_000_000_000  # µs, a whole minute
SECOND = 1_000_000


def series(dimension, values, *, name="cpu0", type_=None, node="algo-1", start=T0, every_us=100_000):
    """One metric sampled every ``every_us`` from ``start``."""
    v = np.asarray(values, dtype=float)
    t = start + every_us * np.arange(len(v), dtype=np.int64)
    type_ = type_ or ("gpu" if dimension.startswith("GPU") else "cpu")
    return Series(node, type_, name, dimension, t, v)


def events(rows):
    """FrameworkEvents from dicts with phase, name, start, end and optional step, pid, node, args."""
    rows = sorted(rows, key=lambda r: r["start"])
    return FrameworkEvents(
        phase=np.array([r["phase"] for r in rows], dtype=object),
        name=np.array([r.get("name", r["phase"]) for r in rows], dtype=object),
        start_us=np.array([r["start"] for r in rows], dtype=np.int64),
        end_us=np.array([r["end"] for r in rows], dtype=np.int64),
        step=np.array([r.get("step", -1) for r in rows], dtype=np.int64),
        node_id=np.array([r.get("node", "algo-1") for r in rows], dtype=object),
        pid=np.array([r.get("pid", 1) for r in rows], dtype=np.int64),
        tid=np.array([r.get("tid", 1) for r in rows], dtype=np.int64),
        args=[r.get("args") for r in rows],
    )


def steps(durations_s, *, start=T0, phase="Step:ModeKeys.TRAIN", node="algo-1"):
    """Back-to-back step events of the given durations (seconds)."""
    rows, t = [], start
    for i, d in enumerate(durations_s):
        end = t + int(d * SECOND)
        rows.append({"phase": phase, "name": "Step", "start": t, "end": end, "step": i, "node": node})
        t = end
    return rows


class Profile:
    """The profiler trial's protocol over in-memory data. ``visible_until`` (µs) hides what a live
    job has not written yet; ``reveal(us)`` shows more; ``finished`` is the end marker."""

    def __init__(self, series_list=(), event_rows=(), *, finished=True, visible_until=None, path=None):
        self.series = list(series_list)
        self.events = events(list(event_rows))
        self.finished = finished
        self.visible_until = visible_until
        self.path = path
        self.refreshes = 0

    def _times(self):
        if getattr(self, "_all_times", None) is None:
            ts = [s.timestamp_us for s in self.series if len(s)]
            if len(self.events):
                ts += [self.events.start_us, self.events.end_us]
            self._all_times = np.sort(np.concatenate(ts)) if ts else np.zeros(0, dtype=np.int64)
        return self._all_times

    def _visible(self, t):
        return t if self.visible_until is None else t[: np.searchsorted(t, self.visible_until, side="right")]

    @property
    def first_timestamp(self):
        t = self._visible(self._times())
        return int(t[0]) if len(t) else None

    def get_latest_timestamp(self):
        t = self._visible(self._times())
        return int(t[-1]) if len(t) else None

    def job_finished(self):
        return self.finished

    def refresh(self):
        self.refreshes += 1

    def reveal(self, until_us):
        self.visible_until = until_us

    def system_series(self, start_us, end_us, *, type=None, dimension=None, node_id=None):
        end = end_us if self.visible_until is None else min(end_us, self.visible_until)
        out = []
        for s in self.series:
            if (
                (type and s.type != type)
                or (dimension and s.dimension != dimension)
                or (node_id and s.node_id != node_id)
            ):
                continue
            out.append(s.window(start_us, end))
        return out

    def framework_events(self, start_us, end_us):
        ev = self.events
        end = end_us if self.visible_until is None else min(end_us, self.visible_until)
        mask = (ev.end_us >= start_us) & (ev.start_us <= end)
        if self.visible_until is not None:  # an event is written when it ends
            mask &= ev.end_us <= self.visible_until
        return ev.take(mask)
