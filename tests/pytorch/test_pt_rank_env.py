"""Worker names without a process group: the launcher's environment (torchrun's $RANK / $WORLD_SIZE,
MPI's, Slurm's) names each rank (smdebug.core.output.ranks); a process group still wins."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap

import pytest
import torch
from torch import nn

import smdebug.pytorch as smd
import smdebug.pytorch.hook as pt_hook
from smdebug.core.output import ranks
from smdebug.core.output.ranks import LAUNCHER_RANK_VARIABLES, env_rank
from smdebug.trials import create_trial

STEPS = 4


def _pair(env):
    r = env_rank(env)
    return None if r is None else (r.rank, r.world_size)


# one rank of a torchrun-like job that never starts torch.distributed
RANK_SCRIPT = textwrap.dedent(f"""
    import os
    import sys
    import torch
    from torch import nn
    import smdebug.pytorch as smd

    torch.set_num_threads(1)
    hook = smd.Hook(out_dir=sys.argv[1], save_config=smd.SaveConfig(save_interval=1), include_workers=sys.argv[2],
                    include_collections=["weights", "gradients", "losses"])
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 1))
    hook.register_module(model)
    loss_fn = nn.MSELoss()
    hook.register_loss(loss_fn)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(int(os.environ["RANK"]))  # each rank its own data
    for _ in range({STEPS}):
        opt.zero_grad()
        loss_fn(model(torch.randn(8, 4, generator=g)), torch.randn(8, 1, generator=g)).backward()
        opt.step()
    hook.close()
