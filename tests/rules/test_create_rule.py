"""create_rule from SageMaker's RuleParameters: parameters parsed when the rule is built, unknown
keys ignored with one warning, bad input a RuleConfigurationError naming the key."""

from __future__ import annotations

import importlib.util
import logging

import numpy as np
import pytest

from smdebug.exceptions import RuleConfigurationError
from smdebug.rules import Rule, create_rule, invoke_rule
from smdebug.rules.builtin import RULE_MODULES, required_collections
from smdebug.rules.builtin.base import BuiltinRule, HookCollection, Param, select_tensor_names
from smdebug.rules.params import as_bool, as_float, as_regex_list, as_str_list
from smdebug.trials import create_trial


class LossAbove(BuiltinRule):
    """A tiny built-in-style rule: fires when a selected scalar is above ``threshold``."""

    params = (
        Param("threshold", as_float, "1.0"),
        Param("tensor_regex", as_regex_list, "CrossEntropyLoss.*"),
        Param("collection_names", as_str_list, ""),
        Param("use_abs", as_bool, "False"),
    )
    hook_collections = (HookCollection("losses", {"save_interval": "1"}),)

    def invoke_at_step(self, step):
        for name in select_tensor_names(self.base_trial, step, self.collection_names, self.tensor_regex):
            v = float(self.base_trial.tensor(name).value(step))
            if (abs(v) if self.use_abs else v) > self.threshold:
                return True
        return False


class Compare(BuiltinRule):
    params = (Param("tensor_regex", as_regex_list, "weight"),)
    uses_other_trials = True

    def invoke_at_step(self, step):
        for name in select_tensor_names(self.base_trial, step, (), self.tensor_regex):
            if not np.allclose(self.base_trial.tensor(name).value(step), self.other_trials[0].tensor(name).value(step)):
                return True
        return False


class VanishingGradientRule(Rule):  # a custom rule as the docs write it: no action_str
    def __init__(self, base_trial, threshold=0.0000001):
        super().__init__(base_trial, other_trials=None)
        self.threshold = float(threshold)

    def invoke_at_step(self, step):
        return False


CLASSES = [LossAbove, Compare, VanishingGradientRule]


def test_parameters_are_parsed_and_unknown_keys_warned_once(pt_runs, caplog):
    trial = create_trial(pt_runs["a"].path)
    losses = [float(s.loss) for s in pt_runs["a"].steps]
    threshold = sorted(losses)[2]  # fires at the steps whose loss is above the third smallest
    params = {
        "rule_to_invoke": "LossAbove",
        "threshold": str(threshold),
        "use_abs": "False",
        "collection_names": "",
        "source_s3_uri": "s3://bucket/rule.py",
        "instance_type": "ml.t3.medium",
        "action_json": '{\\"name\\": \\"log\\"}',
    }
    with caplog.at_level(logging.WARNING, logger="smdebug"):
        rule = create_rule(params, trial, rule_classes=CLASSES)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        "smdebug: rule LossAbove: ignoring RuleParameters that are no parameter of the rule: "
        "instance_type, source_s3_uri"
    ]
    assert rule.threshold == threshold and rule.use_abs is False and rule.collection_names == []
    assert [p.pattern for p in rule.tensor_regex] == ["CrossEntropyLoss.*"]
    assert [s.kind for s in rule.actions.specs] == ["log"]
    run = invoke_rule(rule)
    assert run.fired == [s for s, v in enumerate(losses) if v > threshold] and len(run.fired) == 3
    assert params["rule_to_invoke"] == "LossAbove"  # the caller's dict is left as it was


def test_other_trials_from_paths_in_index_order(pt_runs):
    base = create_trial(pt_runs["a"].path)
    params = {"rule_to_invoke": "Compare", "other_trial_10": pt_runs["b"].path, "other_trial_2": pt_runs["a2"].path}
    rule = create_rule(params, base, rule_classes={"Compare": Compare})
    assert [t.path for t in rule.other_trials] == [pt_runs["a2"].path, pt_runs["b"].path]
    assert invoke_rule(rule).fired == []  # a2: the same seed
    rule = create_rule(
        {"rule_to_invoke": "Compare", "other_trials": pt_runs["b"].path}, pt_runs["a"].path, rule_classes=CLASSES
    )
    assert invoke_rule(rule).fired == list(range(6))  # another seed, from a path given as base_trial too


@pytest.mark.parametrize(
    "params, parameter, words",
    [
        ({"rule_to_invoke": "LossAbove", "threshold": "abc"}, "threshold", "expected a number, got 'abc'"),
        ({"rule_to_invoke": "LossAbove", "use_abs": "maybe"}, "use_abs", "expected True or False"),
        ({"rule_to_invoke": "LossAbove", "tensor_regex": "loss(["}, "tensor_regex", "not a valid regular expression"),
        ({"rule_to_invoke": "LossAbove", "action_json": "{'name': 'Email'}"}, "action_str", "not valid JSON"),
        ({"rule_to_invoke": "LossAbove", "action_json": '{"name": "Page"}'}, "action_str", "unknown action 'Page'"),
        (
            {"rule_to_invoke": "NoSuchRule"},
            "rule_to_invoke",
            "no such built-in rule; built-in rules: AllZero, CheckInputImages, ClassImbalance",
        ),
        ({"rule_to_invoke": "vanishinggradient"}, "rule_to_invoke", "did you mean 'VanishingGradient'?"),
        ({"threshold": "1"}, "rule_to_invoke", "missing"),
        (
            {"rule_to_invoke": "LossAbove", "other_trial_0": "/nonexistent/trial"},
            "other_trial_0",
            "reads only the base trial",
        ),
        (
            {"rule_to_invoke": "Compare", "other_trial_0": "/nonexistent/trial"},
            "other_trial_0",
            "cannot open the trial at /nonexistent/trial",
        ),
        (
            {"rule_to_invoke": "VanishingGradientRule", "action_json": '{"name": "Log"}'},
            "action_json",
            "takes no action_str",
        ),
    ],
)
def test_bad_input_names_the_parameter(pt_runs, params, parameter, words):
    trial = create_trial(pt_runs["a"].path)
    if parameter == "other_trial_0" and params["rule_to_invoke"] == "LossAbove":
        params = {**params, "other_trial_0": pt_runs["b"].path}
        parameter = "other_trials"
    with pytest.raises(RuleConfigurationError) as exc:
        create_rule(params, trial, rule_classes=CLASSES)
    assert exc.value.parameter == parameter
    assert words in str(exc.value)


