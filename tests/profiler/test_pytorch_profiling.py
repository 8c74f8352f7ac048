"""PyTorch: the hook's framework events on a real MLP fed by a DataLoader with two workers."""

from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("psutil")

from timelines import read_events, steps_of  # noqa: E402

import smdebug.pytorch as smd  # noqa: E402
from smdebug.profiler import ProfilerConfig  # noqa: E402
from smdtest import run_json  # noqa: E402

PEER_READ = Path(__file__).with_name("peer_read.py")
N_BATCHES = 120


def _train(tmp_path, epochs=1, **config):
    torch.manual_seed(0)
    x = torch.randn(N_BATCHES * 16, 32)
    y = (x[:, 0] > 0).long()
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=16, num_workers=2)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 2))
    loss_fn = torch.nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    cfg = ProfilerConfig(local_path=str(tmp_path / "prof"), **config)
    hook = smd.Hook(out_dir=str(tmp_path / "run"), profiler_config=cfg)
    hook.register_module(model)
    hook.register_loss(loss_fn)
    hook.set_mode(smd.modes.TRAIN)
    walls = []
    for _ in range(epochs):
        t0 = time.time()
        for xb, yb in loader:
            opt.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()
        walls.append((time.time() - t0) * 1e6)
    hook.close()
    return tmp_path / "prof", walls


def _inside(child, parent) -> bool:
    return parent["start"] <= child["start"] and child["end"] <= parent["end"]


def test_events_nest_in_their_steps_and_steps_add_up_to_the_wall_time(tmp_path):
    root, (wall,) = _train(tmp_path, interval_millis=100)
    events = read_events(root)
    steps = steps_of(events)
    assert sorted(steps) == list(range(N_BATCHES))
    by_phase = {}
    for e in events:
        by_phase.setdefault(e["phase"], []).append(e)
    assert {p: len(v) for p, v in by_phase.items()} == {
        "Step:ModeKeys.TRAIN": N_BATCHES,
        "Forward": N_BATCHES,
        "Backward": N_BATCHES,
        "Optimizer": N_BATCHES,
        "DataLoaderIter": N_BATCHES,
        "DataLoaderIterInitialize": 1,
        "DataLoaderWorker": N_BATCHES,
    }
    for phase in ("Forward", "Backward", "Optimizer", "DataLoaderIter"):
        for e in by_phase[phase]:
            assert _inside(e, steps[int(e["args"]["step_num"])]), (phase, e)
    assert {e["name"] for e in by_phase["Forward"]} == {"Sequential"}
    assert {e["name"] for e in by_phase["Optimizer"]} == {"SGD.step"}
    assert {e["name"] for e in by_phase["DataLoaderIter"]} == {"_MultiProcessingDataLoaderIter::GetNext"}
    assert {e["args"]["worker_id"] for e in by_phase["DataLoaderIter"]} == {0, 1}
    # each worker process wrote its batches on its own timeline (node <worker pid>-<host>)
    workers = by_phase["DataLoaderWorker"]
    assert {e["args"]["worker_id"] for e in workers} == {0, 1}
    pids = {e["args"]["pid"] for e in workers}
    assert len(pids) == 2 and os.getpid() not in pids
    assert {e["file"].split("_")[1].split("-")[0] for e in workers} == {str(p) for p in pids}
    (init,) = by_phase["DataLoaderIterInitialize"]
    assert init["args"]["num_workers"] == 2 and init["args"]["pin_memory"] is False
    # forward, backward and the optimizer follow each other inside a step
    fwd = {int(e["args"]["step_num"]): e for e in by_phase["Forward"]}
    bwd = {int(e["args"]["step_num"]): e for e in by_phase["Backward"]}
    opt = {int(e["args"]["step_num"]): e for e in by_phase["Optimizer"]}
    assert all(fwd[s]["end"] <= bwd[s]["start"] and bwd[s]["end"] <= opt[s]["start"] for s in steps)
    # steps tile the loop: each starts where the previous ended; with the iterator's start-up they
    # account for the wall time the loop took
    ordered = [steps[s] for s in sorted(steps)]
    assert all(a["end"] == b["start"] for a, b in zip(ordered, ordered[1:]))
    assert init["end"] <= ordered[0]["start"]
    total = sum(e["end"] - e["start"] for e in ordered) + (init["end"] - init["start"])
    assert total == pytest.approx(wall, rel=0.05)
    # CPU samples came every 100 ms while it trained
    stamps = sorted(
        {
            r["Timestamp"]
            for f in Path(root, "system").rglob("*.json")
            for r in map(json.loads, f.read_text().splitlines())
            if r["Type"] == "cpu"
        }
    )
    assert len(stamps) >= 3
    assert statistics.median(b - a for a, b in zip(stamps, stamps[1:])) == pytest.approx(0.1, abs=0.03)


