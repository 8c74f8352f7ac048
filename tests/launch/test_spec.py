"""The job spec: every input form normalised to one debughookconfig.json; bad input a clear error."""

from __future__ import annotations

import json

import pytest

from smdebug.launch import LaunchConfigError, build_spec
from smdebug.launch.catalog import RULE_CONFIGS, rule_config
from smdebug.launch.inputs import parse_params


class CollectionConfig:
    """Shaped like sagemaker.debugger.CollectionConfig (serialises as the SDK does)."""

    def __init__(self, name, parameters=None):
        self.name, self.parameters = name, parameters

    def _to_request_dict(self):
        d = {"CollectionName": self.name}
        if self.parameters is not None:
            d["CollectionParameters"] = self.parameters
        return d


class SdkRule:
    """Shaped like Rule.sagemaker(rule_configs.exploding_tensor(), rule_parameters=..., collections_to_save=...)."""

    def __init__(self, base, rule_parameters, collections_to_save, actions=None):
        conf = base["DebugRuleConfiguration"]
        self.name = conf["RuleConfigurationName"]
        self.image_uri = "DEFAULT_RULE_EVALUATOR_IMAGE"
        self.rule_parameters = {**conf["RuleParameters"], **rule_parameters}
        self.collection_configs = collections_to_save
        self.actions = actions

    def to_debugger_rule_config_dict(self):
        return {
            "RuleConfigurationName": self.name,
            "RuleEvaluatorImage": self.image_uri,
            "RuleParameters": self.rule_parameters,
        }

    def prepare_actions(self, job_name):  # must never be called: it would aim StopTraining at AWS
        raise AssertionError("prepare_actions called")


class StopTraining:
    def serialize(self):  # what smdebug_rulesconfig's StopTraining().serialize() gives (quotes escaped)
        return '{\\"name\\": \\"stoptraining\\"}'


def _hook_json(spec) -> dict:
    return json.loads(spec.hook_config_json())


def test_the_same_rule_four_ways_gives_the_same_debughookconfig(tmp_path):
    out = str(tmp_path / "trial")
    flag = build_spec(
        name="j", out_dir=out, rules=["exploding_tensor:tensor_regex=.*"], collections=["weights", "losses"]
    )
    as_dict = build_spec(
        name="j",
        out_dir=out,
        rules=[
            {
                "DebugRuleConfiguration": {
                    "RuleConfigurationName": "ExplodingTensor",
                    "RuleParameters": {"rule_to_invoke": "ExplodingTensor", "tensor_regex": ".*"},
                },
                "CollectionConfigurations": [{"CollectionName": "weights"}, {"CollectionName": "losses"}],
            }
        ],
    )
    sdk = build_spec(
        name="j",
        out_dir=out,
        rules=[
            SdkRule(
                rule_config("exploding_tensor"),
                {"tensor_regex": ".*"},
                [CollectionConfig("weights"), CollectionConfig("losses")],
            )
        ],
    )
    request = {
        "TrainingJobName": "j",
        "AlgorithmSpecification": {"TrainingImage": "x"},
        "DebugHookConfig": {
            "S3OutputPath": None,
            "CollectionConfigurations": [{"CollectionName": "weights"}, {"CollectionName": "losses"}],
        },
        "DebugRuleConfigurations": [
            {
                "RuleConfigurationName": "ExplodingTensor",
                "RuleEvaluatorImage": "503895931360.dkr.ecr.us-east-1.amazonaws.com/sagemaker-debugger-rules:latest",
                "RuleParameters": {"rule_to_invoke": "ExplodingTensor", "tensor_regex": ".*"},
            }
        ],
    }
    job_file = tmp_path / "job.json"
    job_file.write_text(json.dumps(request))
    job = build_spec(name="other", out_dir=out, job=str(job_file))
    docs = [_hook_json(s) for s in (flag, as_dict, sdk, job)]
    # nobody gave a schedule: smdebug run chooses one the rule can judge (launch.schedule)
    assert docs[0] == {
        "S3OutputPath": None,
        "LocalPath": out,
        "HookParameters": None,
        "CollectionConfigurations": [
            {"CollectionName": "weights", "CollectionParameters": {"save_interval": "10"}},
            {"CollectionName": "losses", "CollectionParameters": {"save_interval": "1"}},
        ],
    }
    assert all(d == docs[0] for d in docs[1:])
    rules = [[(r.name, r.parameters) for r in s.rules] for s in (flag, as_dict, sdk, job)]
    assert all(r == [("ExplodingTensor", {"rule_to_invoke": "ExplodingTensor", "tensor_regex": ".*"})] for r in rules)
    assert job.name == "j"  # the request's TrainingJobName


def test_the_hook_reads_the_written_config(tmp_path):
    from smdebug.core.config.hook_config import parse_hook_config

    spec = build_spec(
        name="j",
        out_dir=str(tmp_path / "t"),
        collections=["weights:save_interval=10"],
        hook_parameters=["save_interval=5"],
        rules=["loss_not_decreasing"],
    )
    settings = parse_hook_config(spec.hook_config_json(), "written")
    assert settings.out_dir == str(tmp_path / "t")
    # the rule's own collection (rule_configs: losses every 500) is merged in, as the SDK does
    assert settings.include_collections == ["weights", "losses"]


