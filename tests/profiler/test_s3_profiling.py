"""Profiling to s3:// (a moto server): the same keys as a local folder, files uploaded as they are
finished, the end markers last; an upload that fails keeps the file and says where."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from timelines import read_events, steps_of

from smdebug.profiler import Profiler, ProfilerConfig
from smdebug.profiler.recording.timeline import now_us


def _keys(boto_client, bucket, prefix) -> list[str]:
    out = []
    for page in boto_client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix + "/"):
        out += [o["Key"][len(prefix) + 1 :] for o in page.get("Contents", [])]
    return sorted(out)


def _download(boto_client, bucket, prefix, dest: Path) -> list[str]:
    keys = _keys(boto_client, bucket, prefix)
    for k in keys:
        p = dest / k
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(boto_client.get_object(Bucket=bucket, Key=f"{prefix}/{k}")["Body"].read())
    return keys


def _shape(key: str) -> str:
    """A key with its times, process ids and host name taken out."""
    return re.sub(r"\d+", "N", key)


def _run(root: str, steps: int = 12):
    cfg = ProfilerConfig(local_path=root, interval_millis=100, python=(2, 1), rotate_max_file_size=600)
    p = Profiler(cfg, framework="pytorch")
    for s in range(steps):
        p.step_start("train", s)
        t = now_us()
        p.record("Forward", "Net", t, t + 5)  # one more event a step
        sum(range(2000))
    p.system.wait_for_samples(2, timeout=30)
    return p


def test_a_profile_on_s3_has_the_keys_of_a_local_one_and_the_same_events(bucket, aws_env, boto_client, tmp_path):
    local = _run(str(tmp_path / "local"))
    local.close()
    p = _run(f"s3://{bucket}/job/profiler")
    staging = Path(p.root)
    assert p.url == f"s3://{bucket}/job/profiler" and staging.is_dir()
    p.timeline.flush()
    p.upload.wait()  # rotated timeline files are uploaded while the job runs, not at close
    early = _keys(boto_client, bucket, "job/profiler")
    assert any(k.startswith("framework/pevents/") for k in early)
    assert not any(k.endswith("training_job_end.ts") for k in early)
    p.close()
    got = _download(boto_client, bucket, "job/profiler", tmp_path / "down")
    want = sorted(str(f.relative_to(tmp_path / "local")) for f in (tmp_path / "local").rglob("*") if f.is_file())
    assert sorted({_shape(k) for k in got}) == sorted({_shape(k) for k in want})
    assert "system/training_job_end.ts" in got and "framework/training_job_end.ts" in got
    assert sum(k.startswith("framework/pevents/") for k in got) > 2  # rotated: several files
    assert sorted(steps_of(read_events(tmp_path / "down"))) == list(range(12))
    rows = [
        json.loads(line)
        for f in (tmp_path / "down" / "system").rglob("*.algo-1.json")
        for line in f.read_text().splitlines()
    ]
    assert {r["Dimension"] for r in rows} >= {"CPUUtilization", "I/OWaitPercentage"} and len(rows) >= 2
    (stats,) = (tmp_path / "down" / "framework" / "pytorch" / "cprofile").rglob("python_stats")
    assert stats.parent.name.startswith("train-2-stepstart-")
    assert not staging.exists()  # everything uploaded: the staging folder is gone


def test_an_upload_that_fails_keeps_the_file_and_names_it(aws_env, caplog):
    p = Profiler(ProfilerConfig(local_path="s3://smd-no-such-bucket/prof", system_metrics=False))
    for s in range(3):
        p.step_start("train", s)
    p.close()  # training is not stopped by a failing upload
    kept = sorted(Path(p.root).rglob("*_pythontimeline.json"))
    assert len(kept) == 1 and sorted(steps_of(read_events(p.root))) == [0, 1, 2]
    assert f"could not be uploaded to s3://smd-no-such-bucket/prof; they are kept in {p.root}" in caplog.text
    assert str(kept[0]) in caplog.text
    shutil.rmtree(p.root)


def test_pytorch_training_with_an_s3_out_dir_uploads_workers_and_detailed_traces(
    bucket, aws_env, boto_client, tmp_path
):
    torch = pytest.importorskip("torch")
    import smdebug.pytorch as smd

    torch.manual_seed(0)
    x = torch.randn(40 * 8, 16)
    y = (x[:, 0] > 0).long()
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=8, num_workers=2)
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    loss_fn = torch.nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    cfg = ProfilerConfig(interval_millis=100, detailed={"StartStep": 3, "NumSteps": 2})
    hook = smd.Hook(out_dir=f"s3://{bucket}/run", profiler_config=cfg)  # profiler: <out_dir>/profiler
    hook.register_module(model)
    hook.register_loss(loss_fn)
    hook.set_mode(smd.modes.TRAIN)
    for xb, yb in loader:
        opt.zero_grad()
        loss_fn(model(xb), yb).backward()
        opt.step()
    hook.close()
    keys = _download(boto_client, bucket, "run/profiler", tmp_path / "down")
    events = read_events(tmp_path / "down")
    assert sorted(steps_of(events)) == list(range(40))
    workers = [e for e in events if e["phase"] == "DataLoaderWorker"]
    assert len(workers) == 40 and len({e["args"]["pid"] for e in workers}) == 2
    (trace,) = [k for k in keys if k.endswith(".pt.trace.json")]
    assert trace.startswith("framework/pytorch/detailed_profiling/") and "/000000003/" in trace
    assert "traceEvents" in json.loads((tmp_path / "down" / trace).read_text())
    assert "framework/training_job_end.ts" in keys


def test_a_profiler_left_open_uploads_everything_at_exit(bucket, aws_env, boto_client):
    import subprocess
    import sys

    script = (
        "from smdebug.profiler import Profiler, ProfilerConfig\n"
        f"p = Profiler(ProfilerConfig(local_path='s3://{bucket}/left-open', interval_millis=100))\n"
        "p.system.wait_for_samples(1, timeout=30)\n"
        "for s in range(3):\n"
        "    p.step_start('train', s)\n"
        "print(p.root)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], check=True, timeout=120, capture_output=True, text=True)
    assert "upload" not in out.stderr and "failed" not in out.stderr, out.stderr[-3000:]
    keys = _keys(boto_client, bucket, "left-open")
    assert "framework/training_job_end.ts" in keys and "system/training_job_end.ts" in keys
    assert any(k.startswith("framework/pevents/") for k in keys)
    assert any(k.startswith("system/incremental/") for k in keys)
    assert not Path(out.stdout.strip()).exists()
