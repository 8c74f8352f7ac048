"""PandasFrame and PandasFrameAnalysis (1.0.34's notebook helpers) on a PyTorch run: the same
DataFrames and statistics as 1.0.34's (the same query script runs in both interpreters)."""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import pytest

from smdtest import run_json

QUERIES = Path(__file__).with_name("pandas_queries.py")


def _train(tmp_path, batches=12):
    torch = pytest.importorskip("torch")
    pytest.importorskip("psutil")
    import smdebug.pytorch as smd
    from smdebug.profiler import ProfilerConfig

    torch.manual_seed(0)
    x = torch.randn(batches * 8, 16)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, (x[:, 0] > 0).long()), batch_size=8)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2))
    loss_fn = torch.nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    hook = smd.Hook(
        out_dir=str(tmp_path / "run"),
        profiler_config=ProfilerConfig(local_path=str(tmp_path / "prof"), interval_millis=100),
    )
    hook.register_module(model)
    hook.register_loss(loss_fn)
    hook.set_mode(smd.modes.TRAIN)
    for xb, yb in loader:
        opt.zero_grad()
        loss_fn(model(xb), yb).backward()
        opt.step()
        time.sleep(0.05)
    hook.close()
    return tmp_path / "prof"


def _close(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return (a is None and b is None) or (
            isinstance(a, (int, float))
            and isinstance(b, (int, float))
            and (math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6) or (math.isnan(a) and math.isnan(b)))
        )
    return a == b


def _same_table(ours, theirs):
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b)), (a, b)


def test_pandas_frame_and_analysis_as_1034(tmp_path, peer):
    root = _train(tmp_path)
    ours = run_json(sys.executable, QUERIES, root)
    theirs = run_json(peer, QUERIES, root)
    for key in ("system_columns", "framework_columns", "dataloader_columns", "cpu_only", "forward_only", "by_step"):
        assert ours[key] == theirs[key], key
    for key in ("system", "framework", "dataloader"):
        assert len(theirs[key]) > 0, key
        _same_table(ours[key], theirs[key])
    for key in ("step_stats", "step_stats_by_process", "utilization", "utilization_cpu", "device_usage", "intervals"):
        assert len(theirs[key]) > 0, key
        _same_table(ours[key], theirs[key])