def test_smdebug_1034_reads_our_pytorch_timeline(tmp_path, peer):
    root, _ = _train(tmp_path, epochs=2)
    ours = read_events(root)
    out = run_json(peer, PEER_READ, root, "framework", 1, 3)
    theirs = out["events"]
    assert len(theirs) == len(ours)
    key = lambda e: (e[0], e[1], e[2], e[3])  # noqa: E731
    assert sorted(key(e) for e in theirs) == sorted((e["phase"], e["name"], e["start"], e["end"]) for e in ours)
    assert {e[7] for e in theirs} == {"PythontimelineMetrics"}
    steps = steps_of(ours)
    # 1.0.34: from the first event of step 1 to just before the first event of step 3
    first = lambda n: min(e["start"] for e in ours if e["args"].get("step_num") == str(n))  # noqa: E731
    assert out["step_interval"] == [first(1), first(3) - 1]
    assert sorted(steps) == list(range(2 * N_BATCHES))  # two epochs: mode steps go on counting
    # the epoch's last step ends when its DataLoader runs out, not at the next epoch's first step
    nxt_init = max(e["start"] for e in ours if e["phase"] == "DataLoaderIterInitialize")
    assert steps[N_BATCHES - 1]["end"] <= nxt_init


def test_no_profiler_config_records_nothing_and_patches_nothing(tmp_path):
    from torch.utils.data import dataloader

    before = dataloader._BaseDataLoaderIter.__next__
    hook = smd.Hook(out_dir=str(tmp_path / "run"))
    assert hook.profiling is None
    assert dataloader._BaseDataLoaderIter.__next__ is before
    hook.close()
    assert not (tmp_path / "prof").exists()


def test_the_dataloader_patch_is_removed_at_close(tmp_path):
    from torch.utils.data import dataloader

    before = dataloader._BaseDataLoaderIter.__next__
    hook = smd.Hook(out_dir=str(tmp_path / "run"), profiler_config=ProfilerConfig(local_path=str(tmp_path / "p")))
    assert dataloader._BaseDataLoaderIter.__next__ is not before
    hook.close()
    assert dataloader._BaseDataLoaderIter.__next__ is before
    assert (tmp_path / "p" / "framework" / "training_job_end.ts").exists()
    assert (tmp_path / "p" / "system" / "training_job_end.ts").exists()


def test_detailed_profiling_of_the_configured_steps_with_torch_profiler(tmp_path):
    root, _ = _train(tmp_path, detailed={"StartStep": 3, "NumSteps": 2}, system_metrics=False)
    (trace,) = Path(root, "framework", "pytorch", "detailed_profiling").glob("*/*/*.pt.trace.json")
    assert trace.parent.name == "000000003"
    node, start_us, end_us = (int(v) if v.isdigit() else v for v in trace.name[: -len(".pt.trace.json")].split("_"))
    steps = steps_of(read_events(root))
    assert steps[3]["start"] <= start_us <= steps[3]["end"] and steps[4]["end"] <= end_us <= steps[5]["end"]
    doc = json.loads(trace.read_text())
    base = doc["baseTimeNanoseconds"] / 1000
    ops = [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "cpu_op"]
    # the operators ran while the profile was on (1 ms for reading two clocks)
    assert all(start_us - 1000 <= base + e["ts"] <= end_us + 1000 for e in ops)
    assert sum(e["name"] == "aten::linear" for e in ops) == 2 * 2  # 2 steps x 2 Linear layers
