"""The GPU rules: LowGPUUtilization, BatchSize, GPUMemoryIncrease, LoadBalancing.

Each reads ``GPUUtilization`` / ``GPUMemoryUtilization`` (percent, per ``gpu<i>`` of each node);
without them it says "no GPU data" (1.0.34 passed silently), except GPUMemoryIncrease, which then
judges the job's (else the host's) memory (see rules.profiler.host). Values accumulate over the windows
(1.0.34 reset its lists after a million datapoints; we keep what the rule reads: the last
``window`` values of each device, their count and maximum).
"""

from __future__ import annotations

import numpy as np

from smdebug.rules.builtin.base import Param
from smdebug.rules.params import as_float, bounded
from smdebug.rules.profiler.base import ProfilerRule, WindowData, count_param, percent_param, scan_param
from smdebug.rules.profiler.host import HostReading, mean_over_cores, memory_series
from smdebug.rules.profiler.stats import box_stats, js_distance, moving_increase, percentile, utilization_histogram

__all__ = ["LowGPUUtilization", "BatchSize", "GPUMemoryIncrease", "LoadBalancing"]


class Tail:
    """The last ``keep`` values of a series, how many were seen and their maximum: what a rule
    judging "the last window" keeps (constant memory and time per window over a long profile)."""

    def __init__(self, keep: int):
        self.keep = keep
        self.values = np.zeros(0)
        self.n = 0
        self.max = float("-inf")

    def add(self, values: np.ndarray) -> None:
        if len(values):
            self.n += len(values)
            self.max = max(self.max, float(values.max()))
            self.values = np.concatenate([self.values, values])[-self.keep :]

    def __len__(self) -> int:
        return self.n


class _GPURule(ProfilerRule, register=False):
    needs_gpu = True
    inputs = "GPU metrics (GPUUtilization, GPUMemoryUtilization)"
    window: int  # a parameter of the subclasses (their ``params``)

    def _collect(self, store: dict, data: WindowData, dimension: str) -> None:
        for s in data.metric(dimension, "gpu"):
            store.setdefault((s.node_id, s.name), Tail(self.window)).add(s.value)


class LowGPUUtilization(_GPURule):
    """Fires when a GPU is underused or its use swings: over its last ``window`` samples, the 95th
    percentile of ``GPUUtilization`` is below ``threshold_p95``, or it is above it while the 5th
    percentile is below ``threshold_p5``.

    Judged per GPU of each node once it has more than ``patience`` samples, at the end of each
    window. Fires in the windows where a GPU violates (1.0.34 fired in every window after the first
    violation). A GPU at 0 throughout is logged as unused. Details[node][gpu]: box statistics.
    """

    params = (
        percent_param("threshold_p95", "70"),
        percent_param("threshold_p5", "10"),
        count_param("window", "500", lo=1),
        count_param("patience", "1000"),
        scan_param(),
    )
    # the parameters, parsed when the rule is built (see ``params``)
    threshold_p95: float
    threshold_p5: float
    window: int
    patience: int
    scan_interval_us: int

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.values: dict = {}
        self.unused_logged: set = set()

    def enough_data(self) -> bool:
        return any(len(v) > self.patience for v in self.values.values())

    def judge(self, data: WindowData) -> bool:
        before = sum(len(v) for v in self.values.values())
        self._collect(self.values, data, "GPUUtilization")
        self.count(sum(len(v) for v in self.values.values()) - before)
        met = []
        for (node, gpu), v in self.values.items():
            if len(v) <= self.patience:
                continue
            last = v.values
            p95, p5 = percentile(last, 95), percentile(last, 5)
            if v.max == 0 and (node, gpu) not in self.unused_logged:
                self.unused_logged.add((node, gpu))
                self.logger.info("LowGPUUtilization: %s %s was not used", node, gpu)
            if p95 < self.threshold_p95 or (p95 > self.threshold_p95 and p5 < self.threshold_p5):
                kind = "underutilized" if p95 < self.threshold_p95 else "fluctuating"
                met.append(f"{node} {gpu} {kind} (p95 {p95:.1f}%, p5 {p5:.1f}%)")
                self.report["Violations"] += 1
                self.report["RuleTriggered"] += 1
                self.report["Details"].setdefault(node, {})[gpu] = {
                    "gpu_95": p95,
                    "gpu_5": p5,
                    "gpu_max": v.max,
                    **box_stats(last),
                }
                self.report["Details"]["last_timestamp"] = data.start_us
        if met:
            self.reason = "; ".join(met)
        return bool(met)


