"""``create_trial`` and the Trial classes."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Literal, overload

from smdebug.core.output.consolidate import consolidate
from smdebug.exceptions import SMDebugTypeError, SMDebugValueError
from smdebug.storage import is_remote, open_store
from smdebug.trials.reader import StepValue, ValueKey
from smdebug.trials.tensor import Tensor
from smdebug.trials.trial import Trial

if TYPE_CHECKING:
    from smdebug.profiler.trial import ProfilerTrial

__all__ = ["create_trial", "consolidate", "Trial", "LocalTrial", "S3Trial", "Tensor", "ValueKey", "StepValue"]


class LocalTrial(Trial):
    """A trial in a local folder."""

    def __init__(self, name: str, dirname: str, **kwargs: Any) -> None:
        super().__init__(name, open_store(os.path.expanduser(dirname)), **kwargs)


class S3Trial(Trial):
    """A trial under ``s3://bucket/prefix``."""

    def __init__(self, name: str, bucket_name: str, prefix_name: str, **kwargs: Any) -> None:
        super().__init__(name, open_store(f"s3://{bucket_name}/{prefix_name.strip('/')}"), **kwargs)


DEFAULT_PROFILER_OUTPUT_DIR = "/opt/ml/processing/outputs/"


@overload
def create_trial(
    path: str | os.PathLike[str] | None = None,
    name: str | None = None,
    profiler: Literal[False] = False,
    output_dir: str = DEFAULT_PROFILER_OUTPUT_DIR,
    *,
    range_steps: tuple[int | None, int | None] | None = None,
    out_dir: str | os.PathLike[str] | None = None,
    **kwargs: Any,
) -> Trial: ...


@overload
def create_trial(
    path: str | os.PathLike[str] | None,
    name: str | None,
    profiler: Literal[True],
    output_dir: str = DEFAULT_PROFILER_OUTPUT_DIR,
    *,
    range_steps: tuple[int | None, int | None] | None = None,
    out_dir: str | os.PathLike[str] | None = None,
    **kwargs: Any,
) -> ProfilerTrial: ...


@overload
def create_trial(
    path: str | os.PathLike[str] | None = None,
    name: str | None = None,
    *,
    profiler: Literal[True],
    output_dir: str = DEFAULT_PROFILER_OUTPUT_DIR,
    range_steps: tuple[int | None, int | None] | None = None,
    out_dir: str | os.PathLike[str] | None = None,
    **kwargs: Any,
) -> ProfilerTrial: ...


@overload
def create_trial(
    path: str | os.PathLike[str] | None = None,
    name: str | None = None,
    profiler: bool = False,
    output_dir: str = DEFAULT_PROFILER_OUTPUT_DIR,
    *,
    range_steps: tuple[int | None, int | None] | None = None,
    out_dir: str | os.PathLike[str] | None = None,
    **kwargs: Any,
) -> Trial | ProfilerTrial: ...


def create_trial(
    path: str | os.PathLike[str] | None = None,
    name: str | None = None,
    profiler: bool = False,
    output_dir: str = DEFAULT_PROFILER_OUTPUT_DIR,
    *,
    range_steps: tuple[int | None, int | None] | None = None,
    out_dir: str | os.PathLike[str] | None = None,
    **kwargs: Any,
) -> Trial | ProfilerTrial:
    """Open the trial at a local path or ``s3://bucket/prefix``.

    ``name`` defaults to the last component of the path. ``profiler=True`` opens the job's
    profiler data instead (see :func:`create_profiler_trial`); ``output_dir`` is where a profiler
    trial writes its reports (unused by a tensor trial). ``range_steps=(begin, end)`` loads only
    global steps ``begin <= step < end`` (either bound may be None). ``out_dir`` is accepted as
    another name for ``path``. ``collection_wait_timeout`` (seconds, default 0 or
    ``$SMDEBUG_COLLECTION_WAIT_TIMEOUT``) waits for a job that has not written its collections yet;
    ``poll_interval`` (seconds, default ``$SMDEBUG_POLL_INTERVAL`` or 1) is how often it looks.
    """
    if path is None:
        path = out_dir
    elif out_dir is not None:
        raise SMDebugTypeError("create_trial takes path or out_dir, not both")
    if path is None:
        raise SMDebugTypeError("create_trial needs a path (a local folder or s3://bucket/prefix)")
    if not isinstance(profiler, bool):
        raise SMDebugTypeError(
            f"create_trial: profiler={profiler!r} must be True or False (the third "
            "argument; pass a step range as range_steps=(begin, end))"
        )
    path = os.fspath(path).strip() if hasattr(path, "__fspath__") else str(path).strip()
    if name is None:
        name = os.path.basename(path.rstrip("/"))
    if not is_remote(path):
        path = os.path.expanduser(path)
    if profiler:
        return create_profiler_trial(path, name, output_dir, range_steps=range_steps, **kwargs)
    return Trial(name, open_store(path), range_steps=range_steps, **kwargs)


def create_profiler_trial(
    path: str, name: str | None, output_dir: str = DEFAULT_PROFILER_OUTPUT_DIR, **kwargs: Any
) -> ProfilerTrial:
    """The trial of a job's profiler data (``create_trial(path, profiler=True)`` comes here):
    :class:`smdebug.profiler.trial.ProfilerTrial` over ``<path>/system`` and
    ``<path>/framework``; ``output_dir`` is where profiler rules write their reports."""
    range_steps = kwargs.pop("range_steps", None)
    if range_steps is not None:
        raise SMDebugTypeError("create_trial(profiler=True) reads a time range: range_steps applies to tensor trials")
    if kwargs:
        raise SMDebugTypeError(f"create_trial(profiler=True): unexpected arguments {sorted(kwargs)}")
    from smdebug.profiler.trial import ProfilerTrial

    trial = ProfilerTrial(name=name, trial_dir=path, output_dir=output_dir)
    if not trial.has_data():
        _refuse_a_tensor_trial(str(path))
    return trial


def _refuse_a_tensor_trial(path: str) -> None:
    """A folder without profiler data may be a live job's (it comes later), but one that holds a
    tensor trial is a wrong path: say so, and where its profile is when it has one."""
    from smdebug.storage import open_store

    try:
        folders: set[str] = set(open_store(path).list_folders(""))
    except Exception:  # noqa: BLE001 - not there (yet): a live job's folder is read as it comes
        return
    if "index" in folders or "events" in folders:
        hint = (
            f"; its profile is in {path.rstrip('/')}/profiler"
            if "profiler" in folders
            else "; the hook wrote no profile there (ProfilerConfig)"
        )
        raise SMDebugValueError(
            f"create_trial({path!r}, profiler=True): {path} is a tensor trial (create_trial(path) "
            f"reads it), not a profile{hint}"
        )
