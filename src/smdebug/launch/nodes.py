"""Multi-node jobs: one launcher per node, rules on one of them.

Each node runs ``smdebug run`` with its share of the job (``torchrun --nnodes=N --node_rank=K ...``)
and the same ``--out-dir``. The node of rank 0 runs the rule jobs and marks the end of training;
every other node runs none, writes its state to ``status-node-<K>.json`` / ``events-node-<K>.jsonl``
(so that nodes may share one run folder), and follows the trial's stop request itself: when a rule
on node 0 asks training to stop, each node's launcher escalates to SIGTERM / SIGKILL for its own
processes if they have not stopped at their next step.

The node's rank: ``--node-rank``, else $NODE_RANK (torchrun's and Slurm scripts' convention), else
SageMaker's $SM_CURRENT_HOST as an index in the sorted $SM_HOSTS list, else 0.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from smdebug.launch.spec import LaunchConfigError

if TYPE_CHECKING:
    from smdebug.core.engine.stop_request import StopRequest

__all__ = ["resolve_node_rank", "StopFollower"]

logger = logging.getLogger("smdebug")


def _rank(value: object, where: str) -> int:
    try:
        rank = int(str(value).strip())
    except ValueError:
        rank = -1
    if rank < 0:
        raise LaunchConfigError(f"{where}={value!r} must be a node rank: a whole number >= 0")
    return rank


def resolve_node_rank(value: object = None, environ: Mapping[str, str] | None = None) -> int:
    env = os.environ if environ is None else environ
    if value is not None:
        return _rank(value, "--node-rank")
    if env.get("NODE_RANK", "").strip():
        return _rank(env["NODE_RANK"], "$NODE_RANK")
    host = env.get("SM_CURRENT_HOST", "").strip()
    if host:
        try:
            hosts = json.loads(env.get("SM_HOSTS") or "[]")
        except json.JSONDecodeError:
            hosts = None
        if not isinstance(hosts, list) or host not in hosts:
            raise LaunchConfigError(
                f"$SM_CURRENT_HOST={host!r} is not in $SM_HOSTS={env.get('SM_HOSTS')!r}: give --node-rank"
            )
        return sorted(hosts).index(host)
    return 0


class StopFollower:
    """Looks for the trial's stop request every ``poll`` seconds until stopped; calls
    ``on_request(request)`` once when one appears."""

    def __init__(self, out_dir: str, on_request: Callable[[StopRequest], object], poll: float) -> None:
        self.out_dir, self.on_request, self.poll = out_dir, on_request, float(poll)
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="smdebug-stop-follower", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._done.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        from smdebug.core.engine.stop_request import read_stop_request
        from smdebug.storage import open_store

        store, warned = None, False
        while not self._done.is_set():
            try:
                store = store or open_store(self.out_dir)
                req = read_stop_request(store)
            except Exception as exc:  # a malformed request or a storage hiccup: said once, looked at again
                if not warned:
                    logger.error("smdebug: reading the stop request in %s failed: %s", self.out_dir, exc)
                warned, req = True, None
                if self._done.wait(max(self.poll, 1.0)):
                    return
            if req is not None:
                self.on_request(req)
                return
            self._done.wait(self.poll)
