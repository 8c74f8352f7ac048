"""Each profiler rule on synthetic profiles (GPU metrics included): it fires in the window where
the problem is, stays silent on a healthy profile, and says so when it had nothing to judge."""

from __future__ import annotations

import numpy as np
import pytest
from prof_rule_trials import SECOND, T0, Profile, series, steps

from smdebug.rules import invoke_rule
from smdebug.rules.profiler import get_profiler_rule_class as get_rule_class

N = 2400  # 240 s at 100 ms
WAVE = 3 * np.sin(np.arange(N))  # deterministic jitter


def rule(name, profile, **params):
    return get_rule_class(name)(profile, **params)


def windows(run, r):
    """The fired windows as (start s, end s) from T0."""
    return [((a - T0) / SECOND, (b - T0) / SECOND) for a, b in r.report["Verdict"]["fired_windows"]]


def gpu(values, dim="GPUUtilization", name="gpu0", node="algo-1"):
    return series(dim, values, name=name, type_="gpu", node=node)


def cpus(values, n=2, dim="CPUUtilization"):
    return [series(dim, values, name=f"cpu{i}") for i in range(n)]


def step_fn(before, after, at_s):
    """``before`` until ``at_s`` seconds, ``after`` from there (per 100 ms sample), plus jitter."""
    return np.where(np.arange(N) < at_s * 10, before, after) + WAVE


def test_low_gpu_utilization_fires_in_the_window_where_the_gpu_idles():
    r = rule("LowGPUUtilization", Profile([gpu(step_fn(90, 5, 180)), *cpus(np.full(N, 50.0))]))
    run = invoke_rule(r)
    assert run.fired == [3] and run.ended == "no_more_data"
    assert windows(run, r)[0][0] == 180
    assert r.report["Details"]["algo-1"]["gpu0"]["gpu_95"] < 70
    assert r.report["Verdict"]["status"] == "issues found" and "underutilized" in r.reason
    healthy = rule("LowGPUUtilization", Profile([gpu(np.full(N, 90.0) + WAVE)]))
    assert invoke_rule(healthy).fired == [] and healthy.report["Verdict"]["status"] == "no issue"


def test_low_gpu_utilization_fires_on_a_fluctuating_gpu():
    swing = np.where(np.arange(N) % 2 == 0, 100.0, 0.0)
    assert invoke_rule(rule("LowGPUUtilization", Profile([gpu(swing)]))).fired


@pytest.mark.parametrize("name", ["LowGPUUtilization", "BatchSize", "LoadBalancing"])
def test_gpu_rules_say_no_gpu_data_on_a_cpu_only_profile(name):  # the others judge the host (..._host.py)
    r = rule(name, Profile(cpus(np.full(N, 99.0)) + cpus(np.full(N, 99.0), dim="I/OWaitPercentage")))
    run = invoke_rule(r)
    assert run.fired == [] and run.evaluated == [0, 1, 2, 3]
    assert r.report["Verdict"]["status"] == "no GPU data"
    assert "no GPU data" in r.report["Verdict"]["message"]


@pytest.mark.parametrize(
    "name,dim,param",
    [("CPUBottleneck", "CPUUtilization", "cpu_threshold"), ("IOBottleneck", "I/OWaitPercentage", "io_threshold")],
)
def test_bottleneck_fires_once_the_share_of_starved_samples_passes_the_threshold(name, dim, param):
    busy = [series(dim, step_fn(20, 95, 50), name="cpu0"), series(dim, np.full(N, 20.0), name="cpu1")]
    r = rule(name, Profile([gpu(step_fn(90, 5, 50)), *busy]))
    run = invoke_rule(r)
    # window 0: 600 samples <= patience 1000; window 1 (60-120 s): 700 of 1200 starved (58 %)
    assert run.fired[0] == 1 and windows(run, r)[0] == (60, 120)
    assert r.report["Violations"] == N - 500 and r.report["Datapoints"] == N
    first = r.report["Details"]["bottlenecks"][str(T0 + 50 * SECOND)]
    assert first == {"node": "algo-1", "GPUs": 1, "CPUs": 1}
    healthy = rule(name, Profile([gpu(np.full(N, 90.0)), *busy]))
    assert invoke_rule(healthy).fired == [] and healthy.report["Verdict"]["status"] == "no issue"


def test_batch_size_fires_when_cpu_gpu_and_gpu_memory_are_all_low():
    low = np.full(N, 20.0) + WAVE
    r = rule("BatchSize", Profile([gpu(low), gpu(low, "GPUMemoryUtilization"), *cpus(low)]))
    run = invoke_rule(r)
    assert run.fired[0] == 1  # after patience (1000 samples) and window (500)
    assert set(r.report["Details"]["algo-1"]) == {"cpu", "gpu0", "gpu0_memory"}
    busy_gpu = rule("BatchSize", Profile([gpu(low + 70), gpu(low, "GPUMemoryUtilization"), *cpus(low)]))
    assert invoke_rule(busy_gpu).fired == []


