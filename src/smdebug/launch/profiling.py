"""Profiling under ``smdebug run``: SageMaker's ``ProfilerConfig`` and ``ProfilerRuleConfigurations``.

The launcher writes the job's ``config/profilerconfig.json`` (the in-container file SageMaker writes:
``ProfilingIntervalInMilliseconds``, ``ProfilingParameters``, ``DisableProfiler``) and points the
hooks at it with $SMPROFILER_CONFIG_PATH; the hooks read it as they read SageMaker's
(:class:`smdebug.profiler.recording.config.ProfilerConfig`), so the profiler records system metrics and
framework metrics into ``ProfilingParameters.LocalPath`` (default ``<run dir>/profiler-output``).

Inputs: ``--profile`` (the defaults), ``--profile-interval-ms N``, ``--profiler-config FILE|JSON``
(a CreateTrainingJob ``ProfilerConfig`` or a profilerconfig.json) and a CreateTrainingJob request's
``ProfilerConfig``. Everything is checked before the job starts by the same parser the hooks use.
"""

from __future__ import annotations

import os
from typing import Any

from smdebug.launch.spec import MAX_MAP, LaunchConfigError, parse_json, read_json_file, string_map

__all__ = ["PROFILER_CONFIG_ENV", "profiler_document", "read_profiler_config"]

PROFILER_CONFIG_ENV = "SMPROFILER_CONFIG_PATH"
_KEYS = {"S3OutputPath", "ProfilingIntervalInMilliseconds", "ProfilingParameters", "DisableProfiler"}


def read_profiler_config(value: object, where: str) -> dict[str, Any]:
    """A ProfilerConfig from a dict, JSON text (starting with ``{``) or a JSON file's path."""
    if isinstance(value, dict):
        return value
    if not isinstance(value, str) or not value.strip():
        raise LaunchConfigError(f"{where}: give a JSON file or a JSON object, not {value!r}")
    text: str | bytes = value
    source = where
    if not value.lstrip().startswith("{"):
        text = read_json_file(value, where)
        source = f"{where} ({value})"
    doc = parse_json(text, source)
    if not isinstance(doc, dict):
        raise LaunchConfigError(f"{source} must hold a JSON object (a ProfilerConfig)")
    return doc


def profiler_document(
    doc: dict[str, Any] | None, where: str, *, default_local_path: str, interval_ms: int | None = None
) -> dict[str, Any]:
    """The job's profilerconfig.json from a ProfilerConfig (None: ``--profile``'s defaults), checked by
    the hooks' own parser; ``interval_ms`` (``--profile-interval-ms``) overrides the document's."""
    doc = {} if doc is None else doc
    unknown = set(doc) - _KEYS
    if unknown:
        raise LaunchConfigError(
            f"{where}: unknown member {sorted(unknown)[0]!r} of a ProfilerConfig (allowed: {', '.join(sorted(_KEYS))})"
        )
    params = string_map(doc.get("ProfilingParameters"), f"ProfilingParameters of {where}", MAX_MAP)
    params.setdefault("LocalPath", default_local_path)
    out: dict[str, Any] = {
        "ProfilingIntervalInMilliseconds": doc.get("ProfilingIntervalInMilliseconds", 500),
        "ProfilingParameters": params,
    }
    if interval_ms is not None:
        out["ProfilingIntervalInMilliseconds"] = interval_ms
    if doc.get("DisableProfiler") is not None:
        out["DisableProfiler"] = doc["DisableProfiler"]
    from smdebug.exceptions import SMDebugValueError
    from smdebug.profiler.recording.config import ProfilerConfig

    try:
        ProfilerConfig.from_dict(out, source=where)
    except SMDebugValueError as exc:
        raise LaunchConfigError(f"{where}: {exc}") from None
    if not os.path.isabs(params["LocalPath"]) and "://" not in params["LocalPath"]:
        params["LocalPath"] = os.path.abspath(params["LocalPath"])  # the job may change its working folder
    return out
