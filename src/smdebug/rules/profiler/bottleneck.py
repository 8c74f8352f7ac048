"""CPUBottleneck and IOBottleneck: a GPU waits while the CPU is busy (or waits on I/O); without a
GPU, the host's CPU is saturated (or waits on I/O)."""

from __future__ import annotations

import numpy as np

from smdebug.rules.profiler.base import ProfilerRule, WindowData, count_param, count_text, percent_param, scan_param
from smdebug.rules.profiler.host import JOB_CPU, HostReading, cpu_samples, iowait_samples, mean_over_cores
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


class _Bottleneck(HostReading, ProfilerRule, register=False):
    busy_dimension = ""
    busy_param = ""
    inputs = "GPUUtilization and per-core CPU metrics"
    host_what = ""  # the host's condition, for messages
    threshold: float  # parameters of the subclasses (their ``params``)
    gpu_threshold: float
    patience: int

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.bottlenecks = 0
        self.report["Details"] = {"bottlenecks": {}, "low_gpu_utilization": 0}

    def judge(self, data: WindowData) -> bool:
        new = self.judge_gpu(data) if self.gpus_seen else self.judge_host(data)
        self.bottlenecks += new
        self.report["Violations"] = self.bottlenecks
        n = self.report["Datapoints"]
        ratio = 100.0 * self.bottlenecks / n if n else 0.0
        self.report["Details"]["ratio"] = ratio
        if n > self.patience and ratio > self.threshold and new:
            self.report["RuleTriggered"] += 1
            busy = getattr(self, self.busy_param)
            if self.gpus_seen:
                self.reason = (
                    f"{count_text(self.bottlenecks)} of {count_text(n)} samples ({ratio:.1f}% > "
                    f"{self.threshold}%) had a GPU below "
                    f"{self.gpu_threshold}% while a core's {self.busy_dimension} was above {busy}%"
                )
            else:
                self.reason = (
                    f"no GPU seen; {self.host_what}: in {count_text(self.bottlenecks)} of {count_text(n)} "
                    f"samples ({ratio:.1f}% > "
                    f"{self.threshold}%) {', '.join(sorted(self.host_metrics))} was above {busy}%. "
                    f"What to do: {self.host_fix}"
                )
            return True
        return False

    def judge_gpu(self, data: WindowData) -> int:
        """The bottleneck snapshots of the window, counted (GPU rows and per-core rows)."""
        gpus = data.metric("GPUUtilization", "gpu")
        busy = data.metric(self.busy_dimension, "cpu")
        new = 0
        for node in sorted({s.node_id for s in gpus + busy}):
            snap = bottleneck_snapshots(
                [s for s in gpus if s.node_id == node],
                [s for s in busy if s.node_id == node],
                self.gpu_threshold,
                getattr(self, self.busy_param),
            )
            self.count(len(snap["times"]))
            self.report["Details"]["low_gpu_utilization"] += int((snap["low_gpus"] > 0).sum())
            for i in np.flatnonzero(snap["bottleneck"]):
                self.report["Details"]["bottlenecks"][str(int(snap["times"][i]))] = {
                    "node": node,
                    "GPUs": int(snap["low_gpus"][i]),
                    "CPUs": int(snap["busy"][i]),
                }
            new += int(snap["bottleneck"].sum())
        return new

    def host_samples(self, data: WindowData) -> list:
        raise NotImplementedError

    def judge_host(self, data: WindowData) -> int:
        """The samples of the window whose host reading is above the rule's busy threshold, counted;
        Details.bottlenecks[time] = {node, metric: value}."""
        limit = getattr(self, self.busy_param)
        new = 0
        for s in self.host_samples(data):
            self.read_host(s.metric)
            self.count(len(s.values))
            busy = s.values > limit
            for t, v in zip(s.times[busy], s.values[busy]):
                self.report["Details"]["bottlenecks"][str(int(t))] = {"node": s.node, s.metric: round(float(v), 2)}
            new += int(busy.sum())
        return new


