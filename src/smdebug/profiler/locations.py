"""Where the profiler's files go (1.0.34's layout) and how nodes are named.

::

    <root>/system/incremental/<YYYYMMDDHH>/<minute_s>.algo-<n>.json        system metrics, one file a minute
    <root>/framework/pevents/<YYYYMMDDHH>/<last_end_us>_<node>_pythontimeline.json   framework events
    <root>/framework/<node>_pythontimeline.json.tmp                         the timeline being written
    <root>/framework/<framework>/<cprofile|pyinstrument>/<node>/<start>_<end>/python_stats[.json|.html]
    <root>/{system,framework}/training_job_end.ts                           written when profiling ends

Node ids: system files name the node ``algo-<n>`` (1-based, SageMaker's host name; 1.0.34's reader
accepts no other form); framework files name the process ``<rank>-<host>``, rank = the distributed
rank or else the process id, with every ``_`` replaced by ``-`` (readers split file names on ``_``).
"""

from __future__ import annotations

import json
import os
import socket
import time
from typing import Any

__all__ = [
    "RESOURCE_CONFIG",
    "system_node_id",
    "framework_node_id",
    "system_file",
    "timeline_file",
    "timeline_tmp_file",
    "python_stats_dir",
    "END_MARKER",
    "TIMELINE_SUFFIX",
]

RESOURCE_CONFIG = "/opt/ml/input/config/resourceconfig.json"
END_MARKER = "training_job_end.ts"
TIMELINE_SUFFIX = "pythontimeline.json"


def _resource_config(path: str = RESOURCE_CONFIG) -> dict[str, Any] | None:  # the JSON object
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def system_node_id(resource_config: str = RESOURCE_CONFIG) -> str:
    """``algo-<n>``: SageMaker's current host, else ``algo-1`` (one node)."""
    doc = _resource_config(resource_config)
    if doc:
        host = doc.get("current_host")
        hosts = doc.get("hosts") or []
        if isinstance(host, str) and host.startswith("algo-"):
            return host
        if host in hosts:
            return f"algo-{hosts.index(host) + 1}"
    return "algo-1"


def framework_node_id(rank: int | None = None, resource_config: str = RESOURCE_CONFIG) -> str:
    """``<rank>-<host>`` as 1.0.34 names a process; rank None -> the process id."""
    doc = _resource_config(resource_config)
    host = doc.get("current_host") if doc else None
    who = rank if rank is not None else os.getpid()
    node = f"{who}-{host}" if host else f"{who}_{socket.gethostname()}"
    return node.replace("_", "-")


def _hour(seconds: float) -> str:
    return time.strftime("%Y%m%d%H", time.gmtime(seconds))


def system_file(root: str, sample_time_s: float, node_id: str) -> str:
    minute = int(sample_time_s) // 60 * 60
    return os.path.join(root, "system", "incremental", _hour(minute), f"{minute:010d}.{node_id}.json")


def timeline_file(root: str, last_end_us: int, node_id: str, suffix: str = TIMELINE_SUFFIX) -> str:
    return os.path.join(root, "framework", "pevents", _hour(last_end_us / 1e6), f"{last_end_us}_{node_id}_{suffix}")


def timeline_tmp_file(root: str, node_id: str, suffix: str = TIMELINE_SUFFIX) -> str:
    return os.path.join(root, "framework", f"{node_id}_{suffix}.tmp")


def python_stats_dir(root: str, framework: str, profiler: str, node_id: str, start: str, end: str) -> str:
    """``start``/``end``: ``<mode>-<step>-<phase>-<time_us>`` as 1.0.34 writes them."""
    return os.path.join(root, "framework", framework, profiler, node_id, f"{start}_{end}")