def test_gpu_memory_increase_fires_in_the_window_of_the_climb():
    mem = np.full(N, 30.0)
    mem[1500:1570] = 30 + np.arange(1, 71)  # 150 s to 157 s: +1 point per sample, then 100 %
    mem[1570:] = 100.0
    r = rule("GPUMemoryIncrease", Profile([gpu(mem, "GPUMemoryUtilization")]))
    run = invoke_rule(r)
    assert run.fired == [2] and windows(run, r)[0] == (120, 180)
    assert r.report["Details"]["algo-1"]["gpu0"]["increase"] == pytest.approx(10.0)
    flat = rule("GPUMemoryIncrease", Profile([gpu(np.full(N, 30.0) + WAVE / 3, "GPUMemoryUtilization")]))
    assert invoke_rule(flat).fired == []


def test_load_balancing_compares_the_gpus_of_a_node():
    r = rule("LoadBalancing", Profile([gpu(np.full(N, 90.0) + WAVE), gpu(np.full(N, 10.0) + WAVE, name="gpu1")]))
    run = invoke_rule(r)
    assert run.fired[0] == 1  # both past patience (1000 samples) at the end of window 1
    assert r.report["Details"]["algo-1"]["distances"]["gpu0"]["gpu1"] > 0.5
    same = rule("LoadBalancing", Profile([gpu(np.full(N, 90.0) + WAVE), gpu(np.full(N, 90.0) - WAVE, name="gpu1")]))
    assert invoke_rule(same).fired == [] and same.report["Verdict"]["status"] == "no issue"
    one = rule("LoadBalancing", Profile([gpu(np.full(N, 90.0))]))
    invoke_rule(one)
    assert one.report["Verdict"]["status"] == "not enough data" and "two GPUs" in one.report["Verdict"]["message"]


def test_overall_system_usage_reports_per_node_statistics_and_never_fires():
    mem = series("", np.full(N, 40.0), name="MemoryUsedPercent", type_="memory")
    r = rule(
        "OverallSystemUsage",
        Profile(
            [
                series("CPUUtilization", np.full(N, 10.0), name="cpu0"),
                series("CPUUtilization", np.full(N, 30.0), name="cpu1"),
                mem,
            ]
        ),
    )
    assert invoke_rule(r).fired == []
    d = r.report["Details"]
    assert d["CPU"]["algo-1"]["p50"] == pytest.approx(20.0) and d["CPU memory"]["algo-1"]["max"] == pytest.approx(40.0)
    assert r.report["Verdict"]["status"] == "no issue"


def test_max_initialization_time_fires_when_no_step_has_begun_in_time():
    cpu = cpus(np.full(N, 50.0), n=1)
    late = rule("MaxInitializationTime", Profile(cpu, steps([1.0] * 10, start=T0 + 150 * SECOND)), threshold="1")
    run = invoke_rule(late)
    assert run.fired == [1] and windows(run, late)[0] == (60, 120) and "no step yet" in late.reason
    assert late.report["Details"]["step_num"]["first"] == T0 + 150 * SECOND
    early = rule("MaxInitializationTime", Profile(cpu, steps([1.0] * 10, start=T0 + 30 * SECOND)), threshold="1")
    assert invoke_rule(early).fired == []


def test_step_outlier_fires_in_the_window_of_the_stalled_step():
    d = list(0.1 + 0.01 * np.sin(np.arange(200)))
    d[150] = 3.0
    prof = Profile([], steps(d))
    r = rule("StepOutlier", prof, n_outliers="0", scan_interval_us=str(5 * SECOND))
    run = invoke_rule(r)
    stall_start = T0 + int(sum(int(x * SECOND) for x in d[:150]))
    ((a, b),) = r.report["Verdict"]["fired_windows"]
    assert a <= stall_start < b and len(run.fired) == 1
    assert r.report["Details"]["step_details"]["algo-1"]["step_numbers"] == [150]
    # the defaults (n_outliers=10, as SageMaker) do not fire on one stall
    assert invoke_rule(rule("StepOutlier", Profile([], steps(d)), scan_interval_us=str(5 * SECOND))).fired == []
    healthy = rule("StepOutlier", Profile([], steps([0.1] * 200)), n_outliers="0")
    assert invoke_rule(healthy).fired == [] and healthy.report["Verdict"]["status"] == "no issue"
    short = rule("StepOutlier", Profile([], steps([0.1] * 20)), n_outliers="0")
    invoke_rule(short)
    verdict = short.report["Verdict"]
    assert verdict["status"] == "not enough data" and "?" not in verdict["message"]
    assert "judges after more than 100 steps of one phase on one node" in verdict["message"], verdict


def test_step_outlier_min_ratio_lets_a_hiccup_pass_and_catches_a_stall():
    d = [0.1] * 200
    d[50] = 0.4  # a hiccup: 4 median steps, far above mean + 3 std of a steady run
    assert invoke_rule(rule("StepOutlier", Profile([], steps(d)), n_outliers="0")).fired
    assert invoke_rule(rule("StepOutlier", Profile([], steps(d)), n_outliers="0", min_ratio="10")).fired == []
    d[150] = 3.0
    r = rule("StepOutlier", Profile([], steps(d)), n_outliers="0", min_ratio="10")
    assert invoke_rule(r).fired and r.report["Details"]["step_details"]["algo-1"]["step_numbers"] == [150]