""")


def _launcher_free_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {v for pair in LAUNCHER_RANK_VARIABLES for v in pair}}
    env.update(SMDEBUG_END_OF_JOB_WAIT="60", **extra)
    env.pop("SMDEBUG_CONFIG_FILE_PATH", None)
    return env


@pytest.fixture(autouse=True)
def _no_launcher(monkeypatch):
    for pair in LAUNCHER_RANK_VARIABLES:
        for var in pair:
            monkeypatch.delenv(var, raising=False)
    ranks._warned.clear()


@pytest.mark.parametrize("include_workers", ["all", "one"])
def test_two_torchrun_ranks_without_a_process_group_are_two_workers(tmp_path, include_workers):
    out = tmp_path / "run"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RANK_SCRIPT, str(out), include_workers],
            env=_launcher_free_env(RANK=str(r), WORLD_SIZE="2", LOCAL_RANK=str(r)),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for r in range(2)
    ]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    for p, text in zip(procs, outs):
        assert p.returncode == 0, text[-3000:]
        assert "Traceback" not in text, text[-3000:]
    trial = create_trial(str(out))
    expected = ["worker_0", "worker_1"] if include_workers == "all" else ["worker_0"]
    assert trial.workers() == expected
    assert trial.num_workers == len(expected)
    assert trial.steps() == list(range(STEPS))
    for name in ("Sequential_0.weight", "gradient/Sequential_0.weight", "MSELoss_output_0"):
        t = trial.tensor(name)
        for step in range(STEPS):
            assert t.workers(step) == expected, (name, step)
    if include_workers == "all":  # each rank drew its own data: two different losses at each step
        loss = trial.tensor("MSELoss_output_0")
        assert all(loss.value(s, worker="worker_0") != loss.value(s, worker="worker_1") for s in range(STEPS))


def test_env_rank_reads_the_launchers_in_order():
    assert env_rank({}) is None
    assert _pair({"RANK": "1", "WORLD_SIZE": "2"}) == (1, 2)
    assert _pair({"SLURM_PROCID": "3", "SLURM_NTASKS": "4"}) == (3, 4)
    assert _pair({"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "8"}) == (2, 8)
    assert _pair({"PMI_RANK": "0", "PMI_SIZE": "1"}) == (0, 1)
    assert _pair({"HOROVOD_RANK": " 5 ", "HOROVOD_SIZE": "6\n"}) == (5, 6)
    # torchrun first; a launcher inside a Slurm step: its own rank, not the step's
    assert _pair({"RANK": "3", "WORLD_SIZE": "4", "SLURM_PROCID": "0", "SLURM_NTASKS": "1"}) == (3, 4)
    assert _pair(
        {"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2", "SLURM_PROCID": "0", "SLURM_NTASKS": "1"}
    ) == (1, 2)
    assert _pair({"RANK": "", "WORLD_SIZE": "", "PMI_RANK": "1", "PMI_SIZE": "2"}) == (1, 2)  # empty: unset


@pytest.mark.parametrize(
    "env, variable",
    [
        ({"RANK": "-1", "WORLD_SIZE": "2"}, "RANK"),
        ({"RANK": "one", "WORLD_SIZE": "2"}, "RANK"),
        ({"RANK": "1.0", "WORLD_SIZE": "2"}, "RANK"),
        ({"RANK": "2", "WORLD_SIZE": "2"}, "RANK"),  # not below the size
        ({"RANK": "0", "WORLD_SIZE": "0"}, "WORLD_SIZE"),
        ({"RANK": "0", "WORLD_SIZE": "x"}, "WORLD_SIZE"),
        ({"RANK": "0"}, "WORLD_SIZE"),  # no size
        ({"SLURM_PROCID": "7", "SLURM_NTASKS": "4"}, "SLURM_PROCID"),
        ({"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "-2"}, "OMPI_COMM_WORLD_SIZE"),
    ],
)
def test_a_bad_value_is_ignored_with_one_warning_naming_it(caplog, env, variable):
    caplog.set_level(logging.WARNING, logger="smdebug")
    assert env_rank(env) is None
    assert env_rank(env) is None
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and f"${variable}=" in warnings[0], warnings
    # ... and the next launcher's pair is read
    assert _pair({**env, "PMI_RANK": "1", "PMI_SIZE": "3"}) == (1, 3)


def _tiny_run(hook, steps=1):
    model = nn.Linear(2, 1)
    hook.register_module(model)
    for _ in range(steps):
        model(torch.ones(1, 2)).sum().backward()
    return model


def test_the_hook_names_its_worker_by_the_launchers_rank(tmp_path, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "3")
    hook = smd.Hook(out_dir=str(tmp_path / "run"), include_workers="all")
    assert hook.worker == "worker_1" and hook._get_num_workers() == 3
    monkeypatch.setenv("RANK", "bad")  # ignored: the next launcher, none here, so worker_0 of 1
    assert hook._get_worker_name() == "worker_0" and hook._get_num_workers() == 1
    hook.close()


def test_a_process_group_started_before_the_first_step_wins(tmp_path, monkeypatch):
    dist = pytest.importorskip("torch.distributed")
    if not dist.is_available():
        pytest.skip("torch.distributed is not available")
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    hook = smd.Hook(out_dir=str(tmp_path / "run"), include_workers="all")
    assert hook.worker == "worker_1"
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'pg'}", rank=0, world_size=1)
    try:
        _tiny_run(hook)
        assert hook.worker == "worker_0" and hook._get_num_workers() == 1
        hook.close()
    finally:
        dist.destroy_process_group()
    assert create_trial(str(tmp_path / "run")).workers() == ["worker_0"]


class _Group:
    """What the hook reads of torch.distributed: an initialised group of ``size`` with this process at ``rank``."""

    def __init__(self, rank, size):
        self.rank, self.size = rank, size

    def get_rank(self):
        return self.rank

    def get_world_size(self):
        return self.size


def test_a_process_group_started_after_the_first_step(tmp_path, monkeypatch, caplog):
    caplog.set_level(logging.WARNING, logger="smdebug")
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    hook = smd.Hook(out_dir=str(tmp_path / "run"), include_workers="all")
    _tiny_run(hook, steps=2)
    assert hook.worker == "worker_1"
    # the same rank as torchrun's $RANK: the group agrees, nothing to say
    monkeypatch.setattr(pt_hook, "_dist", lambda: _Group(1, 2))
    assert hook._get_num_workers() == 2 and hook._get_worker_name() == "worker_1"
    assert not [r for r in caplog.records if "torch.distributed started" in r.getMessage()]
    # another rank: the name stays (the saved steps keep it), with one warning
    monkeypatch.setattr(pt_hook, "_dist", lambda: _Group(0, 4))
    assert hook._get_num_workers() == 4 and hook._get_num_workers() == 4
    assert hook.worker == "worker_1"
    late = [r.getMessage() for r in caplog.records if "torch.distributed started" in r.getMessage()]
    assert len(late) == 1 and "rank 0 of 4" in late[0] and "worker_1" in late[0]
    monkeypatch.setattr(pt_hook, "_dist", lambda: None)
    hook.close()
