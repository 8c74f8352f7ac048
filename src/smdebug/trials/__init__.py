"""``create_trial`` and the Trial classes."""

from __future__ import annotations

import os

from smdebug.core.consolidate import consolidate
from smdebug.exceptions import SMDebugTypeError
from smdebug.storage import is_remote, open_store
from smdebug.trials.tensor import Tensor
from smdebug.trials.trial import Trial

__all__ = ["create_trial", "consolidate", "Trial", "LocalTrial", "S3Trial", "Tensor"]


class LocalTrial(Trial):
    """A trial in a local folder."""

    def __init__(self, name, dirname, **kwargs):
        super().__init__(name, open_store(os.path.expanduser(dirname)), **kwargs)


class S3Trial(Trial):
    """A trial under ``s3://bucket/prefix``."""

    def __init__(self, name, bucket_name, prefix_name, **kwargs):
        super().__init__(name, open_store(f"s3://{bucket_name}/{prefix_name.strip('/')}"), **kwargs)


def create_trial(path=None, name=None, range_steps=None, *, out_dir=None, **kwargs) -> Trial:
    """Open the trial at a local path or ``s3://bucket/prefix``.

    ``name`` defaults to the last component of the path. ``range_steps=(begin, end)`` loads only
    global steps ``begin <= step < end`` (either bound may be None). ``out_dir`` is accepted as
    another name for ``path``. ``collection_wait_timeout`` (seconds, default 0 or
    ``$SMDEBUG_COLLECTION_WAIT_TIMEOUT``) waits for a job that has not written its collections yet.
    """
    if path is None:
        path = out_dir
    elif out_dir is not None:
        raise SMDebugTypeError("create_trial takes path or out_dir, not both")
    if path is None:
        raise SMDebugTypeError("create_trial needs a path (a local folder or s3://bucket/prefix)")
    kwargs.pop("profiler", None)
    kwargs.pop("output_dir", None)
    path = os.fspath(path).strip() if hasattr(path, "__fspath__") else str(path).strip()
    if name is None:
        name = os.path.basename(path.rstrip("/"))
    if not is_remote(path):
        path = os.path.expanduser(path)
    return Trial(name, open_store(path), range_steps=range_steps, **kwargs)
