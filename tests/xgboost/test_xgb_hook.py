"""The XGBoost hook's options, defaults and failure behaviour on real training runs."""

from __future__ import annotations

import json
import logging
import os

import numpy as np
import pytest
import xgboost as xgb
from xgbutil import full_hook, task, train, value

import smdebug.xgboost as smd
from smdebug.core.locations import END_OF_JOB
from smdebug.core.stop_request import write_stop_request
from smdebug.storage import open_store
from smdebug.trials import create_trial


def test_default_hook_saves_metrics_every_10_rounds_and_marks_the_end(tmp_path):
    t = task("binary")
    hook = smd.Hook(out_dir=str(tmp_path))
    train(t, hook, rounds=12)
    trial = create_trial(str(tmp_path))
    assert trial.steps() == [0, 10]  # every round is written when training returns
    assert sorted(trial.tensor_names()) == sorted(
        f"{d}-{m}" for d in ("train", "validation") for m in ("logloss", "auc", "error")
    )
    assert not (tmp_path / END_OF_JOB).exists()  # the hook stays open until close() or exit
    hook.close()
    assert (tmp_path / END_OF_JOB).exists()
    colls = json.loads((tmp_path / "collections/000000000/worker_0_collections.json").read_text())
    assert set(colls["collections"]) == {
        "all",
        "default",
        "hyperparameters",
        "metrics",
        "losses",
        "predictions",
        "labels",
        "feature_importance",
        "average_shap",
        "full_shap",
        "trees",
    }
    assert colls["_meta"] == {"num_workers": 1}


def test_save_steps_and_a_collection_schedule_of_its_own(tmp_path):
    t = task("regression")
    hook = smd.Hook(
        out_dir=str(tmp_path),
        save_config=smd.SaveConfig(save_steps=[1, 3]),
        include_collections=["metrics", "feature_importance"],
    )
    hook.get_collection("feature_importance").save_config = smd.SaveConfig(save_interval=2)
    train(t, hook, rounds=5)
    trial = create_trial(str(tmp_path))
    assert trial.steps() == [0, 1, 2, 3, 4]
    assert trial.tensor("train-rmse").steps() == [0, 1, 3]  # save_steps, and the default interval (100)
    fi = [n for n in trial.tensor_names() if n.startswith("feature_importance/gain/")]
    assert fi and sorted({s for n in fi for s in trial.tensor(n).steps()}) == [0, 2, 4]


def test_losses_at_steps_without_metrics_leave_out_auc(tmp_path):
    t = task("binary")
    hook = smd.Hook(out_dir=str(tmp_path), include_collections=["losses"], save_config=smd.SaveConfig(save_interval=2))
    hook.get_collection("losses").save_config = smd.SaveConfig(save_interval=1)  # metrics: always saved, every 2
    r = train(t, hook, rounds=3)
    trial = create_trial(str(tmp_path))
    losses = ["train-error", "train-logloss", "validation-error", "validation-logloss"]
    assert sorted(trial.tensor_names(step=1)) == losses
    assert sorted(trial.tensor_names(step=2)) == sorted(losses + ["train-auc", "validation-auc"])
    assert sorted(trial.tensor_names(collection="losses")) == losses
    assert value(trial, "validation-logloss", 1)[0] == r.evals_result["validation"]["logloss"][1]


def test_sklearn_estimator_with_the_hook_as_callback(tmp_path):
    t = task("multi")
    X, y = t.train.get_data().toarray(), t.train.get_label()
    Xv, yv = t.valid.get_data().toarray(), t.valid.get_label()
    hook = smd.Hook(
        out_dir=str(tmp_path),
        save_config=smd.SaveConfig(save_interval=1),
        include_collections=["metrics", "predictions", "labels"],
        validation_data=xgb.DMatrix(Xv, yv),
    )
    clf = xgb.XGBClassifier(n_estimators=3, max_depth=2, n_jobs=1, eval_metric="mlogloss", callbacks=[hook])
    clf.fit(X, y, eval_set=[(Xv, yv)], verbose=False)
    trial = create_trial(str(tmp_path))
    assert trial.steps() == [0, 1, 2]
    assert sorted(trial.tensor_names()) == ["labels", "predictions", "validation_0-mlogloss"]
    assert value(trial, "validation_0-mlogloss", 2)[0] == clf.evals_result()["validation_0"]["mlogloss"][2]
    np.testing.assert_array_equal(value(trial, "predictions", 2), clf.predict_proba(Xv))
    hook.close()
    assert (tmp_path / END_OF_JOB).exists()


