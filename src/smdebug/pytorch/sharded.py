"""Sharded tensors (PyTorch FSDP2 ``fully_shard``, DTensor): what the PyTorch hook saves of them,
and how a reader puts a tensor saved shard by shard back together.

Two choices (the hook's ``gather_sharded`` argument):

- ``gather_sharded=False`` (the default): every rank saves its own shard (``DTensor.to_local()``)
  under the tensor's usual name, as its own worker (``include_workers="all"``). Each worker also
  writes ``shards/<worker>_shards.json`` in the trial: for each sharded tensor name, the whole
  tensor's shape, the shard's shape and its offset in the whole tensor, the placements, the mesh's
  shape and the rank's coordinate in it. :func:`read_full` reassembles a step's whole tensor from
  the workers' shards; on a 2-D mesh (HSDP, ``Replicate`` + ``Shard``) the replicas of a shard are
  checked to agree. Reductions (``reduction_config``) are then those of each shard.
- ``gather_sharded=True``: on the steps that save a sharded tensor (only those), every rank takes
  part in ``DTensor.full_tensor()`` (an all-gather) and rank 0 alone saves the whole tensor, as
  worker_0; the reductions are those of the whole tensor. Tensors that are not sharded (losses,
  layer outputs) are saved by the workers ``include_workers`` names, as with DDP.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import orjson
import torch

from smdebug.exceptions import SMDebugValueError, TensorUnavailable

__all__ = ["ShardInfo", "ShardedTensors", "is_dtensor", "is_fsdp_module", "plain_class_name", "read_full", "shards_key"]

logger = logging.getLogger("smdebug")
SHARDS_PREFIX = "shards/"


def shards_key(worker: str) -> str:
    return f"{SHARDS_PREFIX}{worker}_shards.json"


def _dtensor_type():
    try:
        from torch.distributed.tensor import DTensor
    except ImportError:  # a torch built without distributed support has no DTensor
        return None
    return DTensor


def is_dtensor(value) -> bool:
    cls = _dtensor_type()
    return cls is not None and isinstance(value, cls)


def _fsdp_module_type():
    try:
        from torch.distributed.fsdp import FSDPModule
    except ImportError:
        return None
    return FSDPModule


def is_fsdp_module(module) -> bool:
    cls = _fsdp_module_type()
    return cls is not None and isinstance(module, cls)


def plain_class_name(module) -> str:
    """The module's own class name: ``fully_shard`` makes ``FSDP<Class>`` classes, whose tensor
    names would otherwise differ from the unsharded model's."""
    cls = _fsdp_module_type()
    if cls is None or not isinstance(module, cls):
        return module._get_name()
    return next(c.__name__ for c in type(module).__mro__ if not issubclass(c, cls))


@dataclass(frozen=True)
class ShardInfo:
    """Where one rank's shard lies in the whole tensor."""

    global_shape: list
    local_shape: list
    offset: list
    placements: list
    mesh_shape: list
    mesh_coordinate: list  # this rank's place in the mesh, one index per mesh dimension

    def to_json(self) -> dict:
        return {
            "global_shape": self.global_shape,
            "local_shape": self.local_shape,
            "offset": self.offset,
            "placements": self.placements,
            "mesh_shape": self.mesh_shape,
            "mesh_coordinate": self.mesh_coordinate,
        }

    @classmethod
    def of(cls, t) -> ShardInfo:
        from torch.distributed.tensor._utils import compute_local_shape_and_global_offset

        local_shape, offset = compute_local_shape_and_global_offset(t.shape, t.device_mesh, t.placements)
        mesh = t.device_mesh
        return cls(
            list(t.shape),
            list(local_shape),
            list(offset),
            [str(p) for p in t.placements],
            list(mesh.shape),
            list(mesh.get_coordinate() or []),
        )


