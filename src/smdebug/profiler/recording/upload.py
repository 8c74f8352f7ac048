"""RemoteUpload: a profiler writing to ``s3://`` (or another remote URL) writes its files in a
local staging folder, as it would write a local root, and each file is uploaded through the
project's storage layer (smdebug.storage: the same Store and S3 client as the debug hook's
writer) under the same key as its path below that folder, once the file is finished:

* a timeline file when it is rotated or closed (``framework/pevents/...``);
* a system-metrics minute file when its minute is over and at close (``system/incremental/...``);
* Python stats and detailed-profiling traces when their interval ends;
* at close, anything else finished under the staging folder (data-loader workers' timelines,
  written by the worker processes), then the end markers ``{system,framework}/training_job_end.ts``,
  so a reader that sees an end marker sees all the data.

Uploads run on one daemon thread; training only queues a path. An uploaded file is deleted from
the staging folder. A file that cannot be uploaded is kept there, named in an error message, and
tried again at close; what still fails then stays on disk (nothing is lost silently) and the
message says where.
"""

from __future__ import annotations

import logging
import os
import queue
import shutil
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from smdebug.storage.base import Store

__all__ = ["RemoteUpload"]

logger = logging.getLogger("smdebug")


class RemoteUpload:
    """``store``: a smdebug.storage Store (the remote root); ``staging``: the local folder whose
    files are uploaded under their relative paths."""

    def __init__(self, store: Store, staging: str):
        self.store = store
        self.staging = os.path.abspath(staging)
        self.uploaded: list[str] = []  # keys, in upload order
        self.failed: dict[str, str] = {}  # local path -> the last error
        self._q: queue.Queue[str | None] = queue.Queue()  # paths to upload; None: stop
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closed = False

    def key_of(self, path: str) -> str:
        rel = os.path.relpath(os.path.abspath(path), self.staging)
        if rel.startswith(".."):
            raise ValueError(f"{path} is not under the profiler's staging folder {self.staging}")
        return rel.replace(os.sep, "/")

    def submit(self, path: str) -> None:
        """Upload ``path`` (a finished file under the staging folder) in the background."""
        with self._lock:
            if self._closed:
                self._upload(path)
                return
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="smdebug-profiler-upload", daemon=True)
                self._thread.start()
            self._q.put(path)

    def wait(self) -> None:
        """Block until every path submitted so far has been uploaded (or has failed)."""
        self._q.join()

    def _run(self) -> None:
        while True:
            path = self._q.get()
            try:
                if path is None:
                    return
                self._upload(path)
            finally:
                self._q.task_done()

    def _upload(self, path: str) -> bool:
        try:
            key = self.key_of(path)
            with open(path, "rb") as f:
                data = f.read()
            self.store.write(key, data)
        except Exception as exc:  # noqa: BLE001 - the file stays on disk; the message names it
            first = path not in self.failed
            self.failed[path] = f"{type(exc).__name__}: {exc}"
            if first:
                logger.error(
                    "smdebug: profiler: could not upload %s to %s (%s); the file is kept and tried again at close",
                    path,
                    self.store.url,
                    exc,
                )
            return False
        self.failed.pop(path, None)
        self.uploaded.append(key)
        try:
            os.remove(path)
        except OSError:
            logger.debug("smdebug: profiler: could not remove the uploaded %s", path, exc_info=True)
        return True

    def close(self, end_markers: list[str]) -> None:
        """Finish the queued uploads, upload every other finished file left in the staging folder,
        then write ``end_markers`` (empty objects). Files being written (``*.tmp``: a data-loader
        worker still running) and files that fail are kept and named in an error."""
        with self._lock:
            self._closed = True
            thread, self._thread = self._thread, None
        if thread is not None:
            self._q.put(None)
            thread.join()
        unfinished = []
        for folder, _, files in os.walk(self.staging):
            for name in sorted(files):
                path = os.path.join(folder, name)
                if name.endswith(".tmp"):
                    unfinished.append(path)
                else:
                    self._upload(path)
        if unfinished:
            logger.error(
                "smdebug: profiler: %d files were still being written at close and are not uploaded to %s: %s",
                len(unfinished),
                self.store.url,
                ", ".join(unfinished),
            )
        if self.failed:
            logger.error(
                "smdebug: profiler: %d files could not be uploaded to %s; they are kept in %s: %s",
                len(self.failed),
                self.store.url,
                self.staging,
                "; ".join(f"{p} ({e})" for p, e in self.failed.items()),
            )
        for key in end_markers:
            self.store.write(key, b"")
        if not unfinished and not self.failed:
            shutil.rmtree(self.staging, ignore_errors=True)
