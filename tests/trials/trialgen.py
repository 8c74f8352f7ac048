"""Writes synthetic trials for the Trial/Tensor tests, through the package's own writer.

Values are deterministic functions of (tensor name, global step, worker), so a test can
recompute exactly what was written with :func:`value`.

A trial lives at a :class:`Root`: a local folder or ``s3://bucket/prefix``. Every raw object
operation a test needs (write, read, delete, damage, the end marker) goes through
``smdebug.storage.open_store(root.url)``, so the same test body runs on both.
"""

from __future__ import annotations

import os
import zlib

import numpy as np

from smdebug.core.collection import Collection
from smdebug.core.collection_manager import CollectionManager
from smdebug.core.locations import END_OF_JOB, event_key, index_key
from smdebug.core.modes import ModeKeys
from smdebug.core.reductions import get_reduction_tensor_name
from smdebug.core.writer import FileWriter
from smdebug.storage import is_remote, open_store

__all__ = [
    "Root",
    "value",
    "write_collections",
    "write_step",
    "end_job",
    "index_file",
    "event_file",
    "workers",
]


class Root:
    """Where a trial lives: ``url`` is a local folder or ``s3://bucket/prefix``; keys are relative to it."""

    def __init__(self, url: str):
        self.url = str(url).rstrip("/")

    @property
    def is_s3(self) -> bool:
        return is_remote(self.url)

    def __truediv__(self, name: str) -> Root:
        return Root(f"{self.url}/{name.strip('/')}")

    def __str__(self) -> str:
        return self.url

    def __repr__(self) -> str:
        return f"Root({self.url!r})"

    @property
    def store(self):
        # opened per use: an S3 store reads its endpoint from the environment when opened
        return open_store(self.url)

    # ---------------------------------------------------------------- raw objects
    def describe(self, key: str) -> str:
        """How the package names the object in messages: the file's path, or its s3:// URL."""
        return self.store.describe(key)

    def write(self, key: str, data: bytes | str) -> None:
        self.store.write(key, data.encode() if isinstance(data, str) else bytes(data))

    def read(self, key: str) -> bytes:
        return self.store.read(key)

    def delete(self, key: str) -> None:
        self.store.delete(key)

    def exists(self, key: str) -> bool:
        return self.store.exists(key)

    def keys(self, prefix: str = "") -> list[str]:
        return self.store.list(prefix)

    def rewrite(self, key: str, edit) -> str:
        """Replace the object by ``edit(old bytes)``; returns its :meth:`describe` name."""
        self.write(key, edit(self.read(key)))
        return self.describe(key)

    def truncate(self, key: str, size: int) -> None:
        self.rewrite(key, lambda data: data[:size])

    def flip_byte(self, key: str, offset: int) -> None:
        self.rewrite(key, lambda data: data[:offset] + bytes([data[offset] ^ 0xFF]) + data[offset + 1 :])

    def mkdir(self) -> None:
        """An empty folder locally; nothing on S3, which has no folders (an unused prefix is empty)."""
        if not self.is_s3:
            os.makedirs(self.url, exist_ok=True)


def _url(path) -> str:
    return path.url if isinstance(path, Root) else str(path)


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
        cm.export(_url(path), f"{w}_collections.json")


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
    with FileWriter(trial_dir=_url(path), step=step, worker=worker) as fw:
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
    open_store(_url(path)).write(END_OF_JOB, b"")


def index_file(path, step: int, worker: str = "worker_0") -> str:
    """The index object's name as the package prints it (a path, or an s3:// URL)."""
    return open_store(_url(path)).describe(index_key(step, worker))


def event_file(path, step: int, worker: str = "worker_0") -> str:
    """The event object's name as the package prints it (a path, or an s3:// URL)."""
    return open_store(_url(path)).describe(event_key(step, worker))
