"""The actions that call AWS, as smdebug 1.0.34 does: SageMaker's StopTrainingJob, and SNS messages.

Imported only when a rule is configured with one of them (boto3 is not needed otherwise). The
region is ``$AWS_REGION`` (default us-east-1) and boto3's usual settings apply, endpoint
overrides such as ``$AWS_ENDPOINT_URL_SNS`` included. Errors are logged, never raised.
"""

from __future__ import annotations

import json
import logging
import os

from smdebug.exceptions import MissingDependency

__all__ = ["SageMakerStopTraining", "SnsMessage", "TOPIC_NAME", "aws_client"]

logger = logging.getLogger("smdebug")

TOPIC_NAME = "SMDebugRules"
MAX_PAGES = 50


def aws_client(service: str):
    try:
        import boto3
        from botocore.config import Config
    except ImportError as exc:
        raise MissingDependency("boto3", "aws", f"for the rule action that calls {service}") from exc
    region = os.getenv("AWS_REGION", "us-east-1")
    config = Config(connect_timeout=10, read_timeout=30, retries={"max_attempts": 3, "mode": "standard"})
    return boto3.client(service, region_name=region, config=config)


class SageMakerStopTraining:
    """Stops the one InProgress SageMaker training job whose name starts with the prefix, once.

    The job is looked up when the rule fires (not when it is built): with none or several
    matching jobs nothing is stopped and a line is logged.
    """

    def __init__(self, rule_name: str, training_job_prefix: str):
        self.rule_name = rule_name
        self.prefix = training_job_prefix
        self.client = aws_client("sagemaker")
        self.stopped: str | None = None  # the job stopped, once fired
        logger.info("smdebug: rule %s will stop the SageMaker training job starting with %r", rule_name, self.prefix)

    def matching_jobs(self) -> list[str]:
        """Names of InProgress jobs starting with the prefix (the newest first)."""
        found: list[str] = []
        kwargs = {
            "NameContains": self.prefix,
            "SortBy": "CreationTime",
            "SortOrder": "Descending",
            "StatusEquals": "InProgress",
        }
        for _ in range(MAX_PAGES):
            res = self.client.list_training_jobs(**kwargs)
            for job in res.get("TrainingJobSummaries", []):
                name = job.get("TrainingJobName")
                if name and name.startswith(self.prefix) and name not in found:
                    found.append(name)
            token = res.get("NextToken")
            if not token:
                break
            kwargs["NextToken"] = token
        return found

    def invoke(self, firing) -> None:
        if self.stopped is not None:
            return
        try:
            jobs = self.matching_jobs()
        except Exception as exc:
            logger.error("smdebug: rule %s: could not list SageMaker training jobs: %s", self.rule_name, exc)
            return
        if len(jobs) != 1:
            logger.warning(
                "smdebug: rule %s fired at step %s but StopTraining found %d InProgress training jobs starting "
                "with %r (%s); it stops only when exactly one matches, so nothing was stopped",
                self.rule_name,
                firing.step,
                len(jobs),
                self.prefix,
                ", ".join(jobs) or "none",
            )
            return
        try:
            self.client.stop_training_job(TrainingJobName=jobs[0])
        except Exception as exc:
            logger.error("smdebug: rule %s could not stop training job %s: %s", self.rule_name, jobs[0], exc)
            return
        self.stopped = jobs[0]
        logger.warning(
            "smdebug: rule %s fired at step %s: stopped SageMaker training job %s", self.rule_name, firing.step, jobs[0]
        )


class SnsMessage:
    """E-mail or SMS through the SNS topic SMDebugRules, with 1.0.34's subscription filter policy.

    The topic is created (or found) and the endpoint subscribed when the rule is built, so that an
    e-mail subscription can be confirmed before the rule fires.
    """

    def __init__(self, rule_name: str, protocol: str, endpoint: str):
        self.rule_name = rule_name
        self.protocol = protocol  # "email" or "sms"
        self.endpoint = endpoint
        self.attribute = "phone_num" if protocol == "sms" else "email"
        self.client = aws_client("sns")
        self.topic_arn: str | None = None
        self.subscription = None
        self.last_response = None
        try:
            self.topic_arn = self.client.create_topic(Name=TOPIC_NAME)["TopicArn"]
            if not self._subscribed():
                self.subscription = self.client.subscribe(
                    TopicArn=self.topic_arn,
                    Protocol=protocol,
                    Endpoint=endpoint,
                    Attributes={"FilterPolicy": json.dumps({self.attribute: [endpoint]})},
                    ReturnSubscriptionArn=False,
                )
        except Exception as exc:
            logger.error(
                "smdebug: rule %s: could not set up SNS topic %s for %s %s: %s",
                rule_name,
                TOPIC_NAME,
                protocol,
                endpoint,
                exc,
            )

    def _subscribed(self) -> bool:
        """Whether the endpoint is subscribed already; when listing is not allowed, say no
        (subscribing the same endpoint again is harmless: SNS answers with the same subscription)."""
        try:
            return self._find_subscription()
        except Exception as exc:
            logger.debug("smdebug: could not list the subscriptions of %s: %s", self.topic_arn, exc)
            return False

    def _find_subscription(self) -> bool:
        kwargs: dict = {"TopicArn": self.topic_arn}
        for _ in range(MAX_PAGES):
            res = self.client.list_subscriptions_by_topic(**kwargs)
            for sub in res.get("Subscriptions", []):
                if sub.get("Protocol") == self.protocol and sub.get("Endpoint") == self.endpoint:
                    return True
            token = res.get("NextToken")
            if not token:
                return False
            kwargs["NextToken"] = token
        return False

    def invoke(self, firing) -> None:
        if self.topic_arn is None:
            logger.error(
                "smdebug: rule %s fired at step %s; no SNS topic, so no %s was sent",
                self.rule_name,
                firing.step,
                self.protocol,
            )
            return
        subject = f"SMDebugRule:{self.rule_name} fired"
        try:
            self.last_response = self.client.publish(
                TopicArn=self.topic_arn,
                Message=f"{subject}. {firing.message}",
                Subject=subject,
                MessageAttributes={self.attribute: {"DataType": "String", "StringValue": self.endpoint}},
            )
        except Exception as exc:
            logger.error("smdebug: rule %s could not publish to SNS topic %s: %s", self.rule_name, self.topic_arn, exc)
