"""StepOutlier (step durations) and Dataloader (parallel data loaders against CPU cores)."""

from __future__ import annotations

import numpy as np

from smdebug.exceptions import RuleConfigurationError
from smdebug.rules.builtin.base import Param
from smdebug.rules.params import as_float, as_str, bounded, optional
from smdebug.rules.profiler.base import ProfilerRule, WindowData, count_param, count_text, percent_param, scan_param
from smdebug.rules.profiler.stats import CountMedian, loaders_per_second, outlier_mask, percentile, phase_mask

__all__ = ["StepOutlier", "Dataloader", "MIN_STEPS"]

MIN_STEPS = 100  # 1.0.34 judged a phase's steps only once it had more than 100


def _dur(seconds: float) -> str:
    """A step's duration to three significant figures: ``500 ms``, ``1.91 s``, ``2.5 min``."""
    if seconds < 1:
        return f"{seconds * 1e3:.3g} ms"
    if seconds < 120:
        return f"{seconds:.3g} s"
    return f"{seconds / 60:.3g} min"


def _times(ratio: float) -> str:
    """``4.84x``, ``17x``, ``1234x``."""
    return f"{ratio:.0f}x" if ratio >= 1000 or ratio != ratio or ratio == float("inf") else f"{ratio:.3g}x"


def _step_phase(phase: str, mode) -> bool:
    if mode is None:
        return "Step:ModeKeys" in phase
    return phase == mode or phase == f"Step:ModeKeys.{mode}"