def test_sklearn_clone_keeps_the_hook(tmp_path):
    from sklearn.base import clone

    hook = smd.Hook(out_dir=str(tmp_path), validation_data=task("binary").valid)
    clf = xgb.XGBClassifier(n_estimators=2, callbacks=[hook])
    assert clone(clf).callbacks[0] is hook  # a DMatrix cannot be copied; one hook, one trial


def _json_config(path, out_dir, **params):
    doc = {
        "LocalPath": str(out_dir),
        "HookParameters": {k: str(v) for k, v in params.items()},
        "CollectionConfigurations": [
            {"CollectionName": "metrics"},
            {"CollectionName": "feature_importance"},
            {"CollectionName": "predictions", "CollectionParameters": {"save_interval": "3"}},
        ],
    }
    path.write_text(json.dumps(doc))
    return path


def test_json_config_gives_the_same_trial_as_kwargs(tmp_path, monkeypatch):
    t = task("binary")
    cfg = _json_config(tmp_path / "hook.json", tmp_path / "json", save_interval=2)
    monkeypatch.setenv("SMDEBUG_CONFIG_FILE_PATH", str(cfg))
    from_json = smd.get_hook(create_if_not_exists=True)
    assert isinstance(from_json, smd.Hook) and smd.get_hook() is from_json
    from_json.validation_data = t.valid  # what SageMaker's XGBoost container sets after making the hook
    train(t, from_json, rounds=7)
    kw = smd.Hook(
        out_dir=str(tmp_path / "kw"),
        save_config=smd.SaveConfig(save_interval=2),
        include_collections=["metrics", "feature_importance", "predictions"],
        validation_data=t.valid,
    )
    kw.get_collection("predictions").save_config = smd.SaveConfig(save_interval=3)
    train(t, kw, rounds=7)
    a, b = create_trial(str(tmp_path / "json")), create_trial(str(tmp_path / "kw"))
    assert a.steps() == b.steps() == [0, 2, 3, 4, 6]
    assert a.tensor_names() == b.tensor_names()
    assert a.tensor("predictions").steps() == [0, 3, 6]
    for name in a.tensor_names():
        assert a.tensor(name).steps() == b.tensor(name).steps()
        for s in a.tensor(name).steps():
            np.testing.assert_array_equal(value(a, name, s), value(b, name, s))


def test_json_config_without_a_schedule_saves_every_10_rounds(tmp_path):
    t = task("regression")
    hook = smd.Hook.create_from_json_file(str(_json_config(tmp_path / "hook.json", tmp_path / "out")))
    train(t, hook, rounds=11)
    assert create_trial(str(tmp_path / "out")).tensor("train-rmse").steps() == [0, 10]


def test_an_error_inside_the_hook_never_stops_training(tmp_path, caplog):
    t = task("binary")
    wrong = xgb.DMatrix(np.zeros((5, 40)))  # 40 features, not 30: predict() raises inside the hook at round 2
    hook = smd.Hook(
        out_dir=str(tmp_path),
        save_config=smd.SaveConfig(save_interval=1),
        include_collections=["metrics", "predictions"],
        validation_data=wrong,
    )
    hook.get_collection("predictions").save_config = smd.SaveConfig(save_interval=2, start_step=2)
    with caplog.at_level(logging.ERROR, logger="smdebug"):
        r = train(t, hook, rounds=4)
    assert r.booster.num_boosted_rounds() == 4
    np.testing.assert_array_equal(r.booster.predict(t.valid), train(t, None, rounds=4).booster.predict(t.valid))
    assert hook.disabled
    assert sum("disabled the hook" in m for m in caplog.messages) == 1
    trial = create_trial(str(tmp_path))
    assert trial.steps() == [0, 1, 2]  # what was saved before the error is kept
    assert (
        trial.tensor_names(step=2)
        == trial.tensor_names(step=1)
        == sorted(f"{d}-{m}" for d in ("train", "validation") for m in ("logloss", "auc", "error"))
    )