class CPUBottleneck(_Bottleneck):
    """Fires when the GPU waits on the CPU: more than ``threshold`` % of the samples (snapshots of
    one node within 20 ms) have a GPU below ``gpu_threshold`` % while a core is above
    ``cpu_threshold`` % ``CPUUtilization``, once more than ``patience`` samples were seen. Without
    a GPU: when the job's CPU demand (else the cores' mean use) is above ``cpu_threshold`` % of the
    host's cores in more than ``threshold`` % of the samples.

    The ratio is over every sample so far (1.0.34); the rule fires in a window that adds
    bottleneck samples while the ratio is above the threshold (1.0.34 re-fired in every later
    window). Snapshots are per node (1.0.34 mixed the nodes' rows).

    Without GPU metrics (a CPU-only job; 1.0.34 never fired there) it judges the host CPU with the
    same parameters: a sample is CPU-bound when the job's ``JobCPUDemand`` (its threads running or
    waiting for a core, % of the host's cores) is above ``cpu_threshold``, or, in a profile
    without it, when the mean of the cores' ``CPUUtilization`` is; it fires as above ("no GPU
    seen; the host CPU is the bottleneck"). Details.host_busy_not_job counts the samples where the
    cores were above ``cpu_threshold`` but the job's demand was not (other processes). The
    verdict's ``reading`` says which: ``"GPU"`` or ``"host"``, with the ``metrics`` read.
    """

    busy_dimension = "CPUUtilization"
    busy_param = "cpu_threshold"
    inputs = "GPUUtilization and per-core CPU metrics (no GPU: JobCPUDemand or CPUUtilization)"
    host_what = "the host CPU is the bottleneck"
    host_subject = "the host's CPU"
    host_check = (
        "Whether the job keeps the host's CPU saturated (no GPU seen): the share of samples in which "
        "the job's threads ran or waited for more than cpu_threshold % of the cores"
    )
    host_fix = (
        "more cores (a larger instance) or a GPU for the model's compute; lighter or cached "
        "pre-processing; fewer threads than cores when several processes share the host; on a shared "
        "host, fewer other jobs beside this one"
    )
    params = (
        percent_param("threshold", "50"),
        percent_param("gpu_threshold", "10"),
        percent_param("cpu_threshold", "90"),
        count_param("patience", "1000"),
        scan_param(),
    )
    # the parameters, parsed when the rule is built (see ``params``)
    threshold: float
    gpu_threshold: float
    cpu_threshold: float
    patience: int
    scan_interval_us: int

    def host_samples(self, data: WindowData) -> list:
        samples = cpu_samples(data)
        others = self.report["Details"].setdefault("host_busy_not_job", 0)
        jobs = {s.node: s for s in samples if s.metric == JOB_CPU}
        for node, (times, mean) in mean_over_cores(data.metric("CPUUtilization", "cpu")).items():
            if node in jobs:  # the job's rows and the cores' rows of one sample share its time
                busy_job = set(jobs[node].times[jobs[node].values > self.cpu_threshold].tolist())
                others += sum(1 for t in times[mean > self.cpu_threshold].tolist() if t not in busy_job)
        self.report["Details"]["host_busy_not_job"] = others
        return samples

    def host_note(self) -> str:
        others = self.report["Details"].get("host_busy_not_job", 0)
        if not others:
            return ""
        return (
            f"; in {count_text(others)} of those samples the cores were above {self.cpu_threshold}%, busy with other "
            "processes than this job"
        )


class IOBottleneck(_Bottleneck):
    """Fires when the GPU waits on I/O: as CPUBottleneck, with a core's ``I/OWaitPercentage``
    above ``io_threshold`` % instead of its CPU use (the count of such cores is reported under
    ``"CPUs"``, as 1.0.34). Without a GPU: when the cores' mean I/O wait is above
    ``io_threshold`` % in more than ``threshold`` % of the samples.

    Without GPU metrics it judges the host: a sample waits on I/O when the mean of the cores'
    ``I/OWaitPercentage`` is above ``io_threshold`` (there is no per-job reading of I/O wait, so
    other processes' I/O counts too); it fires as above ("no GPU seen; the host waits on I/O").
    """

    busy_dimension = "I/OWaitPercentage"
    busy_param = "io_threshold"
    inputs = "GPUUtilization and per-core I/OWaitPercentage (no GPU: I/OWaitPercentage)"
    host_what = "the host waits on I/O"
    host_subject = "the host's I/O wait"
    host_check = (
        "Whether the host's cores wait on I/O (no GPU seen): the share of samples in which the mean "
        "I/O wait of the cores was above io_threshold %"
    )
    host_fix = (
        "read from local disk or a faster file system, larger record files read in parallel, cache the "
        "dataset after the first epoch, pre-fetch with DataLoader workers"
    )
    params = (
        percent_param("threshold", "50"),
        percent_param("gpu_threshold", "10"),
        percent_param("io_threshold", "50"),
        count_param("patience", "1000"),
        scan_param(),
    )
    # the parameters, parsed when the rule is built (see ``params``)
    threshold: float
    gpu_threshold: float
    io_threshold: float
    patience: int
    scan_interval_us: int

    def host_samples(self, data: WindowData) -> list:
        return iowait_samples(data)
