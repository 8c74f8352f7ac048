"""CPUBottleneck, IOBottleneck and GPUMemoryIncrease on synthetic profiles without a GPU: they judge
the host (the job's own rows first, else the host's), say so, and fire where the host is the
limit; with GPU rows they read the GPU as before."""

from __future__ import annotations

import numpy as np
import pytest
from prof_rule_trials import SECOND, T0, Profile, series

from smdebug.rules import invoke_rule
from smdebug.rules.profiler import get_profiler_rule_class as get_rule_class

N = 2400  # 240 s at 100 ms
WAVE = 3 * np.sin(np.arange(N))  # deterministic jitter


def rule(name, profile, **params):
    return get_rule_class(name)(profile, **params)


def starts(r):
    """Where the fired windows start, in seconds from T0."""
    return [(a - T0) / SECOND for a, _ in r.report["Verdict"]["fired_windows"]]


def until(at_s, before, after):
    """``before`` until ``at_s`` seconds, ``after`` from there (per 100 ms sample), plus jitter."""
    return np.where(np.arange(N) < at_s * 10, before, after) + WAVE


def cores(values, n=2, dim="CPUUtilization"):
    return [series(dim, values, name=f"cpu{i}") for i in range(n)]


def job(dimension, values):
    return series(dimension, values, name="memory" if "Memory" in dimension else "cpu", type_="job")


def host_memory(values):
    return series("", values, name="MemoryUsedPercent", type_="memory")


def test_cpu_bottleneck_without_a_gpu_fires_where_the_job_saturates_the_cpu():
    # the cores are busy throughout (other processes); the job's demand passes 90 % at 100 s
    r = rule("CPUBottleneck", Profile([*cores(np.full(N, 100.0)), job("JobCPUDemand", until(100, 40, 120))]))
    run = invoke_rule(r)
    # the ratio of CPU-bound samples passes 50 % at sample 2000 (200 s): window 3 (180-240 s)
    assert run.fired == [3] and starts(r) == [180]
    v = r.report["Verdict"]
    assert v["status"] == "issues found" and v["reading"] == "host" and v["metrics"] == ["JobCPUDemand"]
    assert r.reason.startswith("no GPU seen; the host CPU is the bottleneck: in 1400 of 2400 samples")
    assert "What to do: more cores" in r.reason and r.report["Recommendation"].startswith("more cores")
    assert r.report["Violations"] == 1400 and r.report["Details"]["host_busy_not_job"] == 1000
    assert r.report["Details"]["bottlenecks"][str(T0 + 100 * SECOND)]["JobCPUDemand"] == pytest.approx(120.0, abs=3)


def test_cpu_bottleneck_without_a_gpu_is_silent_when_other_processes_fill_the_cores():
    r = rule("CPUBottleneck", Profile([*cores(np.full(N, 100.0)), job("JobCPUDemand", np.full(N, 40.0) + WAVE)]))
    assert invoke_rule(r).fired == []
    v = r.report["Verdict"]
    assert v["status"] == "no issue" and v["reading"] == "host"
    assert v["message"] == (
        "no GPU seen; judged the host's CPU (JobCPUDemand) instead: no issue in 2400 datapoints; "
        "in 2400 of those samples the cores were above 90.0%, busy with other processes than "
        "this job"
    )


def test_cpu_bottleneck_reads_the_mean_of_the_cores_in_a_profile_without_job_rows():
    busy = rule("CPUBottleneck", Profile(cores(until(60, 20, 95))))
    assert invoke_rule(busy).fired[0] == 2  # 1800 of 2400 samples busy: the ratio passes 50 % at 120 s
    assert busy.report["Verdict"]["metrics"] == ["CPUUtilization (mean of the cores)"]
    one_core = [
        series("CPUUtilization", np.full(N, 100.0), name="cpu0"),
        series("CPUUtilization", np.full(N, 10.0), name="cpu1"),
    ]
    quiet = rule("CPUBottleneck", Profile(one_core))  # one saturated core of two is not a saturated host
    assert invoke_rule(quiet).fired == [] and quiet.report["Verdict"]["status"] == "no issue"


