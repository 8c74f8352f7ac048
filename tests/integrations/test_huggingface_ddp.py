"""SMDebugCallback in a Hugging Face ``Trainer.train`` under the Trainer's own DDP: 2 CPU processes on
gloo started by torchrun (hf_ddp_worker.py), gradient accumulation of 2 micro-batches, an evaluation
every 2 optimizer steps; every rank a worker (``include_workers="all"``) or rank 0 alone (the default)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("transformers")
pytest.importorskip("torch.distributed")

from smdebug import modes  # noqa: E402
from smdebug.trials import create_trial  # noqa: E402

WORKER = Path(__file__).with_name("hf_ddp_worker.py")
LR = 0.1  # hf_ddp_worker.py's plain SGD
W = "BertForSequenceClassification_classifier.weight"


def _free_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def _torchrun(tmp_path: Path, workers: str):
    out, res = tmp_path / "run", tmp_path / "result"
    res.mkdir()
    torchrun = shutil.which("torchrun", path=os.path.dirname(sys.executable))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    proc = subprocess.run(
        [
            torchrun,
            "--nproc_per_node",
            "2",
            "--master_addr",
            "127.0.0.1",
            "--master_port",
            _free_port(),
            str(WORKER),
            str(out),
            workers,
            str(res),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=str(tmp_path),
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    results = [json.loads((res / f"rank{r}.json").read_text()) for r in range(2)]
    return create_trial(str(out)), results


@pytest.mark.parametrize("workers", ["all", "one"])
def test_trainer_under_ddp_steps_modes_gradients_and_logged_loss(tmp_path, workers):
    trial, results = _torchrun(tmp_path, workers)
    for r in results:  # the Trainer did train under DDP: 2 processes, 4 optimizer steps each
        assert r["world"] == 2 and r["ddp"] == "DistributedDataParallel" and r["global_step"] == 4
    saving = ["worker_0", "worker_1"] if workers == "all" else ["worker_0"]
    assert trial.workers() == saving
    # a TRAIN step is an optimizer step (2 micro-batches); an evaluation after steps 2 and 4, its
    # 16 rows split over the 2 ranks: 2 batches of 4 on each rank, 2 EVAL steps per evaluation
    assert trial.steps(mode=modes.TRAIN) == [0, 1, 2, 3]
    assert trial.steps(mode=modes.EVAL) == [0, 1, 2, 3]
    assert [trial.mode_modestep(s) for s in trial.steps()] == [
        (modes.TRAIN, 0),
        (modes.TRAIN, 1),
        (modes.EVAL, 0),
        (modes.EVAL, 1),
        (modes.TRAIN, 2),
        (modes.TRAIN, 3),
        (modes.EVAL, 2),
        (modes.EVAL, 3),
    ]
    names = set(trial.tensor_names())
    assert {W, "gradient/" + W, "scalar/loss", "scalar/eval_loss"} <= names
    assert not any("DistributedDataParallel" in n or "module." in n for n in names)  # the model's own names
    w, grad = trial.tensor(W), trial.tensor("gradient/" + W)
    for step in range(4):
        assert grad.workers(step, mode=modes.TRAIN) == saving
        assert w.workers(step, mode=modes.TRAIN) == saving
    assert grad.steps(mode=modes.EVAL) == []  # no gradient at evaluation
    for worker in saving:
        for step in range(3):  # plain SGD: the saved gradient is the accumulated, all-reduced one applied
            update = w.value(step + 1, mode=modes.TRAIN, worker=worker) - w.value(step, mode=modes.TRAIN, worker=worker)
            np.testing.assert_allclose(
                update, -LR * grad.value(step, mode=modes.TRAIN, worker=worker), rtol=1e-4, atol=1e-6
            )
    if workers == "all":  # both ranks saw the same (all-reduced) gradients and the same weights
        for step in range(4):
            for t in (w, grad):
                np.testing.assert_allclose(
                    t.value(step, mode=modes.TRAIN, worker="worker_0"),
                    t.value(step, mode=modes.TRAIN, worker="worker_1"),
                    rtol=1e-5,
                    atol=1e-7,
                )
    # the loss the Trainer logged (gathered over the ranks), at the TRAIN step it was logged after
    loss, eval_loss = trial.tensor("scalar/loss"), trial.tensor("scalar/eval_loss")
    assert loss.steps(mode=modes.TRAIN) == [0, 1, 2, 3]
    assert eval_loss.steps(mode=modes.EVAL) == [1, 3]  # after each evaluation's last batch
    for rank, worker in enumerate(saving):
        history = results[rank]["log_history"]
        logged = [e["loss"] for e in history if "loss" in e]
        np.testing.assert_allclose(
            [loss.value(s, mode=modes.TRAIN, worker=worker)[0] for s in range(4)], logged, rtol=1e-5
        )
        logged_eval = [e["eval_loss"] for e in history if "eval_loss" in e]
        np.testing.assert_allclose(
            [eval_loss.value(s, mode=modes.EVAL, worker=worker)[0] for s in (1, 3)], logged_eval, rtol=1e-5
        )
