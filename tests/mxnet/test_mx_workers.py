"""Workers: a real distributed MXNet job on 127.0.0.1 (ps-lite scheduler, one server, two
workers on a 'dist_sync' kvstore): each worker's hook names itself worker_<kvstore rank>."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
from mxskip import import_mxnet

mx = import_mxnet()

import smdebug.mxnet as smd  # noqa: E402
from smdebug.trials import create_trial  # noqa: E402

WORKER = Path(__file__).resolve().parent / "dist_worker.py"
LOSS = "softmaxcrossentropyloss0_output_0"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_job(out_dir) -> list[dict]:
    env = dict(
        os.environ,
        DMLC_PS_ROOT_URI="127.0.0.1",
        DMLC_PS_ROOT_PORT=str(_free_port()),
        DMLC_NUM_SERVER="1",
        DMLC_NUM_WORKER="2",
        DMLC_NODE_HOST="127.0.0.1",
        OMP_NUM_THREADS="1",
    )
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), str(out_dir)],
            env={**env, "DMLC_ROLE": role},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for role in ("scheduler", "server", "worker", "worker")
    ]
    results = []
    try:
        for role, p in zip(("scheduler", "server", "worker", "worker"), procs):
            out, err = p.communicate(timeout=180)
            assert p.returncode == 0, f"{role} failed:\n{err[-3000:]}"
            if role == "worker":
                results.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return sorted(results, key=lambda r: r["rank"])


def test_workers_are_named_by_their_kvstore_rank(tmp_path):
    results = _run_job(tmp_path)
    assert [r["rank"] for r in results] == [0, 1] and all(r["num_workers"] == 2 for r in results)
    assert [r["workers"] for r in results] == [
        {"all": "worker_0", "one": "worker_0"},
        {"all": "worker_1", "one": "worker_1"},
    ]
    t = create_trial(str(tmp_path / "all"))
    assert t.workers() == ["worker_0", "worker_1"] and t.num_workers == 2
    assert t.steps(mode=smd.modes.TRAIN) == [0, 1, 2]
    for r in results:  # each worker's losses are its own (each trains on other rows)
        for step in (0, 1, 2):
            value = t.tensor(LOSS).value(step, worker=f"worker_{r['rank']}")
            np.testing.assert_allclose(value.mean(), r["loss"][str(step)], rtol=1e-6)
    # include_workers="one": only rank 0 writes (rank 1 took itself for worker_0 until its Trainer
    # made the kvstore, at the end of step 0, and wrote nothing)
    one = create_trial(str(tmp_path / "one"))
    assert one.workers() == ["worker_0"] and one.steps() == [0, 1, 2]
    for step in (0, 1, 2):
        np.testing.assert_allclose(one.tensor(LOSS).value(step).mean(), results[0]["loss"][str(step)], rtol=1e-6)
    files = [str(p.relative_to(tmp_path)) for p in (tmp_path / "one").rglob("*") if p.is_file()]
    assert "one/collections/000000000/worker_0_collections.json" in files
    assert not [f for f in files if "worker_1" in f]
