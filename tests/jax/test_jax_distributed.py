"""The same training on two JAX processes, each with its parameters sharded over two host devices
(XLA_FLAGS=--xla_force_host_platform_device_count=2, jax.distributed on 127.0.0.1): one worker
per process, and the names and values of the run on one device in one process."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("jax")
pytest.importorskip("flax")
pytest.importorskip("optax")

from smdebug.trials import create_trial  # noqa: E402

SCRIPT = Path(__file__).with_name("train_mlp.py")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_processes_with_sharded_params_save_what_one_device_saves(trained, tmp_path):
    single_path, single_run = trained
    out = tmp_path / "trial"
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2", "SMDEBUG_PROPAGATE_ERRORS": "1"}
    port = _free_port()
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                str(SCRIPT),
                str(out),
                "--shard",
                "--process-id",
                str(i),
                "--processes",
                "2",
                "--port",
                str(port),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for i in range(2)
    ]
    try:
        results = [p.communicate(timeout=300) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for p, (_, err) in zip(procs, results):
        assert p.returncode == 0, err[-4000:]
    infos = [json.loads(stdout.strip().splitlines()[-1]) for stdout, _ in results]
    assert [i["process"] for i in infos] == [0, 1]
    assert all(i["processes"] == 2 and i["param_devices"] == 2 for i in infos), infos
    assert single_run.param_devices == 1

    multi, single = create_trial(str(out)), create_trial(str(single_path))
    assert multi.workers() == ["worker_0", "worker_1"] and multi.num_workers == 2
    assert multi.steps() == single.steps()
    assert multi.tensor_names() == single.tensor_names()
    compared = 0
    for name in single.tensor_names():
        for step in single.tensor(name).steps():
            want = single.tensor(name).value(step)
            for worker in ("worker_0", "worker_1"):
                got = multi.tensor(name).value(step, worker=worker)
                np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6, err_msg=f"{name} step {step} {worker}")
                compared += 1
    assert compared > 100