def test_an_error_inside_the_hook_propagates_when_asked(tmp_path, monkeypatch):
    monkeypatch.setenv("SMDEBUG_PROPAGATE_ERRORS", "1")
    t = task("binary")
    hook = smd.Hook(
        out_dir=str(tmp_path), include_collections=["predictions"], validation_data=xgb.DMatrix(np.zeros((5, 40)))
    )
    with pytest.raises(ValueError, match="feature"):
        train(t, hook, rounds=2)


def test_gblinear_saves_metrics_and_shap_but_no_trees(tmp_path, caplog):
    t = task("regression")
    t.params["booster"] = "gblinear"
    hook = full_hook(tmp_path, t)
    with caplog.at_level(logging.WARNING, logger="smdebug"):
        r = train(t, hook, rounds=3)
    trial = create_trial(str(tmp_path))
    assert trial.steps() == [0, 1, 2]
    assert not [n for n in trial.tensor_names() if n.startswith(("trees/", "feature_importance/"))]
    assert value(trial, "train-rmse", 2)[0] == r.evals_result["train"]["rmse"][2]
    np.testing.assert_allclose(
        value(trial, "full_shap/f5", 2), r.booster.predict(t.train, pred_contribs=True)[:, 5], rtol=1e-6
    )
    assert sum("tree booster" in m for m in caplog.messages) == 1
    assert not hook.disabled


def test_save_scalar_and_save_tensor(tmp_path):
    t = task("binary")
    hook = smd.Hook(out_dir=str(tmp_path), save_config=smd.SaveConfig(save_interval=2))
    hook.save_tensor("my/array", np.arange(4), "custom")
    hook.save_scalar("lr", 0.3)
    train(t, hook, rounds=3)
    trial = create_trial(str(tmp_path))
    assert value(trial, "my/array", 0).tolist() == [0, 1, 2, 3]
    assert trial.tensor_names(collection="custom") == ["my/array"]
    assert value(trial, "scalar/lr", 0).tolist() == [0.3]


def test_save_scalar_and_save_tensor_after_training_land_at_a_step_of_their_own(tmp_path):
    t = task("binary")
    hook = smd.Hook(out_dir=str(tmp_path), save_config=smd.SaveConfig(save_interval=2))
    r = train(t, hook, rounds=3)  # rounds 0, 1, 2: steps 0 and 2 saved
    acc = float(((r.booster.predict(t.valid) > 0.5) == t.valid.get_label()).mean())
    hook.save_scalar("test_accuracy", acc)
    hook.save_tensor("test_predictions", r.booster.predict(t.valid), "custom")
    train(t, hook, rounds=2)  # a second run of the same hook saves nothing (a warning says so)
    hook.close()
    trial = create_trial(str(tmp_path))
    assert trial.steps() == [0, 2, 3]  # step 3 is off the schedule: saved after training, never over step 2
    assert value(trial, "scalar/test_accuracy", 3).tolist() == [pytest.approx(acc)]
    np.testing.assert_allclose(value(trial, "test_predictions", 3), r.booster.predict(t.valid), rtol=1e-6)
    assert trial.tensor_names(collection="custom") == ["test_predictions"]
    assert trial.tensor("validation-logloss").steps() == [0, 2]
    assert value(trial, "validation-logloss", 2)[0] == r.evals_result["validation"]["logloss"][2]


@pytest.mark.parametrize("propagate", ["0", "1"])
def test_wrong_arguments_to_public_methods_raise_at_once(tmp_path, monkeypatch, propagate):
    monkeypatch.setenv("SMDEBUG_PROPAGATE_ERRORS", propagate)
    hook = smd.Hook(out_dir=str(tmp_path))
    with pytest.raises(ValueError, match="Invalid mode 'a'"):
        hook.set_mode("a")
    with pytest.raises(TypeError, match="name"):
        hook.save_scalar(3, 1.0)
    with pytest.raises(TypeError, match="not a number"):
        hook.save_scalar("acc", "high")
    with pytest.raises(TypeError, match="timestamp"):
        hook.save_scalar("acc", 1.0, timestamp="now")
    with pytest.raises(TypeError, match="collections_to_write"):
        hook.save_tensor("t", np.zeros(2), ["custom", None])
    assert not hook.disabled and hook.mode == smd.modes.GLOBAL
    train(task("binary"), hook, rounds=2)
    hook.close()
    assert create_trial(str(tmp_path)).steps() == [0]


