"""torch.distributed (gloo, 2 processes on 127.0.0.1): worker names and include_workers."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from smdebug.trials import create_trial

WORKER = Path(__file__).with_name("dist_worker.py")


def _free_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def _run(out_dir: Path, include_workers: str) -> None:
    port = _free_port()
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), str(r), "2", port, str(out_dir), include_workers],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for r in range(2)
    ]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    for p, out in zip(procs, outs):
        assert p.returncode == 0, out[-3000:]


@pytest.mark.parametrize("include_workers", ["all", "one"])
def test_two_process_gloo_run(tmp_path, include_workers):
    out = tmp_path / include_workers
    _run(out, include_workers)
    trial = create_trial(str(out))
    expected_workers = ["worker_0", "worker_1"] if include_workers == "all" else ["worker_0"]
    assert trial.workers() == expected_workers
    assert trial.num_workers == len(expected_workers)
    assert trial.steps() == [0, 1, 2]
    names = sorted(p.name for p in (out / "collections" / "000000000").iterdir())
    coll_files = [n for n in names if n.endswith("_collections.json")]
    assert coll_files == [f"{w}_collections.json" for w in expected_workers]
    # with "all", each worker says it is done; the chief marks the end after all of them
    done = [n for n in names if n.endswith("_done.ts")]
    assert done == ([f"{w}_done.ts" for w in expected_workers] if include_workers == "all" else [])
    assert json.loads((out / "collections" / "000000000" / coll_files[0]).read_text())["_meta"]["num_workers"] == len(
        expected_workers
    )
    w = "DistributedDataParallel_module.0.weight"
    assert w in trial.tensor_names(collection="weights")
    assert f"gradient/{w}" in trial.tensor_names(collection="gradients")
    t = trial.tensor(w)
    for step in trial.steps():
        assert t.workers(step) == expected_workers
        if include_workers == "all":
            # DDP keeps the replicas in sync: both workers saved the same weights ...
            np.testing.assert_array_equal(t.value(step, worker="worker_0"), t.value(step, worker="worker_1"))
    if include_workers == "all":
        # ... but each rank saw its own data, so the losses differ
        loss = trial.tensor("MSELoss_output_0")
        assert loss.value(0, worker="worker_0") != loss.value(0, worker="worker_1")


def test_chief_marks_the_end_only_when_every_worker_is_done(tmp_path, monkeypatch):
    """With include_workers="all", a reader must not see the end of training while a slower
    worker still writes: the chief writes the marker after every worker's done-file."""
    import threading

    import torch
    from torch import nn

    import smdebug.pytorch as smd

    monkeypatch.setenv("SMDEBUG_END_OF_JOB_WAIT", "60")
    out = tmp_path / "run"
    hooks, models = [], []
    for w in ("worker_0", "worker_1"):
        h = smd.Hook(
            out_dir=str(out),
            include_workers="all",
            save_config=smd.SaveConfig(save_interval=1),
            include_collections=["weights"],
        )
        h._get_num_workers = lambda: 2
        h._get_worker_name = lambda w=w: w
        m = nn.Linear(3, 2)
        h.register_module(m)
        hooks.append(h)
        models.append(m)
    for m in models:
        for _ in range(2):
            m(torch.randn(4, 3))
    chief = threading.Thread(target=hooks[0].close)
    t0 = time.monotonic()
    chief.start()
    # the chief has finished its own writing once its done-file exists; from then on it waits
    chief_done = out / "collections" / "000000000" / "worker_0_done.ts"
    while not chief_done.exists() and chief.is_alive() and time.monotonic() - t0 < 30:
        time.sleep(0.01)  # polling for the file, bounded
    assert chief_done.exists()
    # a barrier: half a second later the chief is still waiting for worker_1 (without its wait
    # loop it writes the end marker at once and this fails)
    chief.join(timeout=0.5)
    assert chief.is_alive()
    assert not (out / "training_job_end.ts").exists()
    assert not (out / "collections" / "000000000" / "worker_1_done.ts").exists()
    hooks[1].close()
    chief.join(timeout=30)
    assert not chief.is_alive()
    assert time.monotonic() - t0 < 30  # it stopped waiting when worker_1 was done, not at the 60 s limit
    assert (out / "training_job_end.ts").exists()
    trial = create_trial(str(out))
    assert trial.workers() == ["worker_0", "worker_1"] and trial.steps() == [0, 1]