def _loading(pids, seconds=30):
    rows = [
        {
            "phase": "DataLoaderIterInitialize",
            "name": "iter.__init__",
            "start": T0,
            "end": T0 + 10,
            "args": {"num_workers": len(pids) - 1, "pin_memory": False},
        }
    ]
    for k in range(seconds * 10):
        t = T0 + k * 100_000
        rows += [
            {
                "phase": "DataLoaderIter" if p == pids[0] else "DataLoaderWorker",
                "name": "GetNext",
                "start": t + 1,
                "end": t + 50_000,
                "pid": p,
            }
            for p in pids
        ]
    return rows


def test_dataloader_fires_when_too_few_processes_load_data_for_the_cores():
    cpu = cpus(np.full(300, 50.0))
    r = rule("Dataloader", Profile(cpu, _loading([1])), scan_interval_us=str(5 * SECOND))
    run = invoke_rule(r)
    assert run.fired == [2] and "too few" in r.reason  # past patience: 11 seconds seen
    assert r.report["Details"]["cores"] == 2 and r.report["Details"]["num_workers"] == 0
    ok = rule("Dataloader", Profile(cpu, _loading([1, 2, 3])), scan_interval_us=str(5 * SECOND))
    assert invoke_rule(ok).fired == [] and ok.report["Details"]["dataloaders"] == 3
    many = rule("Dataloader", Profile(cpu, _loading(list(range(1, 9)))), scan_interval_us=str(5 * SECOND))
    assert invoke_rule(many).fired and "too many" in many.reason


def test_a_rule_over_an_empty_profile_says_it_looked_at_nothing(caplog):
    r = rule("StepOutlier", Profile([]))
    run = invoke_rule(r)
    assert run.evaluated == [] and run.ended == "no_more_data" and run.looked_at_nothing
    assert r.report["Verdict"]["status"] == "no data"
    r = rule("StepOutlier", Profile(cpus(np.full(N, 50.0))))
    run = invoke_rule(r)
    assert len(run.evaluated) == 4 and run.looked_at_nothing and r.report["Verdict"]["status"] == "no data"
    assert "StepOutlier: evaluated no tensor" in caplog.text


def test_a_rule_below_its_patience_says_not_enough_data():
    r = rule("LowGPUUtilization", Profile([gpu(np.full(300, 5.0))]))
    assert invoke_rule(r).fired == []
    assert r.report["Verdict"]["status"] == "not enough data" and "patience" in r.report["Verdict"]["message"]


def test_report_keeps_1034s_schema_and_parameters():
    r = rule("CPUBottleneck", Profile([]), threshold="60")
    assert set(r.report) == {"RuleTriggered", "Violations", "Details", "Datapoints", "RuleParameters", "Verdict"}
    assert r.report["RuleParameters"].split("\n") == [
        "threshold:60.0",
        "gpu_threshold:10.0",
        "cpu_threshold:90.0",
        "patience:1000",
        "scan_interval_us:60000000",
    ]


def test_events_are_judged_in_the_window_they_start_in():
    rows = steps([0.1] * 20, start=T0 + 59 * SECOND)  # from 59 s to 61 s: crosses the first boundary
    r = rule("StepOutlier", Profile([], rows))
    invoke_rule(r)
    assert r.report["Datapoints"] == 20  # each step once, though events span the boundary


def test_dataloader_without_cpu_metrics_says_it_cannot_compare():
    r = rule("Dataloader", Profile([], _loading([1])), scan_interval_us=str(5 * SECOND))
    assert invoke_rule(r).fired == []
    assert r.report["Verdict"]["status"] == "not enough data" and "cores" in r.report["Verdict"]["message"]


def test_an_idle_gpu_is_logged_once(caplog):
    caplog.set_level("INFO", logger="smdebug")
    invoke_rule(rule("LowGPUUtilization", Profile([gpu(np.zeros(N))])))
    assert caplog.text.count("gpu0 was not used") == 1


def test_gpu_memory_increase_sees_a_climb_across_short_windows():
    mem = np.full(N, 30.0)
    mem[1500:1570] = 30 + np.arange(1, 71)
    mem[1570:] = 100.0
    r = rule("GPUMemoryIncrease", Profile([gpu(mem, "GPUMemoryUtilization")]), scan_interval_us=str(SECOND))
    run = invoke_rule(r)
    # window by window, the same samples as over the whole series at once
    from smdebug.rules.profiler.stats import moving_increase

    hits = np.flatnonzero(moving_increase(mem, 10) > 5) + 19  # increase j ends at sample j + 2*10 - 1
    assert [int(a) for a, _ in windows(run, r)] == sorted({int(i) // 10 for i in hits}) == list(range(150, 158))
