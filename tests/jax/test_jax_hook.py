"""smdebug.jax.Hook on a Flax NNX MLP trained by a jitted step (tests/jax/train_mlp.py)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

jax = pytest.importorskip("jax")
pytest.importorskip("flax")
pytest.importorskip("optax")

import jax.numpy as jnp  # noqa: E402
import train_mlp  # noqa: E402

import smdebug.jax as smd  # noqa: E402
from smdebug.core.tensors.reductions import get_numpy_reduction  # noqa: E402
from smdebug.exceptions import RuleEvaluationConditionMet, SMDebugRuntimeError, SMDebugTypeError  # noqa: E402
from smdebug.rules import invoke_rule  # noqa: E402
from smdebug.rules.builtin import ExplodingTensor  # noqa: E402
from smdebug.trials import create_trial  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
RTOL, ATOL = 1e-5, 1e-6
PARAMS = ["linear1/bias", "linear1/kernel", "linear2/bias", "linear2/kernel"]


def _train(path, **kw):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SMDEBUG_PROPAGATE_ERRORS", "1")
        return train_mlp.train(str(path), **kw).seen


@pytest.fixture(scope="module")
def reduced_with_nan(tmp_path_factory):
    """Gradients reduced on the device (save_raw_tensor=False), a NaN injected into step 5's input."""
    path = tmp_path_factory.mktemp("jax") / "trial"
    return path, _train(path, reduce=True, nan_at=5)


def test_saves_params_grads_updates_optimizer_state_loss_and_metrics(trained):
    path, run = trained
    seen = run.seen
    assert run.param_devices == 1
    trial = create_trial(str(path))
    assert trial.steps() == [0, 4, 8, 12]  # TRAIN steps 0, 4, 8; EVAL step 0
    assert trial.steps(mode=smd.modes.TRAIN) == [0, 4, 8]
    assert trial.steps(mode=smd.modes.EVAL) == [0]
    assert trial.workers() == ["worker_0"]
    by_coll = {
        c: trial.tensor_names(collection=c)
        for c in ("weights", "biases", "gradients", "optimizer_variables", "losses", "metrics")
    }
    assert by_coll["weights"] == ["linear1/kernel", "linear2/kernel"]
    assert by_coll["biases"] == ["linear1/bias", "linear2/bias"]
    assert by_coll["gradients"] == [f"gradient/{p}" for p in PARAMS]
    assert by_coll["losses"] == ["loss"] and by_coll["metrics"] == ["accuracy"]
    assert {f"update/{p}" for p in PARAMS} | {
        "optimizer/0/count",
        "optimizer/0/mu/linear1/kernel",
        "optimizer/0/nu/linear2/bias",
    } <= set(by_coll["optimizer_variables"])
    for step, got in seen.items():
        for p in PARAMS:
            layer, leaf = p.split("/")
            np.testing.assert_allclose(trial.tensor(p).value(step), got["params"][layer][leaf], RTOL, ATOL)
            np.testing.assert_allclose(trial.tensor(f"gradient/{p}").value(step), got["grads"][layer][leaf], RTOL, ATOL)
            np.testing.assert_allclose(trial.tensor(f"update/{p}").value(step), got["updates"][layer][leaf], RTOL, ATOL)
        np.testing.assert_allclose(trial.tensor("loss").value(step), got["loss"], RTOL, ATOL)
        np.testing.assert_allclose(trial.tensor("accuracy").value(step), got["metrics"]["accuracy"], RTOL, ATOL)
    # weights are the step's inputs: the next saved step's differ by the updates in between
    assert not np.allclose(trial.tensor("linear1/kernel").value(0), trial.tensor("linear1/kernel").value(4))
    assert trial.tensor("optimizer/0/count").value(4) == 5  # adam's count after step 4's update
    assert trial.tensor("loss").value(0, mode=smd.modes.EVAL).shape == ()
    assert not trial.tensor_names(mode=smd.modes.EVAL, collection="gradients")


