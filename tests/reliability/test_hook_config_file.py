"""SageMaker's hook JSON is checked when the hook is built: a bad include_regex, an unknown
CollectionName or a schedule that saves nothing is named (file and key) then, not found at the
first step where it disabled the hook; without SMDEBUG_PROPAGATE_ERRORS the hook logs it once and
saves what is valid."""

from __future__ import annotations

import json
import logging

import pytest
import torch
import torch.nn as nn

import smdebug.pytorch as smd
from smdebug.core.config.hook_config import CONFIG_FILE_PATH_ENV, load_hook_config
from smdebug.exceptions import SMDebugValueError
from smdebug.trials import create_trial

PARAMS = ["Sequential_0.bias", "Sequential_0.weight", "Sequential_2.bias", "Sequential_2.weight"]
GRADS = [f"gradient/{n}" for n in PARAMS]
LOSS = "CrossEntropyLoss_output_0"


@pytest.fixture(autouse=True)
def _no_sagemaker(monkeypatch):
    for var in (CONFIG_FILE_PATH_ENV, "TRAINING_JOB_NAME"):
        monkeypatch.delenv(var, raising=False)
    logging.disable(logging.NOTSET)


@pytest.fixture
def lenient(monkeypatch):
    monkeypatch.delenv("SMDEBUG_PROPAGATE_ERRORS", raising=False)


@pytest.fixture
def strict(monkeypatch):
    monkeypatch.setenv("SMDEBUG_PROPAGATE_ERRORS", "1")


def _config(tmp_path, hook_params: dict, collections: list) -> str:
    doc = {
        "LocalPath": str(tmp_path / "out"),
        "HookParameters": {"save_interval": "1", **hook_params},
        "CollectionConfigurations": [{"CollectionName": n, "CollectionParameters": p} for n, p in collections],
    }
    path = tmp_path / "debughookconfig.json"
    path.write_text(json.dumps(doc))
    return str(path)


def _train(path: str):
    torch.manual_seed(0)
    model, loss_fn = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)), nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    hook = smd.Hook.create_from_json_file(path)
    hook.register_module(model)
    hook.register_loss(loss_fn)
    hook.set_mode(smd.modes.TRAIN)
    x, y = torch.randn(8, 8), torch.randint(0, 3, (8,))
    for _ in range(3):
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    hook.close()
    assert not hook.disabled
    return create_trial(hook.out_dir)


BAD = {
    "hook_regex": ({"include_regex": "Sequential_0.*,[unclosed"}, [("gradients", {})], "include_regex"),
    "unknown_collection": ({}, [("weightz", {}), ("gradients", {})], "weightz"),
    "collection_regex": ({}, [("relu", {"include_regex": "(relu"}), ("gradients", {})], "(relu"),
    "collection_schedule": (
        {},
        [("weights", {"start_step": "10", "end_step": "5"}), ("gradients", {})],
        "start_step=10 is after end_step=5",
    ),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_part_is_logged_once_and_the_rest_is_saved(tmp_path, caplog, lenient, case):
    hook_params, collections, key = BAD[case]
    path = _config(tmp_path, hook_params, collections)
    with caplog.at_level(logging.ERROR, logger="smdebug"):
        trial = _train(path)
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1, caplog.text
    assert path in errors[0].getMessage() and key in errors[0].getMessage()
    assert trial.steps() == [0, 1, 2]
    assert set(GRADS) <= set(trial.tensor_names())
    assert trial.tensor(LOSS).steps() == [0, 1, 2]
    if case == "hook_regex":  # the valid pattern is kept
        assert set(trial.tensor_names(collection="default")) >= {"Sequential_0.weight", "Sequential_0.bias"}
    if case == "collection_schedule":  # the collection with the problem is left out, not saved on another schedule
        assert not set(PARAMS) & set(trial.tensor_names())


@pytest.mark.parametrize("case", list(BAD))
def test_with_errors_propagating_the_hook_is_not_built(tmp_path, strict, case):
    hook_params, collections, key = BAD[case]
    path = _config(tmp_path, hook_params, collections)
    with pytest.raises(SMDebugValueError) as ei:
        smd.Hook.create_from_json_file(path)
    assert path in str(ei.value) and key in str(ei.value)


def test_start_step_after_end_step_of_the_hook_is_refused(tmp_path, strict):
    path = _config(tmp_path, {"train.start_step": "8", "train.end_step": "2"}, [])
    with pytest.raises(SMDebugValueError, match="start_step=8 is after end_step=2.*HookParameters"):
        load_hook_config(path)


def test_deeply_nested_json_is_a_documented_error_naming_the_file(tmp_path):
    path = tmp_path / "debughookconfig.json"
    path.write_text('{"HookParameters": ' + "[" * 200_000 + "]" * 200_000 + "}")
    with pytest.raises(SMDebugValueError, match=f"{path}.*nested too deeply"):
        load_hook_config(str(path))


def test_a_folder_is_said_to_be_a_folder(tmp_path, monkeypatch, caplog):
    folder = tmp_path / "conf.json"
    folder.mkdir()
    with pytest.raises(SMDebugValueError, match=f"{folder} is a folder, not a file"):
        load_hook_config(str(folder))
    monkeypatch.setenv(CONFIG_FILE_PATH_ENV, str(folder))
    with caplog.at_level(logging.WARNING, logger="smdebug"):
        assert load_hook_config() is None
    assert "is a folder, not a file" in caplog.text
