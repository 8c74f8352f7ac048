"""Every key name of the on-disk format, in one place (format.md section 1)."""

from __future__ import annotations

import re

__all__ = [
    "COLLECTIONS_PREFIX",
    "INDEX_PREFIX",
    "EVENTS_PREFIX",
    "END_OF_JOB",
    "collections_key",
    "event_key",
    "index_key",
    "index_bucket_key",
    "worker_from_collections_key",
    "serialize_worker",
    "deserialize_worker",
    "tensorboard_key",
    "SMDEBUG_PREFIX",
    "STOP_REQUEST_KEY",
    "CONSOLIDATED_PREFIX",
]

COLLECTIONS_PREFIX = "collections/000000000/"
INDEX_PREFIX = "index/"
EVENTS_PREFIX = "events/"
TENSORBOARD_PREFIX = "tensorboard/"
END_OF_JOB = "training_job_end.ts"
INDEX_BUCKET = 1000
# our own objects beside smdebug's layout, under a prefix that smdebug 1.0.34 never lists
SMDEBUG_PREFIX = "_smdebug/"
# a rule's request that training stop (JSON: rule, step, reason, time); hooks look for it
STOP_REQUEST_KEY = f"{SMDEBUG_PREFIX}stop_training.json"
# consolidated index objects, one per (index bucket, worker)
CONSOLIDATED_PREFIX = f"{SMDEBUG_PREFIX}index/"

_INDEX_KEY = re.compile(r"^index/(\d{9})/(\d+)_([^/]+)\.json$")
_COLLECTIONS_KEY = re.compile(r"^collections/[^/]+/([^/]+)_collections\.json$")


def serialize_worker(worker: str) -> str:
    """TensorFlow device names hold '/' and ':' which cannot go in a file name."""
    return worker.replace("/", "_").replace(":", "-")


def deserialize_worker(name: str) -> str:
    if name.startswith("_"):
        return name.replace("_", "/").replace("-", ":")
    return name


def collections_key(worker: str) -> str:
    return f"{COLLECTIONS_PREFIX}{serialize_worker(worker)}_collections.json"


# a worker's "I have written everything" file (readers, 1.0.34's too, ignore it)
DONE_SUFFIX = "_done.ts"


def done_key(worker: str) -> str:
    return f"{COLLECTIONS_PREFIX}{serialize_worker(worker)}{DONE_SUFFIX}"


def event_key(step: int, worker: str) -> str:
    return f"{EVENTS_PREFIX}{step:012d}/{step:012d}_{serialize_worker(worker)}.tfevents"


def index_bucket_key(step: int) -> str:
    return f"{INDEX_PREFIX}{step // INDEX_BUCKET:09d}/"


def index_key(step: int, worker: str) -> str:
    return f"{index_bucket_key(step)}{step:012d}_{serialize_worker(worker)}.json"


def parse_index_key(key: str) -> tuple[int, str] | None:
    """(global step, worker) of an index key, or None for anything else (.tmp files...)."""
    m = _INDEX_KEY.match(key)
    if m is None or len(m.group(2)) > 20:
        return None
    step = int(m.group(2))
    if step // INDEX_BUCKET != int(m.group(1)):
        return None  # not where the step's index lives: a stray copy, not a second index of it
    return step, deserialize_worker(m.group(3))


def worker_from_collections_key(key: str) -> str | None:
    m = _COLLECTIONS_KEY.match(key)
    return deserialize_worker(m.group(1)) if m else None


def tensorboard_key(mode_name: str, step: int, pid: int, host: str) -> str:
    return f"{TENSORBOARD_PREFIX}{mode_name}/{step:012d}_{pid}_{host}.tfevents"
