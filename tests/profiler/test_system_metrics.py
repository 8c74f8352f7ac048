"""System metrics: psutil rows in SageMaker's layout, at the configured interval, read by 1.0.34."""

from __future__ import annotations

import json
import os
import statistics
from collections import Counter, namedtuple
from pathlib import Path

import pytest

from smdebug.profiler.locations import system_file
from smdebug.profiler.recording.gpu import GpuSampler, open_gpus
from smdebug.profiler.recording.system import HostSampler, SystemMetricsSampler
from smdtest import run_json

pytest.importorskip("psutil")
PEER_READ = Path(__file__).with_name("peer_read.py")
# the job's own rows (profiler.job_metrics), where the kernel gives per-task run and wait times
JOB_ROWS = (
    {("job", "cpu", "JobCPUDemand"), ("job", "cpu", "JobCPUUtilization"), ("job", "memory", "JobMemoryUsedPercent")}
    if os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/schedstat")
    else set()
)


def _rows(root) -> list[dict]:
    out = []
    for f in sorted(Path(root, "system").rglob("*.json")):
        out += [json.loads(line) for line in f.read_text().splitlines()]
    return out


def _sample(root, interval_ms=100, n=6, gpus=None) -> SystemMetricsSampler:
    s = SystemMetricsSampler(str(root), interval_ms, "algo-1", gpus=gpus).start()
    try:
        assert s.wait_for_samples(n, timeout=30), "the sampler wrote too few samples"
    finally:
        s.stop()
    assert s.failed is None
    return s


def test_samples_come_at_the_configured_interval_with_one_timestamp_a_sample(tmp_path):
    s = _sample(tmp_path, interval_ms=100, n=8)
    rows = _rows(tmp_path)
    stamps = sorted({r["Timestamp"] for r in rows})
    assert len(stamps) == s.samples >= 8
    gaps = [b - a for a, b in zip(stamps, stamps[1:])]
    assert statistics.median(gaps) == pytest.approx(0.1, abs=0.02)
    per_sample = Counter(r["Timestamp"] for r in rows)
    ncpu = os.cpu_count()
    # cpu util + iowait per core, memory, 3 i/o, 2 network, the job's rows
    assert set(per_sample.values()) == {2 * ncpu + 6 + len(JOB_ROWS)}


def test_rows_use_sagemakers_vocabulary_and_file_layout(tmp_path):
    s = _sample(tmp_path, n=2)
    rows = _rows(tmp_path)
    assert list(rows[0]) == ["Type", "Name", "Dimension", "Value", "NodeId", "Timestamp"]
    kinds = {(r["Type"], r["Name"] if r["Type"] != "cpu" else "cpu<i>", r["Dimension"]) for r in rows}
    assert (
        kinds
        == {
            ("cpu", "cpu<i>", "CPUUtilization"),
            ("cpu", "cpu<i>", "I/OWaitPercentage"),
            ("memory", "MemoryUsedPercent", ""),
            ("i/o", "IOPS", ""),
            ("i/o", "ReadThroughputInBytesPerSecond", ""),
            ("i/o", "WriteThroughputInBytesPerSecond", ""),
            ("network", "ReceiveBytesPerSecond", "Algorithm"),
            ("network", "TransmitBytesPerSecond", "Algorithm"),
        }
        | JOB_ROWS
    )
    assert all(r["NodeId"] == "algo-1" for r in rows)
    assert all(0 <= r["Value"] <= 100 for r in rows if r["Type"] in ("cpu", "memory"))
    for f in s.files:  # <root>/system/incremental/<YYYYMMDDHH>/<minute>.algo-1.json
        rel = Path(f).relative_to(tmp_path)
        assert rel.parts[:2] == ("system", "incremental") and len(rel.parts[2]) == 10
        minute = int(rel.name.split(".")[0])
        assert minute % 60 == 0 and len(rel.name.split(".")[0]) == 10
        assert all(minute <= json.loads(line)["Timestamp"] < minute + 60 for line in Path(f).read_text().splitlines())


def test_smdebug_1034_reads_our_system_metrics_with_the_same_counts_and_values(tmp_path, peer):
    _sample(tmp_path, n=5)
    ours = _rows(tmp_path)
    theirs = run_json(peer, PEER_READ, tmp_path, "system")["events"]
    assert len(theirs) == len(ours)
    key = lambda r: (r[5], r[0], r[1], r[2])  # noqa: E731
    theirs = sorted(theirs, key=key)
    ours = sorted(
        ([r["Type"], r["Name"], r["Dimension"], r["Value"], r["NodeId"], r["Timestamp"]] for r in ours), key=key
    )
    assert theirs == ours
    assert Counter(r[0] for r in theirs)["cpu"] == 2 * os.cpu_count() * len({r[5] for r in theirs})