def test_reductions_computed_in_jit_equal_numpy():
    rng = np.random.default_rng(3)
    tree = {
        "w": rng.standard_normal((5, 7)).astype(np.float32) * 3,
        "b": np.arange(-3, 4, dtype=np.int32),
        "h": (rng.standard_normal(9) * 2).astype(jnp.bfloat16),
    }
    config = smd.ReductionConfig(
        reductions=["min", "max", "mean", "std", "variance", "sum", "prod"],
        abs_reductions=["min", "mean"],
        norms=["l1", "l2"],
        abs_norms=["l2"],
    )
    got = jax.jit(lambda t: smd.reductions(t, config))(tree).as_dict()
    assert set(got) == {"w", "b", "h"}
    for name, leaf in tree.items():
        data = np.asarray(leaf, dtype=np.float32) if name == "h" else np.asarray(leaf)
        for op, is_abs in config.all_reductions():
            want = get_numpy_reduction(op, data, is_abs)
            np.testing.assert_allclose(
                got[name][("abs_" if is_abs else "") + op],
                want,
                rtol=1e-5,
                atol=1e-5,
                err_msg=f"{op} abs={is_abs} of {name}",
            )
    assert smd.reductions(tree, ["mean", "l2_norm", "abs_max"]).ops == (("mean", False), ("l2", False), ("max", True))
    with jax.enable_x64(True):  # a table of rows per dtype, each leaf's reductions in its own
        mixed = jax.jit(lambda t: smd.reductions(t, ["mean", "max"]))(
            {"a": np.ones(3, np.float32), "b": np.arange(4.0)}
        )
        assert [t.dtype for t in mixed.tables] == [np.float32, np.float64] and mixed.where == ((0, 0), (1, 0))
        assert mixed.as_dict() == {"a": {"mean": 1.0, "max": 1.0}, "b": {"mean": 1.5, "max": 3.0}}
    with pytest.raises(SMDebugTypeError, match="config"):
        smd.reductions(tree, 3)


def test_on_device_reductions_are_saved_as_reduction_tensors(reduced_with_nan):
    path, seen = reduced_with_nan
    trial = create_trial(str(path))
    t = trial.tensor("gradient/linear1/kernel")
    assert "gradient/linear1/kernel" in trial.tensor_names(collection="gradients")
    for step in (0, 4):  # before the NaN
        rows = seen[step]["grads"].as_dict()["linear1/kernel"]
        for op, is_abs in train_mlp.REDUCTIONS.all_reductions():
            saved = t.reduction_value(step, op, abs=is_abs)
            np.testing.assert_allclose(saved, rows[("abs_" if is_abs else "") + op], RTOL, ATOL)
    with pytest.raises(Exception, match="linear1/kernel"):
        t.value(0)  # only its reductions were saved


def test_exploding_tensor_fires_on_an_injected_nan(reduced_with_nan):
    path, _ = reduced_with_nan
    trial = create_trial(str(path))
    # the loss watch saw step 5's NaN loss (then, or a few steps later: it never waits for the
    # device) and saved the steps from then on in full, whatever the schedule (every 4th step)
    forced = [s for s in trial.steps(mode=smd.modes.TRAIN) if s % 4]
    assert forced and min(forced) >= 5
    with pytest.raises(RuleEvaluationConditionMet) as info:
        invoke_rule(ExplodingTensor(trial), raise_eval_cond=True)
    assert info.value.step >= 5 and "NaN" in str(info.value)
    with pytest.raises(RuleEvaluationConditionMet):  # the NaN gradients alone, from their reductions
        invoke_rule(ExplodingTensor(trial, collection_names="gradients"), raise_eval_cond=True)


def test_the_command_line_runs_rules_on_the_trial(reduced_with_nan, capsys):
    from smdebug.cli import main

    path, _ = reduced_with_nan
    assert (
        main(["rules", str(path), "--rule", "ExplodingTensor", "--rule", "LossNotDecreasing", "--param", "mode=TRAIN"])
        == 1
    )  # a rule fired
    out = capsys.readouterr().out
    assert "ExplodingTensor: fired" in out and "LossNotDecreasing: fired" in out


