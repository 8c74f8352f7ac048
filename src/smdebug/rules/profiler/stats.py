"""The profiler rules' decisions as small pure functions over numpy arrays (tested one by one).

Nothing here reads a trial: the rules in this package collect values window by window and ask
these functions what they mean.
"""

from __future__ import annotations

import numpy as np

from smdebug.profiler.reading.frames import phase_mask  # (re-exported: the rules' import)

__all__ = [
    "box_stats",
    "snapshot_ids",
    "percentile",
    "moving_increase",
    "js_distance",
    "utilization_histogram",
    "outlier_mask",
    "loaders_per_second",
    "summary_stats",
    "phase_mask",
    "CountMedian",
]


def percentile(values, q: float) -> float:
    """``np.percentile`` of a non-empty array, as a plain float."""
    return float(np.percentile(np.asarray(values, dtype=float), q))


def box_stats(values) -> dict:
    """p25, p50, p75, p95, max and the whiskers (quartile -/+ 1.5 IQR, clipped to the data), as
    1.0.34's box plots; also p5. ``values`` must not be empty."""
    v = np.asarray(values, dtype=float)
    p5, p25, p50, p75, p95 = (float(x) for x in np.percentile(v, [5, 25, 50, 75, 95]))
    iqr = p75 - p25
    return {
        "p05": p5,
        "p25": p25,
        "p50": p50,
        "p75": p75,
        "p95": p95,
        "upper": float(min(p75 + 1.5 * iqr, v.max())),
        "lower": float(max(p25 - 1.5 * iqr, v.min())),
        "max": float(v.max()),
    }


def summary_stats(values) -> dict:
    """max, p99, p95, p50 and min rounded to 2 decimals, negatives as 0 (OverallSystemUsage)."""
    v = np.asarray(values, dtype=float)
    mx, p99, p95, p50, mn = np.percentile(v, [100, 99, 95, 50, 0])
    return {
        k: round(max(float(x), 0.0), 2) for k, x in (("max", mx), ("p99", p99), ("p95", p95), ("p50", p50), ("min", mn))
    }


def snapshot_ids(timestamps_us: np.ndarray, gap_us: int = 20_000) -> np.ndarray:
    """Group sorted sample times into snapshots: a new snapshot starts at a time more than
    ``gap_us`` after the first time of the current one (1.0.34's 20 ms ``snapshot_window``: one
    sample of the system agent writes every row at nearly one time). Returns one snapshot id per
    time (0, 1, ...). A snapshot starting at time ``i`` ends before the first time past
    ``t[i] + gap_us`` (a binary search): one step per snapshot, none when every time is more than
    ``gap_us`` after the one before (each its own snapshot, the usual case of distinct sample times)."""
    t = np.asarray(timestamps_us, dtype=np.int64)
    n = len(t)
    if n > 1 and bool(np.any(t[1:] < t[:-1])):
        raise ValueError("snapshot_ids: the times must be sorted")
    if n < 2 or bool(np.all(t[1:] - t[:-1] > gap_us)):
        return np.arange(n, dtype=np.int64)
    end = np.searchsorted(t, t + gap_us, side="right")  # where a snapshot starting at each time ends
    ids = np.empty(n, dtype=np.int64)
    i, sid = 0, 0
    while i < n:
        j = int(end[i])
        ids[i:j] = sid
        i, sid = j, sid + 1
    return ids


def moving_increase(values, window: int) -> np.ndarray:
    """For each position i >= 2*window-1: mean(values[i-window+1 : i+1]) - mean of the window before
    it (``values[i-2*window+1 : i-window+1]``). Our reading of GPUMemoryIncrease (1.0.34 compared
    ``mean(v[-w:])`` with ``mean(v[-w-1:-2])``, two windows shifted by about one sample, so a
    steady climb of less than ``increase/2`` per sample never showed). Empty when too short."""
    v = np.asarray(values, dtype=float)
    if window < 1 or len(v) < 2 * window:
        return np.zeros(0)
    c = np.concatenate([[0.0], np.cumsum(v)])
    means = (c[window:] - c[:-window]) / window  # mean of v[j : j+window] at index j
    return means[window:] - means[:-window]


def utilization_histogram(values) -> np.ndarray:
    """Counts of utilisation values (%) in 2-point bins from 0 to 100, 100 included (1.0.34 used
    ``np.arange(0, 100, 2)``, whose last bin ended at 98: a busy GPU's 99 and 100 were dropped)."""
    counts, _ = np.histogram(np.asarray(values, dtype=float), bins=np.arange(0, 102, 2))
    return counts


def js_distance(p_counts, q_counts) -> float:
    """Jensen-Shannon distance (natural log, as scipy's ``jensenshannon``) between two histograms.
    0 for identical shapes, at most sqrt(ln 2) ~ 0.83 for disjoint ones."""
    p = np.asarray(p_counts, dtype=float)
    q = np.asarray(q_counts, dtype=float)
    if p.sum() <= 0 or q.sum() <= 0:
        raise ValueError("js_distance: an empty histogram")
    p, q = p / p.sum(), q / q.sum()
    m = (p + q) / 2

    def kl(a):
        nz = a > 0
        return float(np.sum(a[nz] * np.log(a[nz] / m[nz])))

    return float(np.sqrt(max((kl(p) + kl(q)) / 2, 0.0)))


def outlier_mask(durations, stddev: float) -> np.ndarray:
    """Durations above mean + ``stddev`` standard deviations of all of them (1.0.34's StepOutlier)."""
    d = np.asarray(durations, dtype=float)
    if len(d) == 0:
        return np.zeros(0, dtype=bool)
    return d > d.mean() + stddev * d.std()


def loaders_per_second(start_us, pid) -> dict:
    """``{second: number of distinct pids}`` of data-loading events by the second they start in
    (1.0.34's "parallel data loaders per second")."""
    start = np.asarray(start_us, dtype=np.int64)
    if len(start) == 0:
        return {}
    sec, pid = start // 1_000_000, np.asarray(pid, dtype=np.int64)
    order = np.lexsort((pid, sec))
    sec, pid = sec[order], pid[order]
    first = np.ones(len(sec), dtype=bool)  # the first row of each distinct (second, pid)
    first[1:] = (sec[1:] != sec[:-1]) | (pid[1:] != pid[:-1])
    secs, counts = np.unique(sec[first], return_counts=True)
    return dict(zip(secs.tolist(), counts.tolist()))


class CountMedian:
    """The median of a multiset of small integers kept as ``{value: count}``, updated in place:
    ``np.median`` of the values without sorting them all again after each change."""

    def __init__(self) -> None:
        self.counts: dict = {}
        self.n = 0

    def replace(self, old: int | None, new: int) -> None:
        """``old`` (None: nothing) leaves the multiset, ``new`` joins it."""
        if old is not None:
            self.counts[old] -= 1
            if not self.counts[old]:
                del self.counts[old]
            self.n -= 1
        self.counts[new] = self.counts.get(new, 0) + 1
        self.n += 1

    def median(self) -> float:
        """As ``np.median`` (the mean of the two middle values when their number is even); nan when empty."""
        if not self.n:
            return float("nan")
        lo, hi, seen = (self.n - 1) // 2, self.n // 2, 0
        low = None
        for value in sorted(self.counts):
            seen += self.counts[value]
            if low is None and seen > lo:
                low = float(value)
            if low is not None and seen > hi:
                return (low + float(value)) / 2
        raise AssertionError("unreachable: counts add up to n")