def test_host_rows_from_counters():
    """Percentages and rates from two readings of (fake) psutil counters 0.5 s apart."""
    T = namedtuple("T", "user nice system idle iowait irq softirq steal guest guest_nice")
    D = namedtuple("D", "read_count write_count read_bytes write_bytes")
    N = namedtuple("N", "bytes_sent bytes_recv")
    M = namedtuple("M", "percent")

    class FakePsutil:
        def __init__(self):
            self.readings = iter(
                [
                    ([T(10, 0, 5, 80, 5, 0, 0, 0, 3, 0)], D(10, 20, 1000, 2000), N(100, 200)),
                    ([T(40, 0, 15, 120, 25, 0, 0, 0, 9, 0)], D(15, 35, 3000, 2500), N(600, 1200)),
                ]
            )

        def cpu_times(self, percpu):
            self.cur = next(self.readings)
            return self.cur[0]

        def disk_io_counters(self, perdisk):
            return self.cur[1]

        def net_io_counters(self, pernic):
            return self.cur[2]

        def virtual_memory(self):
            return M(42.5)

    h = HostSampler(FakePsutil())
    assert h.rows(1000.0) == [("memory", "MemoryUsedPercent", "", 42.5)]
    rows = {(t, n, d): v for t, n, d, v in h.rows(1000.5)}
    # core: +30 user +10 system +40 idle +20 iowait (guest +6 is inside user) = 100 jiffies
    assert rows[("cpu", "cpu0", "CPUUtilization")] == pytest.approx(40.0)
    assert rows[("cpu", "cpu0", "I/OWaitPercentage")] == pytest.approx(20.0)
    assert rows[("i/o", "IOPS", "")] == pytest.approx(20 / 0.5)
    assert rows[("i/o", "ReadThroughputInBytesPerSecond", "")] == pytest.approx(4000.0)
    assert rows[("i/o", "WriteThroughputInBytesPerSecond", "")] == pytest.approx(1000.0)
    assert rows[("network", "ReceiveBytesPerSecond", "Algorithm")] == pytest.approx(2000.0)
    assert rows[("network", "TransmitBytesPerSecond", "Algorithm")] == pytest.approx(1000.0)


class FakeNvml:
    Util = namedtuple("Util", "gpu memory")
    Mem = namedtuple("Mem", "used total")

    def __init__(self, count=2):
        self.count = count
        self.shutdown = False

    def nvmlInit(self):
        pass

    def nvmlDeviceGetCount(self):
        return self.count

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlDeviceGetUtilizationRates(self, h):
        return self.Util(gpu=[37, 90][h], memory=5)

    def nvmlDeviceGetMemoryInfo(self, h):
        return self.Mem(used=[1, 3][h] * 2**30, total=4 * 2**30)

    def nvmlShutdown(self):
        self.shutdown = True


def test_gpu_rows_from_a_fake_nvml(tmp_path):
    nvml = FakeNvml()
    gpus = open_gpus(nvml)
    assert gpus.rows() == [
        ("gpu", "gpu0", "GPUUtilization", 37.0),
        ("gpu", "gpu0", "GPUMemoryUtilization", 25.0),
        ("gpu", "gpu1", "GPUUtilization", 90.0),
        ("gpu", "gpu1", "GPUMemoryUtilization", 75.0),
    ]
    _sample(tmp_path, n=2, gpus=gpus)
    rows = [r for r in _rows(tmp_path) if r["Type"] == "gpu"]
    assert {(r["Name"], r["Dimension"], r["Value"]) for r in rows} == {
        ("gpu0", "GPUUtilization", 37.0),
        ("gpu0", "GPUMemoryUtilization", 25.0),
        ("gpu1", "GPUUtilization", 90.0),
        ("gpu1", "GPUMemoryUtilization", 75.0),
    }
    assert nvml.shutdown


def test_no_gpu_says_so_and_writes_no_gpu_rows(tmp_path, caplog):
    class NoDriver(FakeNvml):
        def nvmlInit(self):
            raise RuntimeError("NVML Shared Library Not Found")

    caplog.set_level("INFO", logger="smdebug")
    assert open_gpus(NoDriver()) is None
    assert open_gpus(FakeNvml(count=0)) is None
    assert sum(r.getMessage().endswith(": no GPU") for r in caplog.records) == 2
    s = SystemMetricsSampler(str(tmp_path), 100, "algo-1", gpus="auto")  # this machine has no GPU
    assert s.gpus is None
    s.start()
    assert s.wait_for_samples(2, timeout=30)
    s.stop()
    assert not [r for r in _rows(tmp_path) if r["Type"] == "gpu"]


def test_gpu_sampler_formats_each_device():
    assert GpuSampler(FakeNvml(count=1), [0]).rows()[0] == ("gpu", "gpu0", "GPUUtilization", 37.0)


def test_a_failing_sample_stops_the_sampler_after_three_tries_without_raising(tmp_path):
    class Broken(HostSampler):
        def __init__(self):
            self.calls = 0

        def rows(self, now):
            self.calls += 1
            if self.calls > 1:  # the first call primes the counters
                raise OSError("no /proc")
            return []

    s = SystemMetricsSampler(str(tmp_path), 10, "algo-1", gpus=None, host=Broken()).start()
    s.wait_for_samples(1, timeout=30)  # returns when the sampler gives up
    s.stop()
    assert isinstance(s.failed, OSError) and s.samples == 0


def test_minute_files():
    assert system_file("/r", 1591160699.45, "algo-2") == "/r/system/incremental/2020060305/1591160640.algo-2.json"