def test_custom_rule_takes_its_own_string_parameters(pt_runs):
    rule = create_rule(
        {"rule_to_invoke": "VanishingGradientRule", "threshold": "0.001", "other": "x"},
        create_trial(pt_runs["a"].path),
        rule_classes=CLASSES,
    )
    assert rule.threshold == 0.001 and len(rule.actions) == 0


def _available():
    assert len(RULE_MODULES) == 21  # the debugger rules, each in a module of smdebug.rules.builtin
    assert all(importlib.util.find_spec(f"smdebug.rules.builtin.{m}") is not None for m in RULE_MODULES.values())
    return list(RULE_MODULES)


def test_every_builtin_rule_builds_from_rule_parameters(pt_runs):
    names = _available()
    if not names:
        pytest.skip("no built-in rule module on this branch yet")
    from smdebug.rules.builtin import get_rule_class

    for name in names:
        cls = get_rule_class(name)
        params = {"rule_to_invoke": name}
        if cls.uses_other_trials:
            params["other_trial_0"] = pt_runs["b"].path
        rule = create_rule(params, create_trial(pt_runs["a"].path))
        assert type(rule).__name__ == name
        for p in cls.params:
            assert hasattr(rule, p.name), (name, p.name)
        assert all(isinstance(c, HookCollection) for c in required_collections(name))


# ---------------------------------------------------------------- custom rules from source_s3_uri
CUSTOM_RULE = '''
from smdebug.rules import Rule


class VanishingGradient(Rule):
    """A custom rule that shares a built-in rule's name: it must be this class that runs."""

    def __init__(self, base_trial, limit="0.5", action_str=""):
        super().__init__(base_trial, action_str=action_str)
        self.limit = float(limit)
        self.calls = []

    def invoke_at_step(self, step):
        self.calls.append(step)
        return False


class Other(Rule):
    def invoke_at_step(self, step):
        return False
'''


def _rule_file(tmp_path, text=CUSTOM_RULE):
    path = tmp_path / "my_rules.py"
    path.write_text(text)
    return path


@pytest.mark.parametrize("form", ["path", "file"])
def test_custom_rule_is_loaded_from_source_s3_uri_not_substituted(pt_runs, tmp_path, form):
    path = _rule_file(tmp_path)
    source = str(path) if form == "path" else path.as_uri()
    rule = create_rule(
        {"source_s3_uri": source, "rule_to_invoke": "VanishingGradient", "limit": "0.25"}, pt_runs["a"].path
    )
    assert not isinstance(rule, BuiltinRule) and type(rule).__name__ == "VanishingGradient"
    assert rule.limit == 0.25
    invoke_rule(rule)
    assert rule.calls == create_trial(pt_runs["a"].path).steps()


def test_custom_rule_from_s3(pt_runs, tmp_path, boto_client, bucket):
    boto_client.put_object(Bucket=bucket, Key="rules/my_rules.py", Body=CUSTOM_RULE.encode())
    rule = create_rule(
        {"source_s3_uri": f"s3://{bucket}/rules/my_rules.py", "rule_to_invoke": "VanishingGradient"}, pt_runs["a"].path
    )
    assert not isinstance(rule, BuiltinRule) and rule.limit == 0.5


@pytest.mark.parametrize(
    "source, name, parameter, words",
    [
        ("{file}", "NoSuchRule", "rule_to_invoke", "defines no Rule subclass named 'NoSuchRule' (its rules: Other, "),
        ("{dir}/missing.py", "VanishingGradient", "source_s3_uri", "cannot read the rule file"),
        ("{dir}/", "VanishingGradient", "source_s3_uri", "is a folder"),
        ("", "VanishingGradient", "source_s3_uri", "expected the path or URL of a Python file"),
        ("{broken}", "VanishingGradient", "source_s3_uri", "fails to load: SyntaxError"),
    ],
)
def test_custom_rule_that_cannot_be_loaded_is_refused(pt_runs, tmp_path, source, name, parameter, words):
    broken = tmp_path / "broken.py"
    broken.write_text("class VanishingGradient(:\n")
    source = source.format(file=_rule_file(tmp_path), dir=tmp_path, broken=broken)
    with pytest.raises(RuleConfigurationError) as info:
        create_rule({"source_s3_uri": source, "rule_to_invoke": name}, pt_runs["a"].path)
    assert info.value.parameter == parameter and words in str(info.value)
