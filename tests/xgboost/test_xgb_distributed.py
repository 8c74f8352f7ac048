"""Two XGBoost workers (XGBoost's collective, a RabitTracker on 127.0.0.1), one process each."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from xgboost.tracker import RabitTracker

from smdebug.trials import create_trial

WORKER = Path(__file__).with_name("dist_worker.py")


def _run(out_dir, result_dir, include):
    tracker = RabitTracker(host_ip="127.0.0.1", n_workers=2, sortby="task", timeout=60)
    tracker.start()
    args = json.dumps(tracker.worker_args())
    result_dir.mkdir()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), args, str(out_dir), str(r), include, str(result_dir)],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for r in range(2)
    ]
    errs = [p.communicate(timeout=120)[1] for p in procs]
    tracker.wait_for(timeout=30)
    for p, err in zip(procs, errs):
        assert p.returncode == 0, err[-3000:]
    return [json.loads((result_dir / f"evals_{r}.json").read_text()) for r in range(2)]


@pytest.mark.parametrize("include", ["all", "one"])
def test_workers_are_named_by_their_rank(tmp_path, include):
    results = _run(tmp_path / "run", tmp_path / "res", include)
    assert [r["hook_worker"] for r in results] == ["worker_0", "worker_1"]
    trial = create_trial(str(tmp_path / "run"))
    workers = ["worker_0", "worker_1"] if include == "all" else ["worker_0"]
    assert trial.workers() == workers
    assert trial.steps() == [0, 1, 2]
    colls = json.loads((tmp_path / "run/collections/000000000/worker_0_collections.json").read_text())
    assert colls["_meta"]["num_workers"] == len(workers)
    assert (tmp_path / "run/training_job_end.ts").exists()
    for rank, w in enumerate(workers):
        evals = results[rank]["evals"]
        assert trial.tensor("validation-logloss").value(2, worker=w)[0] == evals["validation"]["logloss"][2]
        np.testing.assert_array_equal(
            trial.tensor("predictions").value(2, worker=w), np.load(tmp_path / "res" / f"pred_{rank}.npy")
        )
