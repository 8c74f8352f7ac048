"""CPUBottleneck and IOBottleneck: a GPU waits while the CPU is busy (or waits on I/O)."""

from __future__ import annotations

import numpy as np

from smdebug.rules.profiler.base import ProfilerRule, WindowData, count_param, percent_param, scan_param
from smdebug.rules.profiler.stats import snapshot_ids

__all__ = ["CPUBottleneck", "IOBottleneck", "bottleneck_snapshots"]


def bottleneck_snapshots(gpu_series: list, busy_series: list, gpu_threshold: float, busy_threshold: float) -> dict:
    """Snapshots of one node's samples (times within 20 ms) and which are bottlenecks.

    A snapshot is a bottleneck when at least one GPU is below ``gpu_threshold`` and at least one
    core is above ``busy_threshold`` in it (1.0.34 counted cores, not the mean: one saturated core
    feeding the GPU counts). Returns ``{"times": first time of each snapshot (µs), "bottleneck":
    bool per snapshot, "low_gpus": #GPUs low, "busy": #cores busy}`` (arrays).
    """
    all_series = list(gpu_series) + list(busy_series)
    if not all_series:
        z = np.zeros(0, dtype=np.int64)
        return {"times": z, "bottleneck": z.astype(bool), "low_gpus": z, "busy": z}
    times = np.unique(np.concatenate([s.timestamp_us for s in all_series]))
    ids = snapshot_ids(times)
    n = int(ids[-1]) + 1 if len(ids) else 0
    first = np.full(n, -1, dtype=np.int64)
    first[ids[::-1]] = times[::-1]  # the first time of each snapshot
    low = np.zeros(n, dtype=np.int64)
    busy = np.zeros(n, dtype=np.int64)
    for s in gpu_series:
        np.add.at(low, ids[np.searchsorted(times, s.timestamp_us)], (s.value < gpu_threshold).astype(np.int64))
    for s in busy_series:
        np.add.at(busy, ids[np.searchsorted(times, s.timestamp_us)], (s.value > busy_threshold).astype(np.int64))
    return {"times": first, "bottleneck": (low > 0) & (busy > 0), "low_gpus": low, "busy": busy}


class _Bottleneck(ProfilerRule, register=False):
    needs_gpu = True
    busy_dimension = ""
    busy_param = ""
    inputs = "GPUUtilization and per-core CPU metrics"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.bottlenecks = 0
        self.report["Details"] = {"bottlenecks": {}, "low_gpu_utilization": 0}

    def judge(self, data: WindowData) -> bool:
        gpus = data.metric("GPUUtilization", "gpu")
        busy = data.metric(self.busy_dimension, "cpu")
        new = 0
        for node in sorted({s.node_id for s in gpus + busy}):
            snap = bottleneck_snapshots([s for s in gpus if s.node_id == node], [s for s in busy if s.node_id == node],
                                        self.gpu_threshold, getattr(self, self.busy_param))
            self.count(len(snap["times"]))
            self.report["Details"]["low_gpu_utilization"] += int((snap["low_gpus"] > 0).sum())
            for i in np.flatnonzero(snap["bottleneck"]):
                self.report["Details"]["bottlenecks"][str(int(snap["times"][i]))] = {
                    "node": node, "GPUs": int(snap["low_gpus"][i]), "CPUs": int(snap["busy"][i])}
            new += int(snap["bottleneck"].sum())
        self.bottlenecks += new
        self.report["Violations"] = self.bottlenecks
        n = self.report["Datapoints"]
        ratio = 100.0 * self.bottlenecks / n if n else 0.0
        self.report["Details"]["ratio"] = ratio
        if n > self.patience and ratio > self.threshold and new:
            self.report["RuleTriggered"] += 1
            self.reason = (f"{self.bottlenecks} of {n} samples ({ratio:.1f}% > {self.threshold}%) had a GPU below "
                           f"{self.gpu_threshold}% while a core's {self.busy_dimension} was above "
                           f"{getattr(self, self.busy_param)}%")
            return True
        return False


class CPUBottleneck(_Bottleneck):
    """Fires when the GPU waits on the CPU: more than ``threshold`` % of the samples (snapshots of
    one node within 20 ms) have a GPU below ``gpu_threshold`` % while a core is above
    ``cpu_threshold`` % ``CPUUtilization``, once more than ``patience`` samples were seen.

    The ratio is over every sample so far (1.0.34); the rule fires in a window that adds
    bottleneck samples while the ratio is above the threshold (1.0.34 re-fired in every later
    window). Snapshots are per node (1.0.34 mixed the nodes' rows). Without GPU metrics it says
    "no GPU data": a CPU-only job is not judged.
    """

    busy_dimension = "CPUUtilization"
    busy_param = "cpu_threshold"
    params = (
        percent_param("threshold", "50"),
        percent_param("gpu_threshold", "10"),
        percent_param("cpu_threshold", "90"),
        count_param("patience", "1000"),
        scan_param(),
    )


class IOBottleneck(_Bottleneck):
    """Fires when the GPU waits on I/O: as CPUBottleneck, with a core's ``I/OWaitPercentage``
    above ``io_threshold`` % instead of its CPU use (the count of such cores is reported under
    ``"CPUs"``, as 1.0.34). Without GPU metrics it says "no GPU data".
    """

    busy_dimension = "I/OWaitPercentage"
    busy_param = "io_threshold"
    inputs = "GPUUtilization and per-core I/OWaitPercentage"
    params = (
        percent_param("threshold", "50"),
        percent_param("gpu_threshold", "10"),
        percent_param("io_threshold", "50"),
        count_param("patience", "1000"),
        scan_param(),
    )