class StepOutlier(ProfilerRule):
    """Fires when steps are outliers: more than ``n_outliers`` step durations above the mean plus
    ``stddev`` standard deviations of all steps so far, per node and step phase
    (``Step:ModeKeys.<MODE>``; ``mode`` selects one, e.g. ``TRAIN``).

    As 1.0.34, a phase is judged once it has more than 100 steps, and with the defaults a single
    stalled step does not fire (``n_outliers=10``); ``n_outliers=0`` fires on one. On a busy host a
    healthy run has hiccups of a few times the usual step that are "outliers" by standard
    deviations alone; ``min_ratio`` (ours, off by default as in 1.0.34) also requires an outlier to
    last at least ``min_ratio`` times the median step. Fires in a
    window whose steps add an outlier while the count is above ``n_outliers``. Details.step_details
    [node]: step_stats (mean, max, p99, p95, p50, min in s), number_of_outliers, phase, stddev,
    step_numbers and step_starts_us of the outliers.
    """

    params = (
        Param("stddev", bounded(as_float, above=0), "3"),
        Param("mode", optional(as_str), None, "a mode (TRAIN) or a step phase"),
        count_param("n_outliers", "10"),
        scan_param(),
        Param("min_ratio", bounded(as_float, 0), "0", "an outlier lasts at least this many median steps (0: off)"),
    )
    # the parameters, parsed when the rule is built (see ``params``)
    stddev: float
    mode: str | None
    n_outliers: int
    scan_interval_us: int
    min_ratio: float
    reads_framework = True
    inputs = "framework step events (Step:ModeKeys.*)"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        modes = ("TRAIN", "EVAL", "PREDICT", "GLOBAL")
        if self.mode is not None and self.mode not in modes and self.mode.removeprefix("Step:ModeKeys.") not in modes:
            raise RuleConfigurationError(
                type(self).__name__,
                "mode",
                f"{self.mode!r}: expected one of {', '.join(modes)} (or a step phase such as Step:ModeKeys.TRAIN)",
            )
        self.steps: dict = {}  # (node, phase) -> {"d": durations us, "n": step numbers, "s": starts}
        self.known_outliers: set = set()
        self.known: dict = {}  # (node, phase) -> bool per step: an outlier in some window so far

    def enough_data(self) -> bool:
        return any(len(v["d"]) > MIN_STEPS for v in self.steps.values())

    def enough_data_means(self) -> str:
        return f"more than {MIN_STEPS} steps of one phase on one node"

    def verdict(self) -> dict:
        """As every rule's, with a message that says why the slowest step is or is not an outlier
        by this rule's test, or how many steps were seen when that is too few to judge."""
        v = super().verdict()
        if v["status"] in ("no issue", "not enough data") and getattr(self, "steps", None) and self._caught_up():
            v["message"] = self._explain(v["status"]) or v["message"]
        return v

    def _caught_up(self) -> bool:
        """Whether the window just judged is the last the trial holds now: the message is worked
        out then (it reads every step), not after each window of a long profile read offline."""
        if self.last_timestamp is None:
            return True
        latest = self.source.latest()
        return latest is None or latest < self.last_timestamp + self.scan_interval_us

    def _explain(self, status: str) -> str:
        n = sum(len(st["d"]) for st in self.steps.values())
        cached = getattr(self, "_explained", None)
        if cached is not None and cached[0] == (status, n):
            return cached[1]
        # the (node, phase) whose slowest step is the most times its median
        worst = None
        for (node, phase), st in sorted(self.steps.items()):
            d = st["d"]
            if not len(d):
                continue
            i = int(np.argmax(d))
            med = float(np.median(d))
            ratio = float(d[i]) / med if med > 0 else float("inf")
            if worst is None or ratio > worst[0]:
                worst = (ratio, node, phase, st, i)
        if worst is None:
            return ""
        ratio, node, phase, st, i = worst
        d = st["d"]
        slowest = (
            f"the slowest step, {int(st['n'][i])} of {node} {phase} ({_dur(d[i] / 1e6)}, {_times(ratio)} the median)"
        )
        if status == "not enough data":
            most = max(len(x["d"]) for x in self.steps.values())
            msg = (
                f"not enough data: the rule judges after more than {MIN_STEPS} steps of one phase on one node: "
                f"{count_text(most)} so far; {slowest}, is not judged yet"
            )
        else:
            out = outlier_mask(d, self.stddev)
            if self.min_ratio:
                out &= d >= self.min_ratio * np.median(d)
            n_out = int(out.sum())
            limit = d.mean() + self.stddev * d.std()
            test = (
                f"longer than mean + stddev={self.stddev:g} standard deviations of the {count_text(len(d))} steps = "
                f"{_dur(limit / 1e6)}"
                + (f", and at least min_ratio={self.min_ratio:g} times the median" if self.min_ratio else "")
            )
            if not out[i]:
                msg = f"no issue: {slowest}, is not an outlier by StepOutlier's test: an outlier takes {test}"
            else:
                msg = (
                    f"no issue: {slowest}, is an outlier ({test}), but StepOutlier fires only on more than "
                    f"n_outliers={self.n_outliers} outlier steps, and {phase} of {node} has {count_text(n_out)}"
                )
        self._explained = ((status, n), msg)
        return msg

    def judge(self, data: WindowData) -> bool:
        ev = data.events
        added = ev is not None and len(ev) > 0
        if ev is not None and added:
            self._add(ev.take(phase_mask(ev.phase, lambda p: _step_phase(str(p), self.mode))))
        summarise = self.caught_up(data)
        if not added and not summarise:
            return False  # nothing new: no new outlier, the same counts
        met, judged = [], []
        for (node, phase), st in sorted(self.steps.items()):
            if len(st["d"]) <= MIN_STEPS:
                continue
            out = outlier_mask(st["d"], self.stddev)
            if self.min_ratio:
                out &= st["d"] >= self.min_ratio * np.median(st["d"])
            n_out = int(out.sum())
            judged.append((node, phase, st, out, n_out))
            new = self._new_outliers((node, phase), st, out)  # remembered in every window
            if n_out > self.n_outliers and new:
                self.report["Violations"] = max(self.report["Violations"], n_out)
                self.report["RuleTriggered"] += 1
                d = st["d"] / 1e6
                worst = int(np.argmax(np.where(out, st["d"], -1)))
                med = float(np.median(d))
                times = f", {_times(d[worst] / med)} the median" if med > 0 else ""
                met.append(
                    f"{node} {phase}: {n_out} outlier steps (> mean + {self.stddev:g} std of "
                    f"{d.mean():.3f} s); slowest step {int(st['n'][worst])} took {d[worst]:.3f} s{times}"
                )
        if met or summarise:  # the details of everything so far: when it fires, and once per look at the data
            for node, phase, st, out, n_out in judged:
                d = st["d"] / 1e6
                self.report["Details"].setdefault("step_details", {})[node] = {
                    "step_stats": {
                        "mean": float(d.mean()),
                        "max": float(d.max()),
                        "p99": percentile(d, 99),
                        "p95": percentile(d, 95),
                        "p50": percentile(d, 50),
                        "min": float(d.min()),
                    },
                    "number_of_outliers": n_out,
                    "phase": phase,
                    "stddev": float(d.std()),
                    "step_numbers": [int(x) for x in st["n"][out]],
                    "step_starts_us": [int(x) for x in st["s"][out]],
                }
        if met:
            self.reason = "; ".join(met)
        return bool(met)

    def _add(self, ev) -> None:
        self.count(len(ev))
        for key in sorted({(str(n), str(p)) for n, p in zip(ev.node_id, ev.phase)}):
            m = (ev.node_id == key[0]) & (ev.phase == key[1])
            st = self.steps.setdefault(key, {"d": np.zeros(0), "n": np.zeros(0, np.int64), "s": np.zeros(0, np.int64)})
            st["d"] = np.concatenate([st["d"], ev.duration_us[m].astype(float)])
            st["n"] = np.concatenate([st["n"], ev.step[m]])
            st["s"] = np.concatenate([st["s"], ev.start_us[m]])

    def _new_outliers(self, key: tuple, st: dict, out: np.ndarray) -> set:
        """The outliers ``(node, phase, start_us)`` never seen as outliers in an earlier window;
        remembered from now on. Only steps not yet flagged are looked up (by start, as before)."""
        flagged = self.known.get(key, np.zeros(0, dtype=bool))
        flagged = np.concatenate([flagged, np.zeros(len(out) - len(flagged), dtype=bool)])
        fresh = out & ~flagged
        flagged |= out
        self.known[key] = flagged
        new = {(key[0], key[1], int(s)) for s in st["s"][fresh]} - self.known_outliers
        self.known_outliers |= new
        return new


