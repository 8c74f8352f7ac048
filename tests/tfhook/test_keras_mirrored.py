"""MirroredStrategy on 2 logical CPU devices: workers named by device, one or all of them written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from smdebug import modes
from smdebug.trials import create_trial

RUN = Path(__file__).with_name("mirrored_run.py")
D0 = "/job:localhost/replica:0/task:0/device:CPU:0"
D1 = "/job:localhost/replica:0/task:0/device:CPU:1"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = {}
    for workers in ("all", "one"):
        path = tmp_path_factory.mktemp("mirrored") / workers
        proc = subprocess.run(
            [sys.executable, str(RUN), str(path), workers], capture_output=True, text=True, timeout=300
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        out[workers] = (path, json.loads(proc.stdout.strip().splitlines()[-1]))
    return out


def test_all_workers_are_written_and_the_trial_loads(runs):
    path, expect = runs["all"]
    tr = create_trial(str(path))
    assert tr.workers() == [D0, D1]
    assert sorted(p.name for p in (path / "events" / "000000000000").iterdir()) == [
        "000000000000__job-localhost_replica-0_task-0_device-CPU-0.tfevents",
        "000000000000__job-localhost_replica-0_task-0_device-CPU-1.tfevents",
    ]
    assert tr.steps(mode=modes.TRAIN) == [0, 1] and tr.loaded_all_steps
    t = tr.tensor("dense/inputs")
    np.testing.assert_allclose(t.value(0, mode=modes.TRAIN, worker=D0), np.array(expect["x0"], dtype=np.float32))
    np.testing.assert_allclose(t.value(0, mode=modes.TRAIN, worker=D1), np.array(expect["x1"], dtype=np.float32))
    out = tr.tensor("dense/outputs")
    np.testing.assert_allclose(
        out.value(0, mode=modes.TRAIN, worker=D1), np.array(expect["out1"]), rtol=1e-5, atol=1e-6
    )
    g0 = tr.tensor("gradients/dense/kernelGrad").value(0, mode=modes.TRAIN, worker=D0)
    g1 = tr.tensor("gradients/dense/kernelGrad").value(0, mode=modes.TRAIN, worker=D1)
    assert g0.shape == (8, 4) and not np.array_equal(g0, g1)  # each replica's own gradient
    w = tr.tensor("dense/weights/dense/kernel:0")
    np.testing.assert_array_equal(w.value(1, mode=modes.TRAIN, worker=D0), w.value(1, mode=modes.TRAIN, worker=D1))


def test_one_worker_writes_the_chief_device_only(runs):
    path, expect = runs["one"]
    tr = create_trial(str(path))
    assert tr.workers() == [D0]
    np.testing.assert_allclose(
        tr.tensor("dense/inputs").value(0, mode=modes.TRAIN), np.array(expect["x0"], dtype=np.float32)
    )