def test_whole_arrays_are_reduced_on_the_host(tmp_path):
    """Arrays handed over whole, with a reduction config: reduced on the writer thread, as numpy does."""
    config = smd.ReductionConfig(
        reductions=["min", "mean", "std"], abs_reductions=["max"], norms=["l2"], save_raw_tensor=False, save_shape=True
    )
    hook = smd.Hook(out_dir=str(tmp_path / "t"), reduction_config=config, include_collections=["weights", "losses"])
    rng = np.random.default_rng(1)
    kernel = jnp.asarray(rng.standard_normal((6, 5)).astype(np.float32))
    hook.begin_step()
    hook.record(params={"dense": {"kernel": kernel}}, loss=jnp.float32(0.25))
    hook.close()
    t = create_trial(str(tmp_path / "t")).tensor("dense/kernel")
    assert t.shape(0) == (6, 5)
    for op, is_abs in config.all_reductions():
        np.testing.assert_allclose(
            t.reduction_value(0, op, abs=is_abs), get_numpy_reduction(op, np.asarray(kernel), is_abs), 1e-5, 1e-6
        )


def test_flax_model_and_optimizer_are_recorded_by_their_state(tmp_path):
    import optax
    from flax import nnx

    model = train_mlp.MLP(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.sgd(0.1, momentum=0.9), wrt=nnx.Param)
    hook = smd.Hook(out_dir=str(tmp_path / "t"), include_collections=["weights", "biases", "optimizer_variables"])
    hook.begin_step()
    hook.record(params=model, opt_state=optimizer)
    hook.close()
    trial = create_trial(str(tmp_path / "t"))
    assert trial.tensor_names(collection="weights") == ["linear1/kernel", "linear2/kernel"]
    assert trial.tensor_names(collection="optimizer_variables") == [f"optimizer/0/trace/{p}" for p in PARAMS]
    np.testing.assert_array_equal(trial.tensor("linear2/bias").value(0), np.asarray(model.linear2.bias[...]))


def test_steps_that_save_nothing_transfer_nothing(tmp_path, monkeypatch):
    """No host copy and no reduction on a step that saves nothing (the loss watch off: it reads
    one scalar per step once the device has computed it)."""
    from smdebug.jax import adapter as jax_adapter

    monkeypatch.setenv("SMDEBUG_NONFINITE_STEPS", "-1")
    fetched = []
    real_get, real_host = jax_adapter.jax.device_get, jax_adapter.host_value
    monkeypatch.setattr(jax_adapter.jax, "device_get", lambda x: fetched.append(x) or real_get(x))
    monkeypatch.setattr(jax_adapter, "host_value", lambda x: fetched.append(x) or real_host(x))
    hook = smd.Hook(
        out_dir=str(tmp_path / "t"),
        save_config=smd.SaveConfig(save_steps=[2], start_step=1),
        include_collections=["weights", "gradients", "losses"],
    )
    params = {"dense": {"kernel": jnp.ones((3, 2)), "bias": jnp.zeros(2)}}
    for step in range(4):
        saves = hook.begin_step()
        assert saves == (step == 2)
        if step == 3:  # step 2's arrays, fetched when step 3 began: one device_get for all of them
            assert len(fetched) == 1 and len(fetched[0]) == 4
            fetched.clear()
        hook.record(loss=jnp.float32(0.5), params=params, grads=params)
        if step != 2:
            assert not fetched and not hook.adapter._pending and not hook.buffer.records
    hook.close()
    trial = create_trial(str(tmp_path / "t"))
    assert trial.steps() == [2]
    assert trial.tensor_names() == ["dense/kernel", "gradient/dense/bias", "gradient/dense/kernel", "loss"]


def test_wrong_arguments_are_the_callers_errors(tmp_path):
    hook = smd.Hook(out_dir=str(tmp_path / "t"))
    with pytest.raises(SMDebugRuntimeError, match="begin_step"):
        hook.record(loss=jnp.float32(1))
    hook.begin_step()
    with pytest.raises(SMDebugTypeError, match="metrics"):
        hook.record(metrics=jnp.float32(1))
    with pytest.raises(SMDebugRuntimeError, match="traced"):
        jax.jit(lambda x: hook.record(loss=x) or x)(jnp.float32(1))
    with pytest.raises(Exception, match="mode"):
        hook.begin_step("TRAIN")
    hook.close()


def test_an_error_inside_the_hook_does_not_stop_training(tmp_path, monkeypatch, caplog):
    monkeypatch.delenv("SMDEBUG_PROPAGATE_ERRORS")
    hook = smd.Hook(
        out_dir=str(tmp_path / "t"), save_config=smd.SaveConfig(save_interval=1), include_collections=["weights"]
    )
    hook.begin_step()
    monkeypatch.setattr(hook, "_save_for_tensor", lambda *a: 1 / 0)
    hook.record(params={"w": jnp.ones(2)})  # logged, the hook disabled
    assert hook.disabled and "disabled the hook" in caplog.text
    assert hook.begin_step() is False
    hook.record(params={"w": jnp.ones(2)})
    hook.close()


