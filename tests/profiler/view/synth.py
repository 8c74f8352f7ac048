"""A synthetic profiler trial with the ProfilerTrial's surface (system_series, framework_events,
steps, first_timestamp, get_latest_timestamp, get_end_timestamp, path) over the columnar shapes of
smdebug.profiler.reading.frames: one node, a few steps with data loading, forward, backward and
optimizer, one step that stalls in the data loader, and a torch.profiler trace of two steps."""

from __future__ import annotations

import json
import os
import time

import numpy as np

from smdebug.profiler.reading.frames import FrameworkEvents, Series, StepSpans

T0 = 1_700_000_000_000_000  # µs since the epoch
STEP_US = 100_000
STALL_STEP = 7
STALL_US = 400_000


class SynthTrial:
    def __init__(
        self,
        path,
        steps: int = 12,
        node: str = "algo-1",
        fw_node: str = "algo-1-0",
        cores: int = 2,
        gpus: int = 1,
        kineto: bool = True,
        t0: int = T0,
        file_node: str = "0-algo-1",
        all_metrics: bool = False,
    ):
        """``fw_node``: the process as the readers name it; ``file_node``: as part 1's file names do;
        ``all_metrics``: also every other metric the profiler writes (I/O wait per core, disk and
        network bytes/s, the job's CPU and memory), with values of many digits (12345678.901...)."""
        self.path = str(path)
        self.file_node = file_node
        self.node = node
        rows = []  # phase, name, start, end, step, tid
        t = t0 + 1_000_000  # one second of initialization
        for s in range(steps):
            load = 10_000 + (STALL_US if s == STALL_STEP else 0)
            start = t
            rows.append(("DataLoaderIter", "_SingleProcessDataLoaderIter::GetNext", t, t + load, -1, 1))
            t += load
            rows.append(("Forward", "Net", t, t + 30_000, -1, 1))
            rows.append(("Backward", "Net.backward", t + 30_000, t + 80_000, -1, 2))
            rows.append(("Optimizer", "SGD.step", t + 80_000, t + 90_000, -1, 1))
            t += 90_000
            rows.append(("Step:ModeKeys.TRAIN", "Step:ModeKeys.TRAIN", start, t, s, 1))
        self.end = t + 500_000
        rows.sort(key=lambda r: r[2])
        n = len(rows)
        self._events = FrameworkEvents(
            phase=np.array([r[0] for r in rows], dtype=object),
            name=np.array([r[1] for r in rows], dtype=object),
            start_us=np.array([r[2] for r in rows], dtype=np.int64),
            end_us=np.array([r[3] for r in rows], dtype=np.int64),
            step=np.array([r[4] for r in rows], dtype=np.int64),
            node_id=np.array([fw_node] * n, dtype=object),
            pid=np.full(n, 4242, dtype=np.int64),
            tid=np.array([r[5] for r in rows], dtype=np.int64),
            args=[{"step_num": str(r[4])} if r[4] >= 0 else None for r in rows],
        )
        ts = np.arange(t0, self.end + 1, 100_000, dtype=np.int64)
        phase = np.linspace(0, 6, len(ts))
        self._series = []
        for c in range(cores):
            self._series.append(Series(node, "cpu", f"cpu{c}", "CPUUtilization", ts, 40 + 30 * np.sin(phase + c)))
        for g in range(gpus):
            self._series.append(Series(node, "gpu", f"gpu{g}", "GPUUtilization", ts, 20 + 10 * np.cos(phase)))
            self._series.append(
                Series(node, "gpu", f"gpu{g}", "GPUMemoryUtilization", ts, np.linspace(10, 60, len(ts)))
            )
        self._series.append(Series(node, "memory", "MemoryUsedPercent", "", ts, np.linspace(20, 25, len(ts))))
        self._series.append(Series(node, "i/o", "IOPS", "", ts, np.full(len(ts), 1.5)))
        if all_metrics:
            noisy = np.linspace(0, 1, len(ts)) * 0.020855000000000002
            for c in range(cores):
                self._series.append(Series(node, "cpu", f"cpu{c}", "I/OWaitPercentage", ts, 5.555555555555555 + noisy))
            for name, scale in (
                ("ReadThroughputInBytesPerSecond", 12345678.901234),
                ("WriteThroughputInBytesPerSecond", 987.654321),
            ):
                self._series.append(Series(node, "i/o", name, "", ts, scale * (1 + noisy)))
            for name, scale in (("ReceiveBytesPerSecond", 2345678901.2345), ("TransmitBytesPerSecond", 45678.9012345)):
                self._series.append(Series(node, "network", name, "Algorithm", ts, scale * (1 + noisy)))
            self._series.append(Series(node, "job", "cpu", "JobCPUDemand", ts, 104.23456789 + noisy))
            self._series.append(Series(node, "job", "cpu", "JobCPUUtilization", ts, 13.123456789 + noisy))
            self._series.append(Series(node, "job", "memory", "JobMemoryUsedPercent", ts, 2.4123456789 + noisy))
        if kineto:
            self.kineto = write_kineto(self.path, file_node, t0 + 1_000_000 + 3 * STEP_US, 2)

        self.t0 = t0

    @property
    def first_timestamp(self) -> int:
        return self.t0

    def get_latest_timestamp(self) -> int:
        return self.end

    def get_end_timestamp(self) -> int:
        return self.end

    def system_series(self, start_us, end_us, *, type=None, dimension=None, node_id=None):  # noqa: A002
        return [
            s.window(start_us, end_us)
            for s in self._series
            if (type is None or s.type == type)
            and (dimension is None or s.dimension == dimension)
            and (node_id is None or s.node_id == node_id)
        ]

    def framework_events(self, start_us, end_us) -> FrameworkEvents:
        return self._events.overlapping(start_us, end_us)

    def steps(self, mode="TRAIN") -> StepSpans:
        return StepSpans.from_events(self._events, str(getattr(mode, "name", mode)))