class BatchSize(_GPURule):
    """Fires when CPU, GPU and GPU memory are all low: on a node, the 95th percentile of the CPU
    (mean over cores per sample) over its last ``window`` samples is below ``cpu_threshold_p95``,
    and for one of its GPUs both ``GPUUtilization`` and ``GPUMemoryUtilization`` p95 over their
    last ``window`` samples are below their thresholds: the batch is too small.

    Judged once a node has more than ``window`` and ``patience`` CPU samples. 1.0.34 computed the
    memory box plot with the GPU's p25 (a bug not kept).
    """

    params = (
        percent_param("cpu_threshold_p95", "70"),
        percent_param("gpu_threshold_p95", "70"),
        percent_param("gpu_memory_threshold_p95", "70"),
        count_param("patience", "1000"),
        count_param("window", "500", lo=1),
        scan_param(),
    )
    # the parameters, parsed when the rule is built (see ``params``)
    cpu_threshold_p95: float
    gpu_threshold_p95: float
    gpu_memory_threshold_p95: float
    patience: int
    window: int
    scan_interval_us: int

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.cpu: dict = {}
        self.gpu: dict = {}
        self.mem: dict = {}

    def enough_data(self) -> bool:
        return any(len(v) > max(self.window, self.patience) for v in self.cpu.values())

    def judge(self, data: WindowData) -> bool:
        for node, (_times, total) in mean_over_cores(data.metric("CPUUtilization", "cpu")).items():
            self.cpu.setdefault(node, Tail(self.window)).add(total)
        self._collect(self.gpu, data, "GPUUtilization")
        self._collect(self.mem, data, "GPUMemoryUtilization")
        self.count(sum(len(s) for s in data.metric("CPUUtilization", "cpu")))
        if not self.gpus_seen:
            return False
        met = []
        for node, cpu in self.cpu.items():
            if len(cpu) <= max(self.window, self.patience):
                continue
            cpu_p95 = percentile(cpu.values, 95)
            if cpu_p95 >= self.cpu_threshold_p95:
                continue
            for (n, gpu), g in self.gpu.items():
                m = self.mem.get((n, gpu))
                if n != node or len(g) <= self.window or m is None or len(m) <= self.window:
                    continue
                g_p95, m_p95 = percentile(g.values, 95), percentile(m.values, 95)
                if g_p95 < self.gpu_threshold_p95 and m_p95 < self.gpu_memory_threshold_p95:
                    met.append(f"{node} {gpu}: CPU p95 {cpu_p95:.1f}%, GPU p95 {g_p95:.1f}%, memory p95 {m_p95:.1f}%")
                    self.report["Violations"] += 1
                    self.report["RuleTriggered"] += 1
                    d = self.report["Details"].setdefault(node, {})
                    d["cpu"] = box_stats(cpu.values)
                    d[gpu] = box_stats(g.values)
                    d[f"{gpu}_memory"] = box_stats(m.values)
                    self.report["Details"]["last_timestamp"] = data.start_us
        if met:
            self.reason = "; ".join(met)
        return bool(met)