def test_collections_merge_one_entry_per_name_the_users_first():
    # the SDK would send losses three times and the hook keep the rule's 500: the user's 5 lost
    spec = build_spec(
        name="j",
        out_dir="/tmp/x",
        collections=["losses", "losses", "losses:save_interval=5"],
        rules=["loss_not_decreasing"],
    )
    names = [(c["CollectionName"], c.get("CollectionParameters")) for c in spec.collections]
    assert names == [("losses", {"save_interval": "5"})]
    # a rule's default first (a CreateTrainingJob's order), then the user's entry: the user's wins
    spec = build_spec(name="j", out_dir="/tmp/x", rules=["loss_not_decreasing"], collections=["losses:save_interval=7"])
    assert [(c["CollectionName"], c.get("CollectionParameters")) for c in spec.collections] == [
        ("losses", {"save_interval": "7"})
    ]
    # a name only a rule asks for: the rule's default (SageMaker's every 500th step) is no user's choice, and
    # would leave the rule nothing to judge on a short job: the losses are saved every step (launch.schedule)
    spec = build_spec(name="j", out_dir="/tmp/x", rules=["loss_not_decreasing"])
    assert [(c["CollectionName"], c.get("CollectionParameters")) for c in spec.collections] == [
        ("losses", {"save_interval": "1"})
    ]
    assert spec.schedule_notes == ["saving losses every step (scalars; give losses:save_interval=N to choose)"]


def test_action_stop_reaches_every_rule_once():
    spec = build_spec(name="j", out_dir="/tmp/x", rules=["exploding_tensor", "all_zero"], actions=["stop", "stop"])
    for r in spec.rules:
        assert json.loads(r.parameters["action_json"]) == [{"name": "StopTraining"}]


def test_sdk_rule_actions_are_serialised_without_a_job_prefix():
    rule = SdkRule(rule_config("loss_not_decreasing"), {}, [], actions=StopTraining())
    spec = build_spec(name="j", out_dir="/tmp/x", rules=[rule], actions=["stop"])
    (r,) = spec.rules
    assert json.loads(r.parameters["action_json"]) == {"name": "stoptraining"}


def test_every_rule_configs_function_is_known():
    assert len(RULE_CONFIGS) == 21
    spec = build_spec(name="j", out_dir="/tmp/x", rules=["VanishingGradient", "weight-update-ratio"])
    assert [r.name for r in spec.rules] == ["VanishingGradient", "WeightUpdateRatio"]


def test_parameters_with_colons_and_mode_prefixes():
    assert parse_params(["include_regex=a:b", "train.save_interval=3"], "x") == {
        "include_regex": "a:b",
        "train.save_interval": "3",
    }


def test_rule_file_flag(tmp_path):
    f = tmp_path / "my_rules.py"
    f.write_text("x = 1\n")
    spec = build_spec(name="j", out_dir="/tmp/x", rule_files=[f"{f}:MyRule:threshold=20"])
    (r,) = spec.rules
    assert r.to_request_dict()["RuleParameters"] == {
        "source_s3_uri": str(f),
        "rule_to_invoke": "MyRule",
        "threshold": "20",
    }


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"rules": ["no_such_rule"]}, "'no_such_rule' is no built-in rule"),
        ({"rules": ["exploding_tensor", "exploding_tensor"]}, "two rules are named ExplodingTensor"),
        (
            {"rules": [f"all_zero:{'x' * 3}=1"] * 1 + [{"RuleConfigurationName": "A", "RuleParameters": {}}]},
            "rule A has no RuleParameters.rule_to_invoke",
        ),
        (
            {
                "rules": [
                    {
                        "RuleConfigurationName": "A",
                        "RuleEvaluatorImage": "me/my-image:1",
                        "RuleParameters": {"rule_to_invoke": "A"},
                    }
                ]
            },
            "container images are not run here",
        ),
        ({"collections": [f"c{i}:include_regex=c{i}" for i in range(21)]}, "at most 20"),
        ({"collections": ["weights:save_interval=" + "1" * 300]}, "SageMaker allows 256"),
        ({"rules": ["exploding_tensor:rule_to_invoke=AllZero"]}, "cannot provide a 'rule_to_invoke'"),
        ({"actions": ["stop"]}, "--action needs a rule"),
        ({"rules": ["all_zero"], "actions": ["explode"]}, "expected stop, log"),
        ({"rule_files": ["/nonexistent/rules.py:R"]}, "does not exist"),
        ({"rules": [42]}, "int is no rule"),
        ({"hook_config": False}, "turns the debugger hook off"),
        ({"hook_config": {"LocalPath": "/x", "Bogus": 1}}, "unknown member 'Bogus'"),
        (
            {"collections": [{"CollectionName": "w", "CollectionParameters": {"save_interval": [1]}}]},
            "must be a string",
        ),
    ],
)
def test_bad_input_is_a_clear_error(kwargs, message):
    with pytest.raises(LaunchConfigError, match=message.replace("(", r"\(").replace(".", r"\.").replace("*", r"\*")):
        build_spec(name="j", out_dir="/tmp/x", **kwargs)


def test_rule_limit():
    with pytest.raises(LaunchConfigError, match="21 rules; SageMaker allows at most 20"):
        build_spec(name="j", out_dir="/tmp/x", rules=list(RULE_CONFIGS))


def test_bad_job_file(tmp_path):
    bad = tmp_path / "job.json"
    bad.write_text("{not json")
    with pytest.raises(LaunchConfigError, match=f"job file {bad} is not valid JSON"):
        build_spec(name="j", out_dir="/tmp/x", job=str(bad))
    bad.write_text(json.dumps({"TrainingJobName": "x"}))
    with pytest.raises(LaunchConfigError, match="not a CreateTrainingJob request with a debugger configuration"):
        build_spec(name="j", out_dir="/tmp/x", job=str(bad))


def test_out_dir_from_s3_output_path():
    spec = build_spec(name="j", job={"TrainingJobName": "job1", "DebugHookConfig": {"S3OutputPath": "s3://b/p/"}})
    assert spec.out_dir == "s3://b/p/job1/debug-output"
    assert build_spec(name="j", default_out_dir="/d").out_dir == "/d"