class Dataloader(ProfilerRule):
    """Fires when the number of data loaders does not fit the CPU: the median, over the seconds
    with data loading, of the distinct processes loading data in that second (``DataLoaderWorker``
    and ``DataLoaderIter`` events) is below ``min_threshold`` % or above ``max_threshold`` % of
    the node's cores (``CPUUtilization`` series), once more than ``patience`` seconds were seen.

    Cores come from the first window with CPU metrics (1.0.34). Fires once, in the window where the
    condition first holds. Details: pin_memory and num_workers (from ``DataLoaderIterInitialize``),
    cores, dataloaders (the median), dataloading_time percentiles (s). ``patience`` is 1.0.34's
    code parameter (smdebug-rulesconfig does not expose it).
    """

    params = (
        percent_param("min_threshold", "70"),
        Param("max_threshold", bounded(as_float, 0), "200"),
        count_param("patience", "10"),
        scan_param(),
    )
    # the parameters, parsed when the rule is built (see ``params``)
    min_threshold: float
    max_threshold: float
    patience: int
    scan_interval_us: int
    reads_framework = True
    inputs = "data-loader framework events (DataLoaderWorker, DataLoaderIter) and CPU metrics"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.min_threshold > self.max_threshold:
            raise RuleConfigurationError(
                type(self).__name__,
                "min_threshold",
                f"{self.min_threshold} is above max_threshold {self.max_threshold}",
            )
        self.cores: int | None = None
        self.per_second: dict = {}
        self.loaders = CountMedian()  # of per_second's values
        self.durations = np.zeros(0)
        self.new_durations: list = []  # arrays of the windows since durations was last brought up to date
        self.fired = False
        self._carry = (np.zeros(0, np.int64), np.zeros(0, np.int64))  # (start_us, pid) of the last second seen

    def enough_data(self) -> bool:
        return len(self.per_second) > self.patience

    def enough_data_means(self) -> str:
        n = len(getattr(self, "per_second", {}))
        return f"more than patience={self.patience} seconds with data loading ({n} so far)"

    def verdict(self) -> dict:
        v = super().verdict()
        if v["status"] in ("no issue", "not enough data") and self.cores is None and self.per_second:
            v["status"] = "not enough data"
            v["message"] = (
                "not enough data: data loading was seen but no CPUUtilization metrics, so the "
                "cores to compare with are unknown"
            )
        return v

    def judge(self, data: WindowData) -> bool:
        d = self.report["Details"]
        if self.cores is None:
            names = {(s.node_id, s.name) for s in data.metric("CPUUtilization", "cpu")}
            if names:
                self.cores = max(sum(1 for n in names if n[0] == node) for node in {n[0] for n in names})
                d["cores"] = self.cores
        ev = data.events
        if ev is None or not len(ev):
            self._loading_times(data)
            return False
        for i in np.flatnonzero(ev.phase == "DataLoaderIterInitialize"):
            args = ev.args[i] if ev.args else None
            if isinstance(args, dict):
                d["pin_memory"] = args.get("pin_memory", d.get("pin_memory"))
                d["num_workers"] = args.get("num_workers", d.get("num_workers"))
        if any("Prefetch" in str(n) for n in set(ev.name.tolist())):
            d["prefetch"] = True
        m = (ev.phase == "DataLoaderWorker") | (ev.phase == "DataLoaderIter")
        loading = ev.take(m)
        self.count(len(loading))
        # the events of the last second seen go along into the next window: a second cut by a window's
        # end (a live rule judges the part of a window already written) counts its loaders once
        starts = np.concatenate([self._carry[0], loading.start_us.astype(np.int64)])
        pids = np.concatenate([self._carry[1], loading.pid.astype(np.int64)])
        if len(starts):
            last = starts >= int(starts.max()) // 1_000_000 * 1_000_000
            self._carry = (starts[last], pids[last])
        for sec, n in loaders_per_second(starts, pids).items():
            old = self.per_second.get(sec)
            if old is None or n > old:
                self.per_second[sec] = n
                self.loaders.replace(old, n)
        if len(loading):
            self.new_durations.append(loading.duration_us / 1e6)
        self._loading_times(data)
        if not self.per_second:
            return False
        median = self.loaders.median()
        d["dataloaders"] = median
        if self.fired or self.cores is None or len(self.per_second) <= self.patience:
            return False
        lo, hi = self.cores * self.min_threshold / 100, self.cores * self.max_threshold / 100
        if median < lo or median > hi:
            self.fired = True
            self.report["Violations"] += 1
            self.report["RuleTriggered"] = 1
            word = "few" if median < lo else "many"
            self.reason = (
                f"too {word} data loaders: {median:g} processes loading data per second (median) for "
                f"{self.cores} cores (wanted {lo:g} to {hi:g})"
            )
            self._loading_times(data, now=True)
            return True
        return False

    def _loading_times(self, data: WindowData, now: bool = False) -> None:
        """Details.dataloading_time: the percentiles of every loading time so far, ``now`` (the rule
        fires) and once per look at the data (the last window the trial holds now), not after every
        window of a long profile."""
        if (self.durations.size or self.new_durations) and (now or self.caught_up(data)):
            self.durations = np.concatenate([self.durations, *self.new_durations])
            self.new_durations = []
            self.report["Details"]["dataloading_time"] = {f"p{q}": percentile(self.durations, q) for q in (25, 50, 95)}