def test_hook_slot(tmp_path):
    hook = smd.Hook(out_dir=str(tmp_path))
    assert smd.get_hook() is hook
    smd.del_hook()
    assert smd.get_hook() is None
    smd.set_hook(hook)
    assert smd.get_hook() is hook


def test_tensorboard_scalars_of_metrics_and_importances(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    t = task("binary")
    hook = smd.Hook(
        out_dir=str(tmp_path / "run"),
        export_tensorboard=True,
        save_config=smd.SaveConfig(save_interval=1),
        include_collections=["metrics", "feature_importance", "predictions", "trees"],
        validation_data=t.valid,
    )
    r = train(t, hook, rounds=3)
    scalars, hists = {}, set()
    for root, _dirs, files in os.walk(tmp_path / "run" / "tensorboard"):
        for f in files:
            acc = EventAccumulator(os.path.join(root, f), size_guidance={"scalars": 0, "histograms": 0})
            acc.Reload()
            for tag in acc.Tags()["scalars"]:
                scalars.update({(tag, ev.step): ev.value for ev in acc.Scalars(tag)})
            hists.update(acc.Tags()["histograms"])
    assert scalars[("validation-logloss", 2)] == pytest.approx(r.evals_result["validation"]["logloss"][2], rel=1e-6)
    assert any(tag.startswith("feature_importance/gain/") for tag, _ in scalars)
    assert "predictions/predictions" in hists and "trees/trees/Gain" in hists
    assert "trees/trees/Feature" not in hists  # no histogram of text


def test_dry_run_writes_nothing(tmp_path):
    t = task("binary")
    train(t, full_hook(tmp_path / "run", t, dry_run=True), rounds=2)
    assert not (tmp_path / "run" / "events").exists()


def test_a_rule_can_stop_training(tmp_path):
    t = task("binary")
    write_stop_request(open_store(str(tmp_path)), "LossNotDecreasing", 0, "test")
    hook = smd.Hook(out_dir=str(tmp_path), save_config=smd.SaveConfig(save_interval=1))
    r = train(t, hook, rounds=5)
    assert r.booster.num_boosted_rounds() == 1
    assert create_trial(str(tmp_path)).steps() == [0]


def test_a_hook_whose_training_ended_saves_no_more(tmp_path, caplog):
    t = task("binary")
    hook = smd.Hook(out_dir=str(tmp_path), save_config=smd.SaveConfig(save_interval=1))
    train(t, hook, rounds=2)
    with caplog.at_level(logging.WARNING, logger="smdebug"):
        train(t, hook, rounds=3)
    assert create_trial(str(tmp_path)).steps() == [0, 1]
    assert sum("make a new hook" in m for m in caplog.messages) == 1


def test_bad_arguments_are_named(tmp_path):
    with pytest.raises(smd_errors().SMDebugTypeError, match="validation_data"):
        smd.Hook(out_dir=str(tmp_path), validation_data=[[1, 2]])
    with pytest.raises(smd_errors().SMDebugValueError, match="include_workers"):
        smd.Hook(out_dir=str(tmp_path), include_workers="some")


def smd_errors():
    import smdebug.exceptions

    return smdebug.exceptions


def test_xgb_cv_is_not_supported_but_runs_to_the_end(tmp_path, caplog):
    t = task("binary")
    hook = smd.Hook(out_dir=str(tmp_path), save_config=smd.SaveConfig(save_interval=1))
    with caplog.at_level(logging.ERROR, logger="smdebug"):
        res = xgb.cv(t.params, t.train, num_boost_round=3, nfold=2, callbacks=[hook])
    assert len(res) == 3
    assert hook.disabled
    errors = [r for r in caplog.records if r.exc_info]
    assert len(errors) == 1 and "xgb.cv" in str(errors[0].exc_info[1])


def test_include_regex_saves_matching_tensors_in_default(tmp_path):
    t = task("binary")
    hook = smd.Hook(
        out_dir=str(tmp_path),
        include_regex=["^validation-", "^feature_importance/gain/"],
        save_config=smd.SaveConfig(save_interval=1),
    )
    train(t, hook, rounds=2)
    trial = create_trial(str(tmp_path))
    assert trial.tensor_names(collection="default") == ["validation-auc", "validation-error", "validation-logloss"]
    # as in 1.0.34, a collection's tensors are computed when that collection is saved: no feature
    # importance here, as the feature_importance collection is not
    assert not any(n.startswith("feature_importance/") for n in trial.tensor_names())


def test_a_resumed_job_continues_the_step_numbers(tmp_path):
    """A job resumed from a checkpoint (spot training) finds its own steps in the folder, with no
    end-of-training marker: its rounds follow them, none is written twice."""
    t = task("binary")
    first = smd.Hook(out_dir=str(tmp_path), save_config=smd.SaveConfig(save_interval=1))
    r1 = train(t, first, rounds=3)
    first.close()
    (tmp_path / END_OF_JOB).unlink()  # the first job was interrupted before its end
    before = {p.name: p.read_bytes() for p in (tmp_path / "events").rglob("*.tfevents")}
    second = smd.Hook(out_dir=str(tmp_path), save_config=smd.SaveConfig(save_interval=2))
    r2 = train(t, second, rounds=4, xgb_model=r1.booster)
    second.close()
    trial = create_trial(str(tmp_path))
    # the resumed job's rounds are steps 3..6; the schedule (every 2nd step) saves 4 and 6
    assert trial.steps() == [0, 1, 2, 4, 6]
    assert value(trial, "validation-logloss", 2)[0] == r1.evals_result["validation"]["logloss"][2]
    assert value(trial, "validation-logloss", 6)[0] == r2.evals_result["validation"]["logloss"][3]
    assert {p.name: p.read_bytes() for p in (tmp_path / "events").rglob("*.tfevents") if p.name in before} == before


def test_a_spot_job_resumes_from_the_checkpoint_folder_state(tmp_path, monkeypatch, peer):
    """On SageMaker a resumed job's tensors folder starts empty; its checkpoint folder (named by
    $CHECKPOINT_CONFIG_FILE_PATH) comes back. The state the hook keeps there, in 1.0.34's format,
    continues the step numbers after the last step written."""
    import subprocess

    config = tmp_path / "checkpointconfig.json"
    config.write_text(json.dumps({"LocalPath": str(tmp_path / "checkpoints")}))
    monkeypatch.setenv("CHECKPOINT_CONFIG_FILE_PATH", str(config))
    t = task("binary")
    first = smd.Hook(out_dir=str(tmp_path / "a"), save_config=smd.SaveConfig(save_interval=2))
    r1 = train(t, first, rounds=4)  # saves rounds 0 and 2
    first.close()
    states = json.loads((tmp_path / "checkpoints" / "metadata.json").read_text())
    assert states == [
        {
            "training-run": 0,
            "latest-global-step-saved": 2,
            "latest-global-step-seen": 2,
            "latest-mode-step": {"GLOBAL": 2},
        }
    ]
    # smdebug 1.0.34 resumes from the same state
    code = (
        "from smdebug.core.state_store import StateStore; import json; "
        "print(json.dumps(StateStore().get_last_saved_state()))"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # 1.0.34's own smdebug
    out = subprocess.run(
        [peer, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**env, "CHECKPOINT_CONFIG_FILE_PATH": str(config)},
    )
    assert json.loads(out.stdout.strip().splitlines()[-1])["latest-global-step-seen"] == 2
    second = smd.Hook(out_dir=str(tmp_path / "b"), save_config=smd.SaveConfig(save_interval=2))
    train(t, second, rounds=3, xgb_model=r1.booster)
    second.close()
    assert second.resumed_from == 2
    assert create_trial(str(tmp_path / "b")).steps() == [4]  # rounds 0..2 of the resumed job are steps 3..5
    states = json.loads((tmp_path / "checkpoints" / "metadata.json").read_text())
    assert [s["training-run"] for s in states] == [0, 1] and states[1]["latest-global-step-seen"] == 4
