"""Actions from 1.0.34's action_str: parsing and checking when the rule is built, the local
StopTraining (a stop request in the trial), Log, and the AWS actions against real HTTP servers on
127.0.0.1 (moto for SNS and SageMaker's ListTrainingJobs, a stand-in for StopTrainingJob)."""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
import urllib.request

import pytest

from s3server import free_port
from smdebug.core.locations import STOP_REQUEST_KEY
from smdebug.core.stop_request import read_stop_request
from smdebug.exceptions import RuleConfigurationError, RuleEvaluationConditionMet
from smdebug.rules import Rule, parse_actions
from smdebug.trials import create_trial

SDK_ACTIONS = (
    '[{\\"name\\": \\"stoptraining\\", \\"training_job_prefix\\": \\"my-job-2021\\"}, '
    '{\\"endpoint\\": \\"abc@abc.com\\", \\"name\\": \\"email\\"}, '
    '{\\"endpoint\\": \\"+1234567890\\", \\"name\\": \\"sms\\"}]'
)


class Fire(Rule):
    def __init__(self, base_trial, action_str="", at=(1,)):
        super().__init__(base_trial, action_str=action_str)
        self.at = set(at)

    def invoke_at_step(self, step):
        return step in self.at


def _fire(rule, step):
    with pytest.raises(RuleEvaluationConditionMet) as exc:
        rule.invoke(step)
    assert (exc.value.rule_name, exc.value.step) == ("Fire", step)


@pytest.fixture
def trial(pt_runs, tmp_path):
    """A private copy of a real PyTorch run (actions write into it)."""
    shutil.copytree(pt_runs["a"].path, tmp_path / "run")
    return create_trial(str(tmp_path / "run"))


# ---------------------------------------------------------------- parsing
def test_parse_sdk_escaped_form_and_keep_case():
    specs = parse_actions(SDK_ACTIONS)
    assert [(s.kind, s.params) for s in specs] == [
        ("stoptraining", {"training_job_prefix": "my-job-2021"}),
        ("email", {"endpoint": "abc@abc.com"}),
        ("sms", {"endpoint": "+1234567890"}),
    ]
    one = parse_actions('{"name": "StopTraining", "training_job_prefix": "My-Job"}')
    assert one[0].kind == "stoptraining" and one[0].params == {"training_job_prefix": "My-Job"}
    assert [s.name for s in parse_actions([{"name": "LOG"}, {"name": "stoptraining"}])] == ["Log", "StopTraining"]
    keys = parse_actions('{"Name": "SMS", "Endpoint": "+15551234567"}')  # 1.0.34 lower-cased keys too
    assert (keys[0].kind, keys[0].params) == ("sms", {"endpoint": "+15551234567"})
    assert parse_actions("") == parse_actions("  ") == parse_actions(None) == []


@pytest.mark.parametrize(
    "action_str, words",
    [
        ('{"name": "StopTraining"', "not valid JSON"),
        ("3", "expected an object or a list"),
        ('["stoptraining"]', "must be an object"),
        ('{"training_job_prefix": "x"}', "has no 'name'"),
        ('{"name": "Reboot"}', "unknown action 'Reboot'"),
        ('{"name": "email"}', "needs an 'endpoint'"),
        ('{"name": "Email", "endpoint": "not-an-address"}', "not an e-mail address"),
        ('{"name": "SMS", "endpoint": "5551234"}', "E.164"),
        ('{"name": "StopTraining", "training_job_prefix": "my_job!"}', "letters, digits"),
        ('{"name": "StopTraining", "prefix": "my-job"}', "unknown key 'prefix'"),
    ],
)
def test_malformed_action_str_fails_when_the_rule_is_built(trial, action_str, words):
    with pytest.raises(RuleConfigurationError) as exc:
        Fire(trial, action_str=action_str)
    assert exc.value.parameter == "action_str" and exc.value.rule_name == "Fire"
    assert words in str(exc.value)


