"""Writes synthetic trials for the Trial/Tensor tests, through the package's own writer.

Values are deterministic functions of (tensor name, global step, worker), so a test can
recompute exactly what was written with :func:`value`.
"""

from __future__ import annotations

import os
import zlib

import numpy as np

from smdebug.core.collection import Collection
from smdebug.core.collection_manager import CollectionManager
from smdebug.core.locations import event_key, index_key
from smdebug.core.modes import ModeKeys
from smdebug.core.reductions import get_reduction_tensor_name
from smdebug.core.writer import FileWriter

__all__ = [
    "value",
    "write_collections",
    "write_step",
    "end_job",
    "index_file",
    "event_file",
    "workers",
]


def workers(n: int) -> list[str]:
    return [f"worker_{i}" for i in range(n)]


def value(name: str, step: int, worker: str, shape=(2, 3), dtype=np.float32) -> np.ndarray:
    """The array :func:`write_step` writes for (name, step, worker) when no explicit value is given."""
    seed = zlib.crc32(f"{name}|{step}|{worker}".encode())
    rng = np.random.default_rng(seed)
    return np.asarray((rng.standard_normal(shape) * 3).astype(dtype))  # 0-d stays an array


def write_collections(path, worker_names, num_workers=None, collections=None) -> None:
    """``collections/000000000/<worker>_collections.json`` for each worker.

    ``collections``: {name: {"include_regex": [...], "tensor_names": [...]}} besides "default".
    """
    cm = CollectionManager()
    cm.add("default")
    for cname, spec in (collections or {}).items():
        cm.add(Collection(cname, include_regex=spec.get("include_regex"), tensor_names=spec.get("tensor_names")))
    cm.set_num_workers(len(worker_names) if num_workers is None else num_workers)
    for w in worker_names:
        cm.export(str(path), f"{w}_collections.json")


def write_step(
    path,
    step: int,
    worker: str,
    tensors=None,
    mode: ModeKeys = ModeKeys.GLOBAL,
    mode_step: int | None = None,
    shapes=None,
    reductions=None,
) -> None:
    """One (global step, worker): event file + index.

    ``tensors``: {name: array} or a list of names (then :func:`value` supplies the arrays);
    ``reductions``: {(name, op, abs): float} written as 1-element float32 arrays under
    ``smdebug/reductions/[abs_]<op>/<name>``; ``shapes``: {name: shape} via ``write_shape``.
    """
    if isinstance(tensors, (list, tuple)):
        tensors = {n: value(n, step, worker) for n in tensors}
    with FileWriter(trial_dir=str(path), step=step, worker=worker) as fw:
        for name, arr in (tensors or {}).items():
            fw.write_tensor(tdata=arr, tname=name, mode=mode, mode_step=mode_step)
        for (name, op, is_abs), red in (reductions or {}).items():
            fw.write_tensor(
                tdata=np.array([red], dtype=np.float32),
                tname=get_reduction_tensor_name(name, op, is_abs),
                mode=mode,
                mode_step=mode_step,
            )
        for name, shape in (shapes or {}).items():
            fw.write_shape(name, shape, mode=mode, mode_step=mode_step)


def end_job(path) -> None:
    open(os.path.join(str(path), "training_job_end.ts"), "w").close()


def index_file(path, step: int, worker: str = "worker_0") -> str:
    return os.path.join(str(path), index_key(step, worker))


def event_file(path, step: int, worker: str = "worker_0") -> str:
    return os.path.join(str(path), event_key(step, worker))