def test_worker_is_named_by_the_jax_process(tmp_path, monkeypatch):
    """One worker per process: jax.process_index() / process_count() (after jax.distributed.initialize);
    begin_step answers the same in every process."""
    from smdebug.jax import hook as jax_hook

    monkeypatch.setattr(jax_hook, "_distributed", lambda: True)
    monkeypatch.setattr(jax_hook.jax, "process_index", lambda: 1)
    monkeypatch.setattr(jax_hook.jax, "process_count", lambda: 2)
    hook = smd.Hook(out_dir=str(tmp_path / "t"), include_workers="all", save_config=smd.SaveConfig(save_interval=10))
    assert hook.worker == "worker_1" and hook._get_num_workers() == 2
    assert hook.begin_step() is True
    hook.record(loss=jnp.float32(2))
    assert hook.begin_step() is False
    hook.record(loss=jnp.float32(np.nan))  # computed already: read now, and the watch saves from here in full
    # ... but what the step is told stays the save config's: every process compiles the same program
    assert hook.begin_step() is False and hook.saving_this_step()
    hook.record(loss=jnp.float32(3))
    hook.close()
    coll = json.loads((tmp_path / "t" / "collections" / "000000000" / "worker_1_collections.json").read_text())
    assert coll["_meta"]["num_workers"] == 2
    trial = create_trial(str(tmp_path / "t"))
    assert trial.workers() == ["worker_1"] and trial.steps(show_incomplete_steps=True) == [
        0,
        1,
        2,
    ]  # (worker_0 wrote none)
    assert trial.tensor("loss").value(2, worker="worker_1") == 3


PEER_READER = r"""
import json, sys, numpy as np
from smdebug.trials import create_trial
t = create_trial(sys.argv[1])
out = {"steps": t.steps(), "workers": t.workers(), "names": sorted(t.tensor_names()),
       "weights": sorted(t.tensor_names(collection="weights")), "values": {}, "reductions": {}}
for name in ("linear1/kernel", "gradient/linear2/bias", "update/linear1/bias", "loss", "accuracy"):
    out["values"][name] = {str(s): np.asarray(t.tensor(name).value(s)).tolist() for s in t.tensor(name).steps()}
r = create_trial(sys.argv[2]).tensor("gradient/linear1/kernel")
for op, a in (("mean", False), ("l2", False), ("mean", True), ("max", False)):
    out["reductions"][("abs_" if a else "") + op] = float(r.reduction_value(0, op, abs=a))
print(json.dumps(out))
"""


def test_smdebug_1034_reads_the_trials(trained, reduced_with_nan, peer):
    path, _ = trained
    reduced_path, reduced_seen = reduced_with_nan
    proc = subprocess.run(
        [peer, "-c", PEER_READER, str(path), str(reduced_path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    theirs = json.loads(proc.stdout.strip().splitlines()[-1])  # (1.0.34 logs to stdout)
    ours = create_trial(str(path))
    assert theirs["steps"] == ours.steps() and theirs["workers"] == ["worker_0"]
    assert theirs["names"] == sorted(ours.tensor_names())
    assert theirs["weights"] == ["linear1/kernel", "linear2/kernel"]
    for name, per_step in theirs["values"].items():
        assert per_step, name
        for step, value in per_step.items():
            np.testing.assert_allclose(value, ours.tensor(name).value(int(step)), RTOL, ATOL, err_msg=name)
    on_device = reduced_seen[0]["grads"].as_dict()["linear1/kernel"]  # reduced inside the jitted step
    for op, value in theirs["reductions"].items():
        np.testing.assert_allclose(value, on_device[op], RTOL, ATOL, err_msg=op)


def test_the_example_runs(tmp_path):
    spec = importlib.util.spec_from_file_location("jax_mlp", REPO / "examples" / "jax_mlp.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    result = example.train(str(tmp_path / "t"), steps=30, nan_at=None)
    assert result["saved_steps"][:3] == [0, 10, 20]
    assert result["fired"] is None
