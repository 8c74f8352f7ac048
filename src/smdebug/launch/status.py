"""``status.json`` (shaped like DescribeTrainingJob's debug members, rewritten atomically) and
``events.jsonl`` (one "Training Job State Change" event per change, as EventBridge sends them)."""

from __future__ import annotations

import json
import os
import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from smdebug.launch.spec import JobSpec

__all__ = ["StatusBoard", "iso_time"]


def iso_time(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"


class StatusBoard:
    """The run's state; every change rewrites status.json and appends one event."""

    def __init__(self, run_dir: str, spec: JobSpec, command: list[str], node_rank: int = 0) -> None:
        suffix = f"-node-{node_rank}" if node_rank else ""  # nodes may share one run folder
        self.path = os.path.join(run_dir, f"status{suffix}.json")
        self.events_path = os.path.join(run_dir, f"events{suffix}.jsonl")
        self.node_rank = node_rank
        self._lock = threading.RLock()  # also taken in the launcher's signal handler
        self.spec = spec
        self.command = list(command)
        self.created = time.time()
        self.job_status = "InProgress"
        self.secondary = "Starting"
        self.jobs: list = []
        self.profiler_jobs: list = []
        self.extra: dict = {}

    def describe(self) -> dict:
        doc = {
            "TrainingJobName": self.spec.name,
            "TrainingJobStatus": self.job_status,
            "SecondaryStatus": self.secondary,
            "CreationTime": iso_time(self.created),
            "LastModifiedTime": iso_time(time.time()),
            "Command": self.command,
            "DebugHookConfig": self.spec.request_dict()["DebugHookConfig"],
            "DebugRuleConfigurations": [r.to_request_dict() for r in self.spec.rules],
            "DebugRuleEvaluationStatuses": [j.describe() for j in self.jobs],
        }
        if self.spec.tensorboard:
            doc["TensorBoardOutputConfig"] = dict(self.spec.tensorboard)
        if self.spec.profiler:
            doc["ProfilerConfig"] = dict(self.spec.profiler)
            doc["ProfilerRuleConfigurations"] = [r.to_request_dict() for r in self.spec.profiler_rules]
            doc["ProfilerRuleEvaluationStatuses"] = [j.describe() for j in self.profiler_jobs]
            doc["ProfilingStatus"] = (
                "Disabled" if str(self.spec.profiler.get("DisableProfiler", "")).lower() in ("true", "1") else "Enabled"
            )
        doc.update(self.extra)
        return doc

    def update(self, *, job_status: str | None = None, secondary: str | None = None, **extra: Any) -> None:
        with self._lock:
            if job_status is not None:
                self.job_status = job_status
            if secondary is not None:
                self.secondary = secondary
            self.extra.update(extra)
            doc = self.describe()
            tmp = f"{self.path}.{os.getpid()}.tmp"
            with open(tmp, "w") as f:
                json.dump(doc, f, indent=2)
            os.replace(tmp, self.path)
            event = {
                "time": doc["LastModifiedTime"],
                "detail-type": "SageMaker Training Job State Change",
                "detail": {
                    k: doc[k]
                    for k in (
                        "TrainingJobName",
                        "TrainingJobStatus",
                        "SecondaryStatus",
                        "DebugRuleEvaluationStatuses",
                        "ProfilerRuleEvaluationStatuses",
                        "ProfilingStatus",
                    )
                    if k in doc
                },
            }
            with open(self.events_path, "a") as f:
                f.write(json.dumps(event) + "\n")
