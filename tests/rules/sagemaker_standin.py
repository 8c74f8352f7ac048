"""A SageMaker stand-in on 127.0.0.1 for the StopTraining action: moto (5.2) creates training jobs
only as "Completed" and has no StopTrainingJob, so this small server answers the two calls the
action makes (ListTrainingJobs, one job per page to exercise paging, and StopTrainingJob) with the
service's JSON protocol, for a real boto3 client, and records what it was asked."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["SageMakerStandIn"]


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, *args):
        pass

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        target = self.headers.get("X-Amz-Target", "")
        standin = self.server.standin
        with standin.lock:
            standin.calls.append((target.split(".")[-1], body))
            if target.endswith("ListTrainingJobs"):
                out = standin.list_jobs(body)
            elif target.endswith("StopTrainingJob"):
                name = body["TrainingJobName"]
                standin.stopped.append(name)
                standin.jobs[name] = "Stopping"
                out = {}
            else:
                self._send(400, {"__type": "UnknownOperationException", "message": target})
                return
        self._send(200, out)

    def _send(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/x-amz-json-1.1")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    standin: SageMakerStandIn


class SageMakerStandIn:
    def __init__(self, jobs: dict[str, str]):
        self.jobs = dict(jobs)  # name -> status, in creation order (oldest first)
        self.calls: list = []
        self.stopped: list = []
        self.lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.standin = self
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def list_jobs(self, body: dict) -> dict:
        names = [
            n
            for n, st in reversed(self.jobs.items())
            if body.get("NameContains", "") in n and body.get("StatusEquals", st) == st
        ]
        start = int(body.get("NextToken") or 0)
        page = names[start : start + 1]
        out = {
            "TrainingJobSummaries": [
                {
                    "TrainingJobName": n,
                    "TrainingJobArn": f"arn:aws:sagemaker:us-east-1:1:training-job/{n}",
                    "CreationTime": 0,
                    "TrainingJobStatus": self.jobs[n],
                }
                for n in page
            ]
        }
        if start + 1 < len(names):
            out["NextToken"] = str(start + 1)
        return out

    def close(self):
        self._server.shutdown()
        self._server.server_close()
