"""The zero-code-change bootstrap: cheap, chained, opt-in; PyTorch under torch.compile, with loss
modules, spawned DataLoader workers and DDP under torchrun gives the names of the explicit hook; its
steps are TRAIN while the model trains and EVAL under model.eval(), unless the script sets a mode."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import smdebug
from smdebug.launch.launcher import BOOTSTRAP_DIR
from smdebug.trials import create_trial

SCRIPTS = Path(__file__).parent / "scripts"
MLP = str(SCRIPTS / "mlp.py")
EVERY_STEP = ["weights:save_interval=1", "gradients:save_interval=1", "losses:save_interval=1"]


def _bootstrap_env(**extra) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([BOOTSTRAP_DIR, *filter(None, [env.get("PYTHONPATH")])])
    env.update(extra)
    return env


def test_bootstrap_costs_under_5_ms():
    env = _bootstrap_env(SMDEBUG_ZCC="1")
    costs = []
    for _ in range(5):  # the least of five: the machine is shared
        err = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", "pass"], env=env, capture_output=True, text=True, check=True
        ).stderr
        (row,) = [
            line
            for line in err.splitlines()
            if line.rstrip().endswith("| sitecustomize") or line.rstrip().endswith("|   sitecustomize")
        ]
        costs.append(int(row.split("|")[1]))  # cumulative microseconds
    assert min(costs) < 5000, costs
    mods = subprocess.run(
        [sys.executable, "-c", "import sys; print(sorted(sys.modules))"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "smdebug" not in mods and "json" not in mods and "threading" not in mods


def test_bootstrap_chains_the_sitecustomize_it_shadows(tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "sitecustomize.py").write_text("import sys\nsys.stderr.write('other sitecustomize ran\\n')\n")
    env = _bootstrap_env(SMDEBUG_ZCC="1")
    env["PYTHONPATH"] = os.pathsep.join([BOOTSTRAP_DIR, str(other)])
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; print(type(sys.meta_path[0]).__name__)"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "other sitecustomize ran" in proc.stderr
    assert proc.stdout.strip() == "_Finder"


@pytest.mark.parametrize("env", [{}, {"SMDEBUG_ZCC": "1", "USE_SMDEBUG": "false"}])
def test_bootstrap_is_inert_unless_switched_on(env):
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; print([type(f).__name__ for f in sys.meta_path])"],
        env=_bootstrap_env(**env),
        capture_output=True,
        text=True,
        check=True,
    )
    assert "_Finder" not in proc.stdout


def _run(tmp_path, name, command, zcc=True):
    lines = []
    result = smdebug.launch(
        command, run_dir=str(tmp_path / name), collection_configs=EVERY_STEP, zcc=zcc, name=name, echo=lines.append
    )
    assert result.exit_code == 0, lines
    return create_trial(result.out_dir)


def test_compiled_model_loss_module_and_spawned_workers(tmp_path, capfd):
    pytest.importorskip("torch")
    args = ["--steps", "4", "--compile", "--loss-module"]
    zcc = _run(tmp_path, "zcc", ["env", "TORCH_LOGS=recompiles", sys.executable, MLP, *args, "--workers", "1"])
    err = capfd.readouterr().err
    assert "Recompiling function" not in err  # no extra dynamo recompiles (dynamo logs them to stderr)
    assert "global hooks" not in err  # torch's warning about our global hook is not shown
    explicit = _run(tmp_path, "explicit", [sys.executable, MLP, *args, "--explicit"], zcc=False)
    assert zcc.tensor_names() == explicit.tensor_names()
    assert "CrossEntropyLoss_output_0" in zcc.tensor_names(collection="losses")
    assert zcc.steps() == explicit.steps() == [0, 1, 2, 3]
    assert zcc.workers() == ["worker_0"]  # the data-loader worker attached nothing


@pytest.mark.parametrize("how", ["eager", "compiled", "ddp"])
def test_steps_are_train_while_the_model_trains_and_eval_under_model_eval(tmp_path, how):
    pytest.importorskip("torch")
    train, ev = smdebug.modes.TRAIN, smdebug.modes.EVAL
    run = {
        "eager": [sys.executable, MLP],
        "compiled": [sys.executable, MLP, "--compile"],
        # the root is the model inside DistributedDataParallel: net.eval() reaches it
        "ddp": [os.path.join(os.path.dirname(sys.executable), "torchrun"), "--nproc_per_node=2", MLP, "--ddp"],
    }
    # two training steps, two evaluation forward calls (model.eval(), no_grad), twice; no set_mode
    zcc = _run(tmp_path, "zcc", [*run[how], "--steps", "4", "--eval-every", "2", "--eval-steps", "2"])
    assert zcc.steps() == list(range(8))
    assert [zcc.mode_modestep(s) for s in zcc.steps()] == [
        (train, 0),
        (train, 1),
        (ev, 0),
        (ev, 1),
        (train, 2),
        (train, 3),
        (ev, 2),
        (ev, 3),
    ]
    assert zcc.steps(mode=train) == zcc.steps(mode=ev) == [0, 1, 2, 3]
    assert zcc.tensor("Net_fc1.weight").steps(mode=ev) == [0, 1, 2, 3]
    loss = zcc.tensor("loss_output_0")  # recorded at backward: training steps only
    assert loss.steps(mode=train) == [0, 1, 2, 3] and loss.steps(mode=ev) == []


def test_a_mode_the_script_sets_is_kept_and_an_explicit_hook_stays_global(tmp_path):
    pytest.importorskip("torch")
    args = [sys.executable, MLP, "--steps", "4", "--eval-every", "2", "--eval-steps", "2"]
    # the script calls smd.get_hook().set_mode(PREDICT) before its first evaluation and never again:
    # from then on the mode is the script's, model.train() does not make it TRAIN
    zcc = _run(tmp_path, "zcc", [*args, "--script-mode", "PREDICT"])
    modes = [zcc.mode_modestep(s)[0].name for s in zcc.steps()]
    assert modes == ["TRAIN", "TRAIN"] + ["PREDICT"] * 6
    # a hook the script made itself keeps 1.0.34's semantics: GLOBAL until the script calls set_mode
    explicit = _run(tmp_path, "explicit", [*args, "--explicit"], zcc=False)
    assert explicit.steps() == list(range(8))
    assert {explicit.mode_modestep(s)[0].name for s in explicit.steps()} == {"GLOBAL"}
    assert explicit.tensor_names() == zcc.tensor_names()


def test_ddp_under_torchrun_gives_the_explicit_names(tmp_path):
    pytest.importorskip("torch")
    torchrun = os.path.join(os.path.dirname(sys.executable), "torchrun")
    cmd = [torchrun, "--nproc_per_node=2", MLP, "--steps", "3", "--ddp"]
    zcc = _run(tmp_path, "zcc", cmd)
    explicit = _run(tmp_path, "explicit", [*cmd, "--explicit"], zcc=False)
    assert zcc.tensor_names() == explicit.tensor_names()
    assert zcc.steps() == [0, 1, 2] and zcc.workers() == ["worker_0"]
    # the torchrun agent process ran the bootstrap and imported torch too, and wrote nothing
    assert sorted(os.listdir(zcc.path)) == sorted(os.listdir(explicit.path))


def test_amp_grad_scaler_records_the_unscaled_loss(tmp_path):
    pytest.importorskip("torch")
    import numpy as np

    args = [sys.executable, MLP, "--steps", "3", "--amp"]
    zcc = _run(tmp_path, "zcc", args)
    explicit = _run(tmp_path, "explicit", [*args, "--explicit"], zcc=False)
    assert zcc.tensor_names() == explicit.tensor_names()
    assert "loss_output_0" in zcc.tensor_names(collection="losses")
    for step in (0, 1, 2):
        mine = zcc.tensor("loss_output_0").value(step)
        theirs = explicit.tensor("loss_output_0").value(step)
        # the scaled loss would be 65536 times larger (GradScaler's first scale)
        np.testing.assert_allclose(mine, theirs, rtol=1e-5)
        assert 0.1 < float(mine) < 10


@pytest.mark.parametrize(
    "fsdp, collections",
    [
        ("1", ["weights:save_interval=1", "losses:save_interval=1"]),
        # FSDP2's parameters are DTensors: the PyTorch hook's saving of them is another piece of work;
        # here the attach (the model changed in place is the model) and the loss are checked
        ("2", ["losses:save_interval=1"]),
    ],
)
def test_fsdp_under_torchrun_gives_the_explicit_names(tmp_path, capfd, fsdp, collections):
    pytest.importorskip("torch.distributed.fsdp")
    torchrun = os.path.join(os.path.dirname(sys.executable), "torchrun")
    cmd = [torchrun, "--nproc_per_node=2", str(SCRIPTS / "fsdp_mlp.py"), "--fsdp", fsdp]
    runs = {}
    for name, extra, zcc in (("zcc", [], True), ("explicit", ["--explicit"], False)):
        lines = []
        result = smdebug.launch(
            cmd + extra,
            run_dir=str(tmp_path / name),
            collection_configs=collections,
            zcc=zcc,
            name=name,
            echo=lines.append,
        )
        assert result.exit_code == 0, lines  # and no rank crashed at exit
        runs[name] = create_trial(result.out_dir)
    err = capfd.readouterr().err
    attached = "attached to Net (in FullyShardedDataParallel)" if fsdp == "1" else "attached to FSDPNet,"
    assert err.count(attached) == 2  # once per rank
    assert runs["zcc"].tensor_names() == runs["explicit"].tensor_names()
    assert runs["zcc"].steps() == runs["explicit"].steps() == [0, 1, 2]
    assert "loss_output_0" in runs["zcc"].tensor_names()
    if fsdp == "1":
        assert {"Net_fc1.weight", "Net_fc2.weight"} <= set(runs["zcc"].tensor_names())
        assert runs["zcc"].tensor("Net_fc1.weight").value(2).shape == (16, 8)  # unsharded, as forward saw it


@pytest.mark.parametrize("launch", [["--cpu"], ["--multi_gpu", "--num_processes", "2"]], ids=["1proc", "2proc"])
def test_accelerate_launch_gives_the_explicit_names(tmp_path, capfd, launch):
    pytest.importorskip("accelerate")
    accelerate = os.path.join(os.path.dirname(sys.executable), "accelerate")
    cmd = [accelerate, "launch", *launch, str(SCRIPTS / "accel_mlp.py")]
    zcc = _run(tmp_path, "zcc", cmd)
    explicit = _run(tmp_path, "explicit", [*cmd, "--explicit"], zcc=False)
    err = capfd.readouterr().err
    assert err.count("smdebug: attached to Net") == len(launch) // 2 + 1  # once per process
    if len(launch) > 1:
        assert "attached to Net (in DistributedDataParallel)" in err
    assert zcc.tensor_names() == explicit.tensor_names()
    assert {"Net_fc1.weight", "gradient/Net_fc1.weight", "loss_output_0"} <= set(zcc.tensor_names())
    assert zcc.steps() == [0, 1, 2]
