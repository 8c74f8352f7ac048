"""PyTorch FSDP2 (``fully_shard``, DTensor parameters) on 2 gloo processes started by torchrun:
each rank's shard as its own worker (with the shard metadata that puts the whole tensor back
together), or the whole tensor gathered on save steps and saved by rank 0 (``gather_sharded=True``).
The values are compared with an unsharded copy of the model trained on both ranks' batches."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import orjson
import pytest

from smdebug import modes
from smdebug.exceptions import SMDebugValueError
from smdebug.pytorch.sharded import read_full
from smdebug.trials import create_trial
from smdtest import ORACLE, run_json

pytest.importorskip("torch.distributed.fsdp")
WORKER = Path(__file__).with_name("fsdp_worker.py")
NAMES = [
    "MLP_fc1.weight",
    "MLP_fc2.weight",
    "gradient/MLP_fc1.weight",
    "gradient/MLP_fc1.bias",
    "gradient/MLP_fc2.weight",
    "gradient/MLP_fc2.bias",
    "gradient/MLP_scale",
]


def _free_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def _torchrun(tmp_path: Path, mode: str, *variant: str):
    out, res = tmp_path / mode, tmp_path / f"result-{mode}"
    res.mkdir()
    torchrun = shutil.which("torchrun", path=os.path.dirname(sys.executable))
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
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
            mode,
            str(res),
            *variant,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return create_trial(str(out)), np.load(res / "reference.npz")


def _steps_modes_losses(trial, ref):
    """Steps, modes and losses as with DDP: every rank is a worker with its own loss."""
    assert trial.workers() == ["worker_0", "worker_1"]
    assert trial.steps() == [0, 1, 2, 3]
    assert trial.steps(mode=modes.TRAIN) == [0, 1, 2] and trial.steps(mode=modes.EVAL) == [0]
    loss = trial.tensor("MSELoss_output_0")
    for step in range(3):
        for rank in range(2):
            np.testing.assert_allclose(
                loss.value(step, mode=modes.TRAIN, worker=f"worker_{rank}"), ref[f"{step}/loss_{rank}"][0], rtol=1e-5
            )


def test_gathered_tensors_are_the_unsharded_models(tmp_path):
    trial, ref = _torchrun(tmp_path, "gather")
    _gathered_are_whole(tmp_path, trial, ref)


def _gathered_are_whole(tmp_path, trial, ref):
    _steps_modes_losses(trial, ref)
    assert set(NAMES) <= set(trial.tensor_names())
    assert not (tmp_path / "gather" / "shards").exists()  # nothing to put together
    for name in NAMES:
        t = trial.tensor(name)
        for step in range(3):
            assert t.workers(step, mode=modes.TRAIN) == ["worker_0"]  # written once, by rank 0
            whole = ref[f"{step}/{name}"]
            value = t.value(step, mode=modes.TRAIN, worker="worker_0")
            assert value.shape == whole.shape
            np.testing.assert_allclose(value, whole, rtol=1e-5, atol=1e-7)
            # reductions of the whole tensor, not of rank 0's shard
            np.testing.assert_allclose(
                t.reduction_value(step, "l2", mode=modes.TRAIN, worker="worker_0"), np.linalg.norm(whole), rtol=1e-5
            )
            np.testing.assert_allclose(
                t.reduction_value(step, "max", mode=modes.TRAIN, worker="worker_0"), whole.max(), rtol=1e-5
            )
            np.testing.assert_allclose(
                t.reduction_value(step, "mean", mode=modes.TRAIN, worker="worker_0"), whole.mean(), rtol=1e-5, atol=1e-7
            )


def test_each_rank_saves_its_shard_and_where_it_lies(tmp_path, peer):
    trial, ref = _torchrun(tmp_path, "local")
    _steps_modes_losses(trial, ref)
    assert set(NAMES) <= set(trial.tensor_names())
    meta = orjson.loads((tmp_path / "local" / "shards" / "worker_1_shards.json").read_bytes())["tensors"]
    # fc1.weight (6, 4) split by rows over 2 ranks: rank 1 holds rows 3..5
    assert meta["MLP_fc1.weight"] == {
        "global_shape": [6, 4],
        "local_shape": [3, 4],
        "offset": [3, 0],
        "placements": ["S(0)"],
        "mesh_shape": [2],
        "mesh_coordinate": [1],
    }
    for name in NAMES:
        for step in range(3):
            whole = ref[f"{step}/{name}"]
            shards = [trial.tensor(name).value(step, mode=modes.TRAIN, worker=w) for w in trial.workers()]
            assert sum(s.shape[0] for s in shards) == whole.shape[0]  # each worker saved a shard, not the whole
            np.testing.assert_allclose(read_full(trial, name, step, mode=modes.TRAIN), whole, rtol=1e-5, atol=1e-7)
    # smdebug 1.0.34 reads the shards as workers' tensors (the shards/ folder is ours alone)
    theirs = run_json(peer, ORACLE, tmp_path / "local")
    ours = run_json(sys.executable, ORACLE, tmp_path / "local")
    assert theirs["workers"] == ["worker_0", "worker_1"] and theirs["steps"] == [0, 1, 2, 3]
    assert theirs["tensor_names"] == ours["tensor_names"]
    for name in NAMES:
        for step, entry in theirs["tensors"][name]["per_step"].items():
            raw = {k: v for k, v in entry.items() if k.startswith("value@")}
            assert raw and raw == {k: ours["tensors"][name]["per_step"][step][k] for k in raw}


@pytest.mark.parametrize("variant", ["compile", "checkpoint"])
def test_compile_and_activation_checkpointing_over_fsdp2(tmp_path, variant):
    """torch.compile over the FSDP2 model, or fc1 under activation checkpointing: the same steps,
    and the same gathered parameters and gradients (with compile, layer inputs and outputs are not
    captured, as without FSDP)."""
    trial, ref = _torchrun(tmp_path, "gather", variant)
    _steps_modes_losses(trial, ref)
    for name in NAMES:
        for step in range(3):
            np.testing.assert_allclose(
                trial.tensor(name).value(step, mode=modes.TRAIN, worker="worker_0"),
                ref[f"{step}/{name}"],
                rtol=1e-5,
                atol=1e-7,
            )


# HSDP: fully_shard on a 2-D device mesh ("replicate", "shard"); with 2 processes, 1 replica of 2
# shards or 2 replicas of 1 shard. The placements are (Replicate(), Shard(0)).
HSDP_FC1 = {
    "1x2": {"local_shape": [3, 4], "offset": [3, 0], "mesh_shape": [1, 2], "mesh_coordinate": [0, 1]},
    "2x1": {"local_shape": [6, 4], "offset": [0, 0], "mesh_shape": [2, 1], "mesh_coordinate": [1, 0]},
}


@pytest.mark.parametrize("mesh", ["1x2", "2x1"])
def test_hsdp_each_rank_saves_its_shard_and_read_full_puts_it_together(tmp_path, mesh):
    trial, ref = _torchrun(tmp_path, "local", f"hsdp{mesh}")
    _steps_modes_losses(trial, ref)
    shards_file = tmp_path / "local" / "shards" / "worker_1_shards.json"
    doc = orjson.loads(shards_file.read_bytes())
    assert doc["tensors"]["MLP_fc1.weight"] == {"global_shape": [6, 4], "placements": ["R", "S(0)"], **HSDP_FC1[mesh]}
    for name in NAMES:
        for step in range(3):
            whole = ref[f"{step}/{name}"]
            shards = [trial.tensor(name).value(step, mode=modes.TRAIN, worker=w) for w in trial.workers()]
            rows = [s.shape[0] for s in shards]  # 2 shards of the rows, or 2 replicas of the whole tensor
            assert sum(rows) == whole.shape[0] if mesh == "1x2" else rows == [whole.shape[0]] * 2
            np.testing.assert_allclose(read_full(trial, name, step, mode=modes.TRAIN), whole, rtol=1e-5, atol=1e-7)
    if mesh == "1x2":
        _shards_that_do_not_tile_are_refused(trial, shards_file, doc)
    else:  # one replica is enough
        del doc["tensors"]["MLP_fc1.weight"]
        shards_file.write_bytes(orjson.dumps(doc))
        np.testing.assert_allclose(
            read_full(trial, "MLP_fc1.weight", 2, mode=modes.TRAIN), ref["2/MLP_fc1.weight"], rtol=1e-5, atol=1e-7
        )


def _shards_that_do_not_tile_are_refused(trial, shards_file, doc):
    info = doc["tensors"]["MLP_fc1.weight"]
    info["offset"] = [0, 0]  # worker_1's rows 3..5 said to be rows 0..2: replicas of worker_0's shard that differ
    shards_file.write_bytes(orjson.dumps(doc))
    with pytest.raises(SMDebugValueError, match="replicas of one shard differ"):
        read_full(trial, "MLP_fc1.weight", 0, mode=modes.TRAIN)
    del doc["tensors"]["MLP_fc1.weight"]  # worker_1's shard missing
    shards_file.write_bytes(orjson.dumps(doc))
    with pytest.raises(SMDebugValueError, match="cover 12 of its 24 elements") as err:
        read_full(trial, "MLP_fc1.weight", 0, mode=modes.TRAIN)
    assert str(trial.path) in str(err.value)


def test_hsdp_gathered_tensors_are_the_unsharded_models(tmp_path):
    """gather_sharded=True on the 2-D mesh: the all-gather over both mesh dimensions, rank 0 saves the
    whole tensor and the whole tensor's reductions."""
    trial, ref = _torchrun(tmp_path, "gather", "hsdp1x2")
    _gathered_are_whole(tmp_path, trial, ref)