def test_local_and_log_actions_import_no_aws_sdk():
    code = (
        "import sys, smdebug.rules as r\n"
        'r.Actions(\'[{"name": "StopTraining"}, {"name": "Log"}]\', \'X\')\n'
        "print('boto3' in sys.modules or 'botocore' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ---------------------------------------------------------------- local actions
@pytest.mark.parametrize("action_str", ['{"name": "StopTraining"}', '[{\\"name\\": \\"stoptraining\\"}]'])
def test_local_stop_training_writes_a_stop_request_once(trial, action_str):
    rule = Fire(trial, action_str=action_str, at=(2, 4))
    rule.invoke(1)
    assert read_stop_request(trial.store) is None
    _fire(rule, 2)
    req = read_stop_request(trial.store)
    assert (req.rule, req.step) == ("Fire", 2)
    assert req.reason == "Evaluation of the rule Fire at step 2 resulted in the condition being met"
    assert trial.store.exists(STOP_REQUEST_KEY)
    _fire(rule, 4)
    assert read_stop_request(trial.store) == req  # asked once
    assert 5 in trial.steps() and STOP_REQUEST_KEY.split("/")[-1] not in trial.tensor_names()


def test_log_action_only_logs(trial, caplog):
    rule = Fire(trial, action_str='{"name": "Log", "message": "look at the loss"}')
    with caplog.at_level(logging.WARNING, logger="smdebug"):
        _fire(rule, 1)
    msgs = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert msgs == [
        "smdebug: rule Fire fired at step 1: Evaluation of the rule Fire at step 1 resulted in "
        "the condition being met look at the loss"
    ]
    assert read_stop_request(trial.store) is None


# ---------------------------------------------------------------- SNS through moto
@pytest.fixture
def sns(aws_env, monkeypatch):
    import boto3

    monkeypatch.setenv("AWS_ENDPOINT_URL_SNS", aws_env)
    return boto3.client("sns", endpoint_url=aws_env, region_name="us-east-1")


def _sent(url):
    data = json.load(urllib.request.urlopen(f"{url}/moto-api/data.json"))
    topics = [t for t in data["sns"]["Topic"] if t["name"] == "SMDebugRules"]
    return [tuple(n[1:4]) for t in topics for n in t["sent_notifications"]]


def test_email_and_sms_through_sns(trial, sns, aws_env):
    actions = '[{"name": "Email", "endpoint": "me@example.com"}, {"name": "SMS", "endpoint": "+15551234567"}]'
    rule = Fire(trial, action_str=actions, at=(3,))
    arn = next(t["TopicArn"] for t in sns.list_topics()["Topics"] if t["TopicArn"].endswith(":SMDebugRules"))
    subs = {
        (s["Protocol"], s["Endpoint"]): s["SubscriptionArn"]
        for s in sns.list_subscriptions_by_topic(TopicArn=arn)["Subscriptions"]
    }
    assert {("email", "me@example.com"), ("sms", "+15551234567")} <= set(subs)
    policy = sns.get_subscription_attributes(SubscriptionArn=subs[("email", "me@example.com")])["Attributes"][
        "FilterPolicy"
    ]
    assert json.loads(policy) == {"email": ["me@example.com"]}
    before = _sent(aws_env)
    _fire(rule, 3)
    new = _sent(aws_env)[len(before) :]
    text = "SMDebugRule:Fire fired. Evaluation of the rule Fire at step 3 resulted in the condition being met"
    assert new == [
        (text, "SMDebugRule:Fire fired", {"email": {"Type": "String", "Value": "me@example.com"}}),
        (text, "SMDebugRule:Fire fired", {"phone_num": {"Type": "String", "Value": "+15551234567"}}),
    ]
    Fire(trial, action_str=actions)  # the same endpoints again: no second subscription
    again = [(s["Protocol"], s["Endpoint"]) for s in sns.list_subscriptions_by_topic(TopicArn=arn)["Subscriptions"]]
    assert again.count(("email", "me@example.com")) == 1


def test_sns_errors_are_logged_not_raised(trial, aws_env, monkeypatch, caplog):
    monkeypatch.setenv("AWS_ENDPOINT_URL_SNS", f"http://127.0.0.1:{free_port()}")  # nothing listens there
    with caplog.at_level(logging.ERROR, logger="smdebug"):
        rule = Fire(trial, action_str='{"name": "Email", "endpoint": "me@example.com"}')
        _fire(rule, 1)
    msgs = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(msgs) == 2
    assert "could not set up SNS topic SMDebugRules" in msgs[0] and "no email was sent" in msgs[1]


# ---------------------------------------------------------------- SageMaker StopTrainingJob
def test_stop_training_job_needs_one_in_progress_job_moto(trial, aws_env, monkeypatch, caplog):
    import boto3

    monkeypatch.setenv("AWS_ENDPOINT_URL_SAGEMAKER", aws_env)
    sm = boto3.client("sagemaker", endpoint_url=aws_env, region_name="us-east-1")
    sm.create_training_job(
        TrainingJobName="rules-job-1",
        AlgorithmSpecification={"TrainingImage": "img", "TrainingInputMode": "File"},
        RoleArn="arn:aws:iam::123456789012:role/r",
        OutputDataConfig={"S3OutputPath": "s3://b/out"},
        ResourceConfig={"InstanceType": "ml.m5.large", "InstanceCount": 1, "VolumeSizeInGB": 1},
        StoppingCondition={"MaxRuntimeInSeconds": 60},
    )
    rule = Fire(trial, action_str='{"name": "StopTraining", "training_job_prefix": "rules-job"}')
    with caplog.at_level(logging.WARNING, logger="smdebug"):
        _fire(rule, 1)
    assert any("found 0 InProgress training jobs starting with 'rules-job'" in r.getMessage() for r in caplog.records)
    assert sm.describe_training_job(TrainingJobName="rules-job-1")["TrainingJobStatus"] == "Completed"
    assert read_stop_request(trial.store) is None  # a SageMaker job: nothing local


@pytest.fixture
def standin(aws_env, monkeypatch):
    from sagemaker_standin import SageMakerStandIn

    server = SageMakerStandIn({"my-job-2020": "Completed", "my-job-2021": "InProgress", "other-my-job-1": "InProgress"})
    monkeypatch.setenv("AWS_ENDPOINT_URL_SAGEMAKER", server.url)
    yield server
    server.close()


def test_stop_training_job_stops_the_one_matching_job(trial, standin, caplog):
    rule = Fire(
        trial, action_str='{\\"name\\": \\"stoptraining\\", \\"training_job_prefix\\": \\"my-job\\"}', at=(2, 3)
    )
    assert standin.calls == []  # jobs are looked up when the rule fires
    with caplog.at_level(logging.WARNING, logger="smdebug"):
        _fire(rule, 2)
        _fire(rule, 3)
    assert standin.stopped == ["my-job-2021"]  # once; 'other-my-job-1' contains the prefix but does not start with it
    lists = [body for op, body in standin.calls if op == "ListTrainingJobs"]
    assert len(lists) == 2 and lists[1]["NextToken"] == "1"  # paged
    assert lists[0] == {
        "NameContains": "my-job",
        "SortBy": "CreationTime",
        "SortOrder": "Descending",
        "StatusEquals": "InProgress",
    }
    assert any("stopped SageMaker training job my-job-2021" in r.getMessage() for r in caplog.records)


def test_stop_training_job_skips_when_several_match(trial, standin, caplog):
    standin.jobs["my-job-2021-b"] = "InProgress"
    rule = Fire(trial, action_str='{"name": "StopTraining", "training_job_prefix": "my-job-2021"}')
    with caplog.at_level(logging.WARNING, logger="smdebug"):
        _fire(rule, 1)
    assert standin.stopped == []
    assert any(
        "found 2 InProgress training jobs starting with 'my-job-2021' (my-job-2021-b, my-job-2021)" in r.getMessage()
        for r in caplog.records
    )
