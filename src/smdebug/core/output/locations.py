"""Every key name of the on-disk format, in one place (docs/format.md section 1)."""

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
    "CHIEF_WORKER",
    "worker_name",
    "is_chief_worker",
    "collections_file_name",
    "done_key",
    "tensorboard_key",
    "SMDEBUG_PREFIX",
    "STOP_REQUEST_KEY",
    "CONSOLIDATED_PREFIX",
    "consolidated_key",
    "consolidated_bucket_prefix",
    "parse_consolidated_key",
    "heads_key",
    "parse_heads_key",
    "HEADS_GROUP",
    "bucket_of",
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

_CONSOLIDATED_KEY = re.compile(r"^_smdebug/index/(\d{9})/(.+)\.([0-9a-f]{8})\.cidx$")
_HEADS_KEY = re.compile(r"^_smdebug/index/heads/(\d{6})/(.+)\.cidh$")
HEADS_GROUP = 100  # buckets whose heads one heads object of a worker gathers
_INDEX_KEY = re.compile(r"^index/(\d{9})/(\d+)_([^/]+)\.json$")
_COLLECTIONS_KEY = re.compile(r"^collections/[^/]+/([^/]+)_collections\.json$")


# the worker that writes when include_workers="one", and the end-of-job marker
CHIEF_WORKER = "worker_0"


def worker_name(rank: int) -> str:
    """The name of the worker of a process rank (PyTorch, XGBoost, Horovod): 'worker_<rank>'.
    A TensorFlow worker may be named by its device instead (see :func:`serialize_worker`)."""
    return f"worker_{int(rank)}"


_TF_CHIEF_DEVICE = re.compile(r"^/job:[^/]+/replica:0/task:0/device:[A-Za-z]+:0$")


def is_chief_worker(worker: str) -> bool:
    """``worker_0``, or the first device of the first task when workers are TensorFlow devices
    (``/job:localhost/replica:0/task:0/device:GPU:0``, MirroredStrategy: smdebug 1.0.34's chief
    is the sorted-first device)."""
    return worker == CHIEF_WORKER or bool(_TF_CHIEF_DEVICE.match(worker))


def serialize_worker(worker: str) -> str:
    """A worker name as it goes into a key: TensorFlow device names hold '/' and ':' which
    cannot go in a file name ('/job:worker/replica:0/task:0/device:GPU:0' ->
    '_job-worker_replica-0_task-0_device-GPU-0', as smdebug 1.0.34 writes it)."""
    return worker.replace("/", "_").replace(":", "-")


def deserialize_worker(name: str) -> str:
    if name.startswith("_"):
        return name.replace("_", "/").replace("-", ":")
    return name


def collections_file_name(worker: str) -> str:
    """The name of a worker's collections file inside COLLECTIONS_PREFIX."""
    return f"{serialize_worker(worker)}_collections.json"


def collections_key(worker: str) -> str:
    return COLLECTIONS_PREFIX + collections_file_name(worker)


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


def bucket_of(step: int) -> int:
    """The index bucket (folder number under index/) of a global step."""
    return step // INDEX_BUCKET


def consolidated_bucket_prefix(bucket: int) -> str:
    return f"{CONSOLIDATED_PREFIX}{bucket:09d}/"


def consolidated_key(bucket: int, worker: str, tag: int) -> str:
    """The consolidated index object of one worker's index bucket; ``tag`` identifies its head
    (a CRC32C), so that a copy of the head kept elsewhere can be checked against the listing."""
    return f"{consolidated_bucket_prefix(bucket)}{serialize_worker(worker)}.{tag:08x}.cidx"


def parse_consolidated_key(key: str) -> tuple[int, str, int] | None:
    """(bucket, worker, tag) of a consolidated index key, or None for anything else."""
    m = _CONSOLIDATED_KEY.match(key)
    if m is None:
        return None
    return int(m.group(1)), deserialize_worker(m.group(2)), int(m.group(3), 16)


def heads_key(group: int, worker: str) -> str:
    """The object gathering the heads of a worker's consolidated objects of buckets
    ``group * HEADS_GROUP`` to ``(group + 1) * HEADS_GROUP - 1``: opening reads it instead of them."""
    return f"{CONSOLIDATED_PREFIX}heads/{group:06d}/{serialize_worker(worker)}.cidh"


def parse_heads_key(key: str) -> tuple[int, str] | None:
    m = _HEADS_KEY.match(key)
    if m is None:
        return None
    return int(m.group(1)), deserialize_worker(m.group(2))
