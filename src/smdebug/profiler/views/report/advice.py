"""What each profiler rule checks and what to do when it fires (our words), for the report.

A rule's report may carry its own ``Recommendation`` (a string): the report prefers it to these.
"""

from __future__ import annotations

__all__ = ["ADVICE", "advice_for"]

# rule name -> (what it checks, what to do when it fired)
ADVICE: dict[str, tuple[str, str]] = {
    "BatchSize": (
        "Whether the GPUs are underused (low utilization and little memory in use) while the CPUs are "
        "not busy either: the batch may be too small to keep the devices fed.",
        "Increase the batch size (scale the learning rate with it), or move to a smaller instance "
        "type; check GPU memory first so the larger batch fits.",
    ),
    "CPUBottleneck": (
        "Whether the CPU is saturated while the GPU waits: the share of time CPU utilization is above "
        "its threshold while GPU utilization is below its own.",
        "Move pre-processing off the training loop: more data-loader workers, pre-processed or cached "
        "data, GPU-side augmentation, or an instance with more cores.",
    ),
    "Dataloader": (
        "Whether the number of data-loader processes fits the number of cores, and whether some batches "
        "take much longer to load than the median.",
        "Set num_workers near the number of CPU cores (less when other work needs the cores), use "
        "pin_memory=True with a GPU, and prefetch; look at the slow batches' sources (remote reads, "
        "decoding).",
    ),
    "GPUMemoryIncrease": (
        "Whether a GPU's memory use grows step after step by more than the threshold.",
        "Look for tensors kept across steps (losses accumulated with their graph, lists of outputs); "
        "call .item() or .detach() on what you keep; check caching allocators and growing batches.",
    ),
    "IOBottleneck": (
        "Whether I/O wait is high while the GPU waits: the share of time iowait is above its threshold "
        "and GPU utilization below its own.",
        "Read from local disk or a faster file system (FSx, pipe mode), use larger record files and "
        "parallel reads, cache the dataset after the first epoch.",
    ),
    "LoadBalancing": (
        "Whether the GPUs of a node do unequal work: their utilization distributions differ by more "
        "than the threshold.",
        "Check the data split between workers and devices (uneven shards, a master device doing more), "
        "and the distributed strategy's placement.",
    ),
    "LowGPUUtilization": (
        "Whether a GPU's utilization is low (its p95 below a threshold) or fluctuates (p95 high, p5 "
        "low): the device waits for input or for the host.",
        "Find what the GPU waits for in the timeline (data loading, host-side work, synchronisation); "
        "increase the batch size or overlap data loading with compute.",
    ),
    "MaxInitializationTime": (
        "Whether the time from the start of the job to the first step exceeds the threshold (minutes).",
        "Look at what runs before the first step: downloading data, building the model, compiling; "
        "cache or stream the data and build once.",
    ),
    "OverallSystemUsage": (
        "Statistics of every system metric per node (no verdict of its own).",
        "Nothing to fix: use the table to see how busy each node was.",
    ),
    "StepOutlier": (
        "Whether some steps take much longer than the others: a step longer than the mean plus "
        "stddev times the standard deviation of the step durations.",
        "Look at what ran in the slow steps (the 'slowest steps' section and the timeline): a data "
        "loader stall, a checkpoint, garbage collection, an evaluation inside the loop.",
    ),
    "ProfilerReport": (
        "Runs the other profiler rules and writes this report.",
        "See each rule.",
    ),
}


def advice_for(rule: str, report: dict | None = None) -> tuple[str, str]:
    """``(what the rule checks, what to do)``: the report's own Description/Recommendation when it
    has them, else ours; an unknown rule says so."""
    check, fix = ADVICE.get(rule, ("(a rule this report does not know)", "See the rule's documentation."))
    report = report or {}
    if isinstance(report.get("Description"), str):
        check = report["Description"]
    if isinstance(report.get("Recommendation"), str):
        fix = report["Recommendation"]
    return check, fix