def write_kineto(root: str, fw_node: str, start_us: int, steps: int) -> str:
    """A torch.profiler-like trace (baseTimeNanoseconds + relative ts) of ``steps`` linear layers."""
    base_ns = (start_us - 50) * 1000
    events = [
        {"ph": "M", "name": "process_name", "pid": 777, "tid": 0, "args": {"name": "python3"}},
        {"ph": "M", "name": "thread_name", "pid": 777, "tid": 777, "args": {"name": "main"}},
    ]
    for s in range(steps):
        ts = 50 + s * STEP_US + 20_000
        events.append(
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": "aten::linear",
                "pid": 777,
                "tid": 777,
                "ts": ts,
                "dur": 120.5,
                "args": {"External id": s},
            }
        )
        events.append({"ph": "s", "id": 1 + s, "pid": 777, "tid": 777, "ts": ts, "cat": "ac2g", "name": "ac2g"})
        events.append(
            {"ph": "f", "id": 1 + s, "pid": 0, "tid": 7, "ts": ts + 5, "cat": "ac2g", "name": "ac2g", "bp": "e"}
        )
        events.append({"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": ts + 5, "dur": 40})
    events.append({"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": 50 + steps * STEP_US})
    doc = {"schemaVersion": 1, "baseTimeNanoseconds": base_ns, "traceEvents": events, "traceName": "x"}
    hour = time.strftime("%Y%m%d%H", time.gmtime(start_us / 1e6))
    folder = os.path.join(root, "framework", "pytorch", "detailed_profiling", hour, "000000003")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{fw_node}_{start_us}_{start_us + steps * STEP_US}.pt.trace.json")
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def write_profile(root, steps: int = 12, gpus: int = 1, ended: bool = False, all_metrics: bool = False) -> SynthTrial:
    """The synthetic profile written to ``root`` by part 1's writers (TimelineWriter, the system
    metrics' JSON lines), times just after now; returns the SynthTrial it was made from, which
    ProfilerTrial(root) must read back. ``all_metrics``: see SynthTrial."""
    from smdebug.profiler.locations import system_file
    from smdebug.profiler.recording.system import format_rows
    from smdebug.profiler.recording.timeline import TimelineWriter, now_us

    synth = SynthTrial(
        root, steps=steps, gpus=gpus, t0=(now_us() // 1_000_000 + 2) * 1_000_000, all_metrics=all_metrics
    )
    ev = synth._events
    writer = TimelineWriter(str(root), synth.file_node)
    for i in range(len(ev)):
        writer.complete(str(ev.phase[i]), str(ev.name[i]), int(ev.start_us[i]), int(ev.end_us[i]), ev.args[i])
    writer.close()
    series = synth._series
    for k, t in enumerate(series[0].timestamp_us.tolist()):
        rows = [(s.type, s.name, s.dimension, float(s.value[k])) for s in series]
        path = system_file(str(root), t / 1e6, synth.node)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "ab") as f:
            f.write(format_rows(rows, synth.node, t / 1e6))
    if ended:
        from smdebug.profiler.locations import END_MARKER

        for stream in ("system", "framework"):
            with open(os.path.join(str(root), stream, END_MARKER), "w") as f:
                f.write(str(synth.end))
    return synth


def profiled_pytorch_run(tmp_path, steps: int = 40, detailed: dict | None = None):
    """A short PyTorch training profiled by smdebug (its profiler folder): system metrics every
    100 ms, framework events, torch.profiler over ``detailed`` (default: steps 5 and 6)."""
    import pytest

    torch = pytest.importorskip("torch")
    pytest.importorskip("psutil")
    import smdebug.pytorch as smd
    from smdebug.profiler import ProfilerConfig

    torch.manual_seed(0)
    x = torch.randn(steps * 16, 32)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, (x[:, 0] > 0).long()), batch_size=16)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 2))
    loss_fn = torch.nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    hook = smd.Hook(
        out_dir=str(tmp_path / "run"),
        profiler_config=ProfilerConfig(
            local_path=str(tmp_path / "profiler"),
            interval_millis=100,
            detailed=detailed or {"StartStep": 5, "NumSteps": 2},
        ),
    )
    hook.register_module(model)
    hook.register_loss(loss_fn)
    hook.set_mode(smd.modes.TRAIN)
    for xb, yb in loader:
        opt.zero_grad()
        loss_fn(model(xb), yb).backward()
        opt.step()
    # 40 steps of this model can take less than one 100 ms interval: wait for two system samples so
    # that every counter track has at least two (the sampler's own condition, not a sleep)
    assert hook.profiling.profiler.system.wait_for_samples(2, timeout=30)
    hook.close()
    return tmp_path / "profiler"
