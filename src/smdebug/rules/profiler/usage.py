"""OverallSystemUsage (statistics, never fires) and MaxInitializationTime (time to the first step)."""

from __future__ import annotations

import numpy as np

from smdebug.rules.builtin.base import Param
from smdebug.rules.params import as_float, bounded
from smdebug.rules.profiler.base import ProfilerRule, WindowData, scan_param
from smdebug.rules.profiler.stats import phase_mask, summary_stats

__all__ = ["OverallSystemUsage", "MaxInitializationTime", "usage_category"]

# report category -> (type, dimension or None for "by Name"), as 1.0.34's OverallSystemUsage
_CATEGORIES = {
    "CPU": ("cpu", "CPUUtilization"),
    "I/O": ("cpu", "I/OWaitPercentage"),
    "GPU": ("gpu", "GPUUtilization"),
    "GPU memory": ("gpu", "GPUMemoryUtilization"),
    "CPU memory": ("memory", None),
    "Network": ("network", "Algorithm"),
}


def usage_category(series) -> str | None:
    """The OverallSystemUsage category of one series, None for one it does not report."""
    for cat, (type_, dim) in _CATEGORIES.items():
        if series.type != type_:
            continue
        if dim is None:
            if series.name == "MemoryUsedPercent" or series.dimension == "MemoryUsedPercent":
                return cat
        elif series.dimension == dim:
            return cat
    return None


class OverallSystemUsage(ProfilerRule):
    """Never fires: per node, the max, p99, p95, p50 and min of each resource over the run.

    For each sample time, the sum over devices of CPU (``CPUUtilization``), I/O wait, GPU,
    GPU memory, host memory (``MemoryUsedPercent``) and network (``Algorithm`` rows), divided by
    the number of devices (network: the sum, in bytes/s), as 1.0.34. Details[category][node].
    """

    params = (scan_param(),)
    # the parameters, parsed when the rule is built (see ``params``)
    scan_interval_us: int
    inputs = "system metrics"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.values: dict = {}  # (category, node) -> [per-sample values of each window]

    def enough_data(self) -> bool:
        return True

    def judge(self, data: WindowData) -> bool:
        groups: dict = {}
        for s in data.series:
            cat = usage_category(s)
            if cat is not None and len(s):
                groups.setdefault((cat, s.node_id), []).append(s)
        for (cat, node), ss in groups.items():
            total = _sum_per_time(ss)
            per = total if cat == "Network" else total / len(ss)
            self.values.setdefault((cat, node), []).append(per)
            self.count(sum(len(s) for s in ss))
        if self.caught_up(data):  # the statistics of everything so far, once per look at the data
            self.summarise()
        return False

    def summarise(self) -> None:
        details: dict = {}
        for (cat, node), parts in sorted(self.values.items()):
            v = np.concatenate(parts)
            self.values[(cat, node)] = [v]
            details.setdefault(cat, {})[node] = summary_stats(v)
        self.report["Details"] = details


def _sum_per_time(series: list) -> np.ndarray:
    """The sum of the series' values at each of their distinct sample times (in time order), the
    series added one after the other. Devices sampled together (the usual case: every core at
    each sample time) are added as whole arrays, without matching their times."""
    t = series[0].timestamp_us
    if all(np.array_equal(s.timestamp_us, t) for s in series[1:]) and bool(np.all(t[1:] > t[:-1])):
        total = np.zeros(len(t))
        for s in series:
            total += s.value
        return total
    times = np.unique(np.concatenate([s.timestamp_us for s in series]))
    total = np.zeros(len(times))
    for s in series:
        np.add.at(total, np.searchsorted(times, s.timestamp_us), s.value)
    return total


def _minutes(minutes: float) -> str:
    """``1.5 s``, ``45 s``, ``12.5 min`` (three significant figures)."""
    seconds = max(minutes * 60, 0.0)
    if seconds < 1:
        return f"{seconds * 1e3:.3g} ms"
    if seconds < 120:
        return f"{seconds:.3g} s"
    return f"{minutes:.3g} min"


class MaxInitializationTime(ProfilerRule):
    """Fires when training has not started ``threshold`` minutes after the profile began: no step
    event (``Step:ModeKeys.*``) yet while the data already spans more than ``threshold`` minutes
    from the trial's first timestamp.

    Fires once, in the window where the threshold is crossed (1.0.34 re-fired every later window
    until the first step). Details: ``job_start``/``job_end`` (s, from the system and framework
    data seen), ``step_num.first``/``last`` (µs, starts of the first and last step events).
    ``threshold`` may be fractional.
    """

    params = (
        Param("threshold", bounded(as_float, above=0), "20", "minutes"),
        scan_param(),
    )
    # the parameters, parsed when the rule is built (see ``params``)
    threshold: float
    scan_interval_us: int
    reads_framework = True
    inputs = "system metrics and framework step events"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.first_step_us: int | None = None
        self.fired = False
        self.seen_data = False

    def enough_data(self) -> bool:
        return True

    def verdict(self) -> dict:
        """As every rule's; "no issue" says when the first step began against the threshold."""
        v = super().verdict()
        first = getattr(self, "first_step_us", None)
        if v["status"] == "no issue" and getattr(self, "seen_data", False):
            start = self.base_trial.first_timestamp
            if first is not None and start is not None:
                v["message"] = (
                    f"no issue: the first step began {_minutes((first - start) / 60e6)} after the "
                    f"profile's start, within threshold={self.threshold:g} min"
                )
            elif self.last_timestamp is not None and start is not None:
                v["message"] = (
                    f"no issue: no step yet after {_minutes((self.last_timestamp - start) / 60e6)} of "
                    f"data, within threshold={self.threshold:g} min"
                )
        return v

    def judge(self, data: WindowData) -> bool:
        d = self.report["Details"]
        times = [s.timestamp_us for s in data.series if len(s)]
        ev = data.events
        if ev is not None and len(ev):
            times += [ev.start_us, ev.end_us]
        if times:
            self.seen_data = True
            lo = float(min(t.min() for t in times)) / 1e6
            hi = float(max(t.max() for t in times)) / 1e6
            d["job_start"] = min(d.get("job_start", lo), lo)
            d["job_end"] = max(d.get("job_end", hi), hi)
        steps = 0
        if ev is not None and len(ev):
            is_step = phase_mask(ev.phase, lambda p: str(p).startswith("Step:ModeKeys"))
            steps = int(is_step.sum())
            if steps:
                starts = ev.start_us[is_step]
                first, last = int(starts.min()), int(starts.max())
                sn = d.setdefault("step_num", {"first": first, "last": last})
                sn["first"], sn["last"] = min(sn["first"], first), max(sn["last"], last)
                if self.first_step_us is None:
                    self.first_step_us = first
        # every sample and event judged against "has training started?"
        self.count(steps + sum(len(s) for s in data.series))
        start = int(self.base_trial.first_timestamp)
        limit = start + self.threshold * 60e6
        if self.fired:
            return False
        late = (self.first_step_us is None and data.end_us > limit) or (
            self.first_step_us is not None and self.first_step_us > limit and self.first_step_us < data.end_us
        )
        if late:
            self.fired = True
            self.report["RuleTriggered"] += 1
            self.report["Violations"] += 1
            when = (
                "no step yet"
                if self.first_step_us is None
                else f"the first step began {(self.first_step_us - start) / 60e6:.2f} min in"
            )
            self.reason = f"initialization took more than {self.threshold:g} min ({when})"
        return late