class ShardedTensors:
    """The hook's handling of DTensors: the local shard (its metadata recorded) or the gathered whole."""

    def __init__(self, gather: bool):
        self.gather = gather
        self._infos: dict = {}
        self._written = 0  # how many entries the shards file holds

    def value(self, name: str, t):
        """What to save of the DTensor ``t`` under ``name``: its local shard, or (gather mode) the
        whole tensor on rank 0 and None elsewhere. In gather mode every rank must call this for
        the same tensors in the same order (an all-gather)."""
        with torch.no_grad():
            if self.gather:
                whole = t.full_tensor()
                return whole if torch.distributed.get_rank() == 0 else None
            if name not in self._infos:
                self._infos[name] = ShardInfo.of(t)
            return t.to_local()

    def flush(self, store, worker: str) -> None:
        """Write the shards file when new tensors were recorded (the first steps only)."""
        if len(self._infos) == self._written:
            return
        doc = {"worker": worker, "tensors": {n: i.to_json() for n, i in sorted(self._infos.items())}}
        store.write(shards_key(worker), orjson.dumps(doc))
        self._written = len(self._infos)


def read_full(trial, tensor_name: str, step: int, mode=None) -> np.ndarray:
    """The whole tensor ``tensor_name`` at ``step`` (global step, or the step of ``mode``), put
    together from the shards the workers saved with ``gather_sharded=False``. On a 2-D device mesh
    (HSDP: ``Replicate()`` over one mesh dimension, ``Shard`` over the other) several workers hold
    the same shard: each region is read from every worker that saved it, and its replicas must agree.
    Raises TensorUnavailable when the trial has no shard metadata for it, SMDebugValueError when the
    saved shards do not cover the whole tensor exactly once (a worker's shard is missing, or shards
    overlap) or when replicas of a shard differ."""
    from smdebug.modes import ModeKeys

    mode = ModeKeys.GLOBAL if mode is None else mode
    store = trial.store
    regions: dict = {}  # (offset, local_shape) -> the workers that saved that shard
    shape = None
    for worker in trial.workers():
        key = shards_key(worker)
        if not store.exists(key):
            continue
        info = orjson.loads(store.read(key))["tensors"].get(tensor_name)
        if info is not None:
            shape = info["global_shape"]
            regions.setdefault((tuple(info["offset"]), tuple(info["local_shape"])), []).append(worker)
    if shape is None:
        raise TensorUnavailable(tensor_name)
    value = trial.tensor(tensor_name)
    out, count = None, np.zeros(shape, dtype=np.int64)
    for (offset, local_shape), workers in regions.items():
        part = _one_region(trial, value, tensor_name, step, mode, workers, list(local_shape))
        if out is None:
            out = np.zeros(shape, dtype=part.dtype)
        where = tuple(slice(o, o + n) for o, n in zip(offset, local_shape))
        out[where] = part
        count[where] += 1
    if out is None or not (count == 1).all():
        holders = sorted(w for ws in regions.values() for w in ws)
        raise SMDebugValueError(
            f"the shards of {tensor_name} at step {step} in {trial.path} cover "
            f"{int((count > 0).sum())} of its {count.size} elements, "
            f"{int((count > 1).sum())} of them twice or more (workers {holders}): "
            f"save every rank (include_workers='all')"
        )
    return out


def _one_region(trial, value, tensor_name: str, step: int, mode, workers: list, local_shape: list) -> np.ndarray:
    """The shard ``workers`` saved (one worker, or the replicas of an HSDP mesh), checked against its shape."""
    parts: list[np.ndarray] = []
    for worker in workers:
        part = value.value(step, mode=mode, worker=worker)
        if list(part.shape) != local_shape:
            raise SMDebugValueError(
                f"{tensor_name} at step {step} of {worker}: shape {list(part.shape)}, but "
                f"{shards_key(worker)} in {trial.path} says {local_shape}"
            )
        if parts and not np.allclose(part, parts[0], rtol=1e-5, atol=1e-7, equal_nan=True):
            raise SMDebugValueError(
                f"{tensor_name} at step {step} in {trial.path}: the replicas of one shard differ "
                f"({workers[0]} and {worker} saved the same region with different values)"
            )
        parts.append(part)
    return parts[0]
