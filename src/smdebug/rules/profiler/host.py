"""What CPUBottleneck, IOBottleneck and GPUMemoryIncrease read on a job without a GPU.

Without GPU rows these three rules judge the host instead of saying "no GPU data" (the other GPU
rules do say it: there is nothing on a CPU-only host that their question is about). Which reading,
per node and window:

* CPU: the job's own ``JobCPUDemand`` (the time its threads ran or waited for a core, % of the
  host's cores; see smdebug.profiler.recording.job_metrics) where the profile has it, else the mean of the
  cores' ``CPUUtilization``. The job's reading first: on a host shared with other busy processes
  the cores are busy whatever the job does (measured on a 2-core VM at load average 7: every
  sample of a job that slept most of each step had both cores at 100 %, its demand 50 % on
  average), and a profile written by SageMaker's agent or by 1.0.34 has only the host's.
* I/O wait: the mean of the cores' ``I/OWaitPercentage`` (there is no per-job reading of it).
* memory: the job's ``JobMemoryUsedPercent`` where the profile has it, else the host's
  ``MemoryUsedPercent`` (which moves with every other process's memory too).

The mean over cores (not "any core", as the GPU form counts) because the question is whether the
host as a whole is the limit: one saturated core of 96 is not a saturated host.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from smdebug.rules.profiler.base import WindowData

__all__ = [
    "HostSamples",
    "HostReading",
    "mean_over_cores",
    "cpu_samples",
    "iowait_samples",
    "memory_series",
    "JOB_CPU",
    "JOB_MEMORY",
]

JOB_CPU = "JobCPUDemand"
JOB_MEMORY = "JobMemoryUsedPercent"


@dataclass
class HostSamples:
    """One node's samples of one host reading: times (µs), values (%), and what was read."""

    node: str
    times: np.ndarray
    values: np.ndarray
    metric: str


def mean_over_cores(series: list) -> dict:
    """``{node: (times, mean value over the cores)}`` of per-core series (cores aligned by their
    common sample times)."""
    out = {}
    by_node: dict = {}
    for s in series:
        by_node.setdefault(s.node_id, []).append(s)
    for node, ss in by_node.items():
        times = np.unique(np.concatenate([s.timestamp_us for s in ss]))
        total = np.zeros(len(times))
        n = np.zeros(len(times))
        for s in ss:
            idx = np.searchsorted(times, s.timestamp_us)
            np.add.at(total, idx, s.value)
            np.add.at(n, idx, 1)
        out[node] = (times, total / np.maximum(n, 1))
    return out


def _host_means(data: WindowData, dimension: str, skip: set) -> list:
    cores = [s for s in data.metric(dimension, "cpu") if s.node_id not in skip]
    return [
        HostSamples(node, t, v, f"{dimension} (mean of the cores)")
        for node, (t, v) in sorted(mean_over_cores(cores).items())
    ]


def cpu_samples(data: WindowData) -> list:
    """Per node: the job's CPU demand where the window has it, else the cores' mean CPU use."""
    job = [HostSamples(s.node_id, s.timestamp_us, s.value, JOB_CPU) for s in data.metric(JOB_CPU, "job")]
    return job + _host_means(data, "CPUUtilization", {s.node for s in job})


def iowait_samples(data: WindowData) -> list:
    """Per node: the cores' mean I/O wait."""
    return _host_means(data, "I/OWaitPercentage", set())


def memory_series(data: WindowData) -> list:
    """Per node: the job's memory series where the window has it, else the host's."""
    job = data.metric(JOB_MEMORY, "job")
    nodes = {s.node_id for s in job}
    host = [
        s
        for s in data.series
        if s.type == "memory" and len(s) and s.node_id not in nodes and "MemoryUsedPercent" in (s.name, s.dimension)
    ]
    return job + sorted(host, key=lambda s: s.node_id)


class HostReading:
    """Mixin of a GPU rule that judges a host reading while the profile shows no GPU: its verdict
    gains ``reading`` (``"GPU"`` or ``"host"``) and ``metrics`` (what was read), and a host
    verdict's message begins with "no GPU seen". Set ``host_subject`` (what is judged, for
    messages), ``host_check`` and ``host_fix`` (the report's Description and Recommendation once
    the host is judged); call :meth:`read_host` with each metric judged. Put it before the rule's
    base class."""

    host_subject: ClassVar[str] = ""
    host_check: ClassVar[str] = ""
    host_fix: ClassVar[str] = ""
    report: dict[str, Any]  # the rule's (a ProfilerRule after this mixin)
    gpus_seen: bool

    def __init__(self, *args, **kwargs):
        self.host_metrics: set = set()
        super().__init__(*args, **kwargs)

    def read_host(self, metric: str) -> None:
        self.host_metrics.add(metric)
        self.report["Description"] = self.host_check
        self.report["Recommendation"] = self.host_fix

    def host_note(self) -> str:
        """More for a host verdict that found no issue (empty by default)."""
        return ""

    def verdict(self) -> dict:
        v = super().verdict()  # type: ignore[misc]
        if self.gpus_seen:
            v["reading"] = "GPU"
            return v
        v["reading"] = "host"
        v["metrics"] = sorted(self.host_metrics)
        if v["status"] != "issues found":
            read = ", ".join(v["metrics"]) or "no host metric either"
            v["message"] = f"no GPU seen; judged {self.host_subject} ({read}) instead: {v['message']}{self.host_note()}"
        return v