class GPUMemoryIncrease(HostReading, _GPURule):
    """Fires when a GPU's memory use climbs: the mean ``GPUMemoryUtilization`` of its last
    ``window`` samples exceeds the mean of the ``window`` samples before by more than
    ``increase`` percentage points, once the GPU has more than ``patience`` samples. Without a
    GPU: the same over the job's memory on the host (else the host's), in points of its RAM.

    Our reading of 1.0.34's comparison, which set ``mean(v[-window:])`` against
    ``mean(v[-window-1:-2])`` (windows shifted by about one sample) and so missed a steady climb.
    Checked at every sample, as 1.0.34; fires in the windows holding a violation.

    Without GPU metrics (1.0.34 passed silently) it judges host memory the same way, in points of
    the host's RAM: the job's ``JobMemoryUsedPercent`` (its processes' resident memory) where the
    profile has it, else ``MemoryUsedPercent`` (the host's, other processes included), per node
    (Details[node]["job memory" | "host memory"]); the verdict's ``reading`` says ``"host"``.
    """

    needs_gpu = False
    inputs = "GPUMemoryUtilization (no GPU: JobMemoryUsedPercent or MemoryUsedPercent)"
    host_subject = "the memory on the host"
    host_check = (
        "Whether the job's memory on the host grows (no GPU seen): the mean of its last window samples "
        "above the mean of the window before by more than increase points of the host's RAM"
    )
    host_fix = (
        "look for what is kept from step to step (outputs or losses with their graph, growing caches, "
        "lists of batches); call .item() or .detach() on what you keep; a DataLoader worker's copies of "
        "Python objects grow too (keep the dataset in numpy arrays); or a host with more memory"
    )
    params = (
        Param("increase", bounded(as_float, above=0), "5", "percentage points"),
        count_param("patience", "1000"),
        count_param("window", "10", lo=1),
        scan_param(),
    )
    # the parameters, parsed when the rule is built (see ``params``)
    increase: float
    patience: int
    window: int
    scan_interval_us: int

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.values: dict = {}

    def enough_data(self) -> bool:
        return any(len(v) > self.patience for v in self.values.values())

    def judge(self, data: WindowData) -> bool:
        if self.gpus_seen:
            labelled = [(s, s.name) for s in data.metric("GPUMemoryUtilization", "gpu")]
        else:
            labelled = [(s, "job memory" if s.type == "job" else "host memory") for s in memory_series(data)]
        met = []
        span = 2 * self.window - 1  # an increase at a sample reads it and the span - 1 before
        for s, label in labelled:
            if not self.gpus_seen:
                self.read_host(s.dimension or s.name)
            t = self.values.setdefault((s.node_id, label), Tail(span))
            v = np.concatenate([t.values, s.value])  # v[0] is sample number t.n - len(t.values)
            first_new = max(t.n, self.patience + 1)  # samples new in this window, past patience
            t.add(s.value)
            self.count(len(s))
            # the increases ending at those samples (inc[j] ends at sample j + 2*window - 1 of its input)
            tail = moving_increase(v[max(first_new - span - (t.n - len(v)), 0) :], self.window)
            if len(tail) and tail.max() > self.increase:
                self.report["Violations"] += int((tail > self.increase).sum())
                self.report["RuleTriggered"] += 1
                self.report["Details"].setdefault(s.node_id, {})[label] = {
                    "increase": float(tail.max()),
                    "gpu_max" if self.gpus_seen else "max_seen": t.max,
                    **box_stats(v[-self.window :]),
                }
                self.report["Details"]["last_timestamp"] = data.start_us
                met.append(f"{s.node_id} {label}: memory up {tail.max():.1f} points over {self.window} samples")
        if met:
            self.reason = "; ".join(met)
            if not self.gpus_seen:
                self.reason = (
                    f"no GPU seen; the memory on the host grows ({', '.join(sorted(self.host_metrics))}, "
                    f"points of the host's RAM): {self.reason}. What to do: {self.host_fix}"
                )
        return bool(met)


class LoadBalancing(_GPURule):
    """Fires when two GPUs of a node carry different loads: the Jensen-Shannon distance between
    their ``GPUUtilization`` histograms (2-point bins, 0 to 100) exceeds ``threshold`` once both
    have more than ``patience`` samples.

    Default ``threshold`` 0.5 as smdebug-rulesconfig (1.0.34's code said 0.2). Needs two GPUs on
    a node; with one it says so. Histograms accumulate over the windows.
    """

    params = (
        Param("threshold", bounded(as_float, 0, 1), "0.5", "Jensen-Shannon distance"),
        count_param("patience", "1000"),
        scan_param(),
    )
    # the parameters, parsed when the rule is built (see ``params``)
    threshold: float
    patience: int
    scan_interval_us: int

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.hist: dict = {}
        self.n: dict = {}

    def enough_data(self) -> bool:
        by_node: dict = {}
        for (node, _gpu), n in self.n.items():
            by_node.setdefault(node, []).append(n)
        return any(sum(1 for n in ns if n > self.patience) >= 2 for ns in by_node.values())

    def verdict(self) -> dict:
        v = super().verdict()
        if (
            v["status"] == "not enough data"
            and self.n
            and not any(sum(1 for k in self.n if k[0] == node) >= 2 for node, _ in self.n)
        ):
            v["message"] = "not enough data: no node has two GPUs to compare"
        return v

    def judge(self, data: WindowData) -> bool:
        for s in data.metric("GPUUtilization", "gpu"):
            key = (s.node_id, s.name)
            self.hist[key] = self.hist.get(key, 0) + utilization_histogram(s.value)
            self.n[key] = self.n.get(key, 0) + len(s)
            self.count(len(s))
        met = []
        keys = sorted(self.hist)
        for i, a in enumerate(keys):
            for b in keys[i + 1 :]:
                if a[0] != b[0] or self.n[a] <= self.patience or self.n[b] <= self.patience:
                    continue
                d = js_distance(self.hist[a], self.hist[b])
                node = self.report["Details"].setdefault(a[0], {"workloads": {}, "distances": {}})
                node["workloads"][a[1]] = self.hist[a].tolist()
                node["workloads"][b[1]] = self.hist[b].tolist()
                node["distances"].setdefault(a[1], {})[b[1]] = d
                if d > self.threshold:
                    self.report["Violations"] += 1
                    self.report["RuleTriggered"] += 1
                    met.append(f"{a[0]}: {a[1]} and {b[1]} differ (distance {d:.2f} > {self.threshold})")
        if met:
            self.reason = "; ".join(met)
        return bool(met)
