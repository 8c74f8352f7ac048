"""Rule and action input from outside: a stop request written into a trial by someone else (well
formed, malformed, or not JSON at all), malformed action strings, parameters of the wrong type."""

from __future__ import annotations

import logging

import pytest
import torch
import torch.nn as nn

import smdebug.pytorch as smd
from smdebug.core.locations import STOP_REQUEST_KEY
from smdebug.exceptions import RuleConfigurationError, TrainingStopRequested
from smdebug.rules.builtin import ExplodingTensor, LossNotDecreasing
from smdebug.trials import create_trial

FOREIGN = [
    (b'{"rule": "SomeoneElse", "step": 3, "reason": "manual", "time": 1}', "SomeoneElse", 3),
    (b"not json at all \x00\xff", "unknown", -1),
    (b'["a", "list"]', "unknown", -1),
    (b'{"rule": 42, "step": "three", "time": "NaN"}', "unknown", -1),
    (b"", "unknown", -1),
]


@pytest.mark.parametrize("payload, rule, step", FOREIGN, ids=["someone-else", "junk", "list", "wrong-types", "empty"])
def test_a_stop_request_written_by_someone_else(tmp_path, caplog, payload, rule, step):
    """Any file at the stop-request key stops training after the step that saw it (an explicit
    request, whoever wrote it); what cannot be parsed is named 'unknown' and logged with the file."""
    out = tmp_path / "t"
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 2))
    hook = smd.Hook(out_dir=str(out), save_config=smd.SaveConfig(save_interval=1), include_collections=["weights"])
    hook.register_module(model)
    hook.stop_watcher.interval = 0.0
    x = torch.randn(3, 4)
    model(x)
    model(x)
    (out / STOP_REQUEST_KEY).parent.mkdir(parents=True, exist_ok=True)
    (out / STOP_REQUEST_KEY).write_bytes(payload)
    with caplog.at_level(logging.WARNING, logger="smdebug"), pytest.raises(TrainingStopRequested) as info:
        model(x)
    assert info.value.rule_name == rule and info.value.step == step
    model(x)  # raised once: a loop that goes on is not stopped again
    hook.close()
    assert create_trial(str(out)).steps() == [0, 1, 2]  # nothing saved before the request is lost
    if rule == "unknown" and payload[:1] not in (b"[", b"{"):
        assert STOP_REQUEST_KEY in caplog.text


@pytest.mark.parametrize(
    "action_str, needle",
    [
        ("{not json", "action_str"),
        ('{"name": "Launch"}', "action_str"),
        ('{"name": "Email"}', "action_str"),
        ('{"name": "SMS", "endpoint": "12"}', "action_str"),
        ('{"name": "StopTraining", "training_job_prefix": "bad prefix!"}', "action_str"),
        ("[1, 2]", "action_str"),
    ],
)
def test_malformed_action_str_fails_when_the_rule_is_built(tmp_path, action_str, needle):
    from smdtest import FIXTURES

    trial = create_trial(str(FIXTURES / "pytorch_mlp"))
    with pytest.raises(RuleConfigurationError) as info:
        ExplodingTensor(trial, action_str=action_str)
    assert needle in str(info.value)


@pytest.mark.parametrize(
    "params, name",
    [
        ({"num_steps": "ten"}, "num_steps"),
        ({"num_steps": 2.5}, "num_steps"),
        ({"diff_percent": True}, "diff_percent"),
        ({"use_losses_collection": "maybe"}, "use_losses_collection"),
        ({"mode": "SIDEWAYS"}, "mode"),
        ({"tensor_regex": "(unclosed"}, "tensor_regex"),
        ({"collection_names": 7}, "collection_names"),
    ],
)
def test_rule_parameters_of_the_wrong_type(params, name):
    from smdtest import FIXTURES

    trial = create_trial(str(FIXTURES / "pytorch_mlp"))
    with pytest.raises(RuleConfigurationError) as info:
        LossNotDecreasing(trial, **params)
    assert info.value.parameter == name and name in str(info.value)
