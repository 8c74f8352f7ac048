"""DataLoader worker timings: every batch a worker process builds is a ``DataLoaderWorker`` event
(name ``worker``, ``args``: ``worker_id``, ``pid``, as 1.0.34's Dataloader rule reads them) on the
worker's own timeline (node ``<worker pid>-<host>``, beside the training process's).

While a profiler is on, the dataset fetchers' ``fetch`` is wrapped; worker processes started by
``fork`` (Linux's default) inherit the wrapper and write through their own TimelineWriter, which
is closed when the worker exits (multiprocessing's finalizers). Workers started by ``spawn`` or
``forkserver`` do not inherit it: then there are no worker events (the main process still
records each fetch as ``DataLoaderIter``).
"""

from __future__ import annotations

import logging
import multiprocessing.util
import os
import threading
from collections.abc import Callable
from typing import Any, TypedDict

import torch
from torch.utils.data._utils import fetch as _fetch

from smdebug.profiler.locations import framework_node_id
from smdebug.profiler.recording.timeline import TimelineWriter, now_us

__all__ = ["enable", "disable"]

logger = logging.getLogger("smdebug")


class _Settings(TypedDict):
    root: str
    max_bytes: int
    close_interval_s: float
    open_fail_threshold: int


_settings: _Settings | None = None  # where and how workers write, while a profiler is on
_writer: TimelineWriter | None = None
_writer_pid: int | None = None
_lock = threading.Lock()
_originals: dict[Any, Callable[..., Any]] = {}  # torch's fetcher class -> its own fetch
_FETCHERS = (_fetch._MapDatasetFetcher, _fetch._IterableDatasetFetcher)


def enable(root: str, max_bytes: int, close_interval_s: float, open_fail_threshold: int) -> None:
    global _settings
    with _lock:
        _settings = {
            "root": root,
            "max_bytes": max_bytes,
            "close_interval_s": close_interval_s,
            "open_fail_threshold": open_fail_threshold,
        }
        if not _originals:
            for cls in _FETCHERS:
                _originals[cls] = cls.fetch
                cls.fetch = _wrap(cls.fetch)


def disable() -> None:
    global _settings
    with _lock:
        _settings = None
        for cls, orig in _originals.items():
            cls.fetch = orig
        _originals.clear()


def _worker_writer() -> TimelineWriter:
    global _writer, _writer_pid
    pid = os.getpid()
    if _writer_pid != pid:  # first batch of this worker process
        s = _settings
        assert s is not None, "enable() runs before a worker's first batch"
        writer = TimelineWriter(
            s["root"], framework_node_id(None), s["max_bytes"], s["close_interval_s"], s["open_fail_threshold"]
        )
        _writer, _writer_pid = writer, pid
        multiprocessing.util.Finalize(writer, writer.close, exitpriority=10)
        return writer
    assert _writer is not None, "set with _writer_pid"
    return _writer


def _wrap(orig: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """``orig``, a dataset fetcher's ``fetch(self, possibly_batched_index)`` (torch's objects:
    Any), timed in worker processes."""

    def fetch(self: Any, possibly_batched_index: Any) -> Any:
        global _settings
        if _settings is None:
            return orig(self, possibly_batched_index)
        info = torch.utils.data.get_worker_info()
        if info is None:  # the training process itself (num_workers=0)
            return orig(self, possibly_batched_index)
        start = now_us()
        data = orig(self, possibly_batched_index)
        try:
            _worker_writer().complete(
                "DataLoaderWorker", "worker", start, now_us(), {"worker_id": info.id, "pid": os.getpid()}
            )
        except Exception:  # never break the data loading: this worker stops recording
            _settings = None
            logger.exception("smdebug: profiler: data-loader worker %s stops recording", info.id)
        return data

    return fetch