def test_io_bottleneck_without_a_gpu_fires_when_the_host_waits_on_io():
    r = rule("IOBottleneck", Profile(cores(until(60, 5, 70), dim="I/OWaitPercentage")))
    run = invoke_rule(r)
    assert run.fired[0] == 2 and r.reason.startswith("no GPU seen; the host waits on I/O")
    assert r.report["Verdict"]["metrics"] == ["I/OWaitPercentage (mean of the cores)"]
    quiet = rule("IOBottleneck", Profile(cores(np.full(N, 5.0), dim="I/OWaitPercentage")))
    assert invoke_rule(quiet).fired == [] and quiet.report["Verdict"]["reading"] == "host"


def test_gpu_memory_increase_without_a_gpu_fires_where_the_jobs_memory_climbs():
    mem = np.full(N, 10.0)
    mem[1500:1570] = 10 + np.arange(1, 71)  # 150 s to 157 s: +1 point per sample
    mem[1570:] = 80.0
    host = host_memory(np.full(N, 30.0) + WAVE)  # other processes' memory moves; the job's reading wins
    r = rule("GPUMemoryIncrease", Profile([job("JobMemoryUsedPercent", mem), host]))
    run = invoke_rule(r)
    assert run.fired == [2] and starts(r) == [120]
    assert r.report["Details"]["algo-1"]["job memory"]["increase"] == pytest.approx(10.0)
    v = r.report["Verdict"]
    assert v["reading"] == "host" and v["metrics"] == ["JobMemoryUsedPercent"]
    assert r.reason.startswith(
        "no GPU seen; the memory on the host grows (JobMemoryUsedPercent, points of the "
        "host's RAM): algo-1 job memory: memory up 10.0 points over 10 samples"
    )
    flat = rule("GPUMemoryIncrease", Profile([job("JobMemoryUsedPercent", np.full(N, 10.0)), host_memory(mem)]))
    assert invoke_rule(flat).fired == [] and flat.report["Verdict"]["status"] == "no issue"


def test_gpu_memory_increase_reads_the_hosts_memory_in_a_profile_without_job_rows():
    mem = np.full(N, 30.0)
    mem[1500:1570] = 30 + np.arange(1, 71)
    mem[1570:] = 100.0
    r = rule("GPUMemoryIncrease", Profile([host_memory(mem)]))
    assert invoke_rule(r).fired == [2] and r.report["Verdict"]["metrics"] == ["MemoryUsedPercent"]
    assert r.report["Details"]["algo-1"]["host memory"]["increase"] == pytest.approx(10.0)


@pytest.mark.parametrize("name", ["CPUBottleneck", "IOBottleneck", "GPUMemoryIncrease"])
def test_a_host_reading_below_its_patience_says_not_enough_data(name):
    prof = Profile(
        [
            *cores(np.full(300, 99.0)),
            *cores(np.full(300, 99.0), dim="I/OWaitPercentage"),
            host_memory(np.arange(300.0) / 3),
        ]
    )
    r = rule(name, prof)
    assert invoke_rule(r).fired == []
    v = r.report["Verdict"]
    assert v["status"] == "not enough data" and v["reading"] == "host"
    assert v["message"].startswith("no GPU seen; judged the ") and "patience" in v["message"]


@pytest.mark.parametrize("name", ["CPUBottleneck", "GPUMemoryIncrease"])
def test_with_gpu_rows_the_gpu_is_read_and_the_job_rows_are_not(name):
    gpu = [
        series("GPUUtilization", np.full(N, 90.0), name="gpu0", type_="gpu"),
        series("GPUMemoryUtilization", np.full(N, 30.0), name="gpu0", type_="gpu"),
    ]
    climbing = np.linspace(0, 100, N)
    r = rule(
        name,
        Profile(
            [
                *gpu,
                *cores(np.full(N, 100.0)),
                job("JobCPUDemand", np.full(N, 150.0)),
                job("JobMemoryUsedPercent", climbing * 10 % 100),
            ]
        ),
    )
    assert invoke_rule(r).fired == []
    v = r.report["Verdict"]
    assert v["status"] == "no issue" and v["reading"] == "GPU" and "metrics" not in v
    assert "Recommendation" not in r.report
