"""1.0.34's readers of the Python profiler's stats folders (local, and S3 downloaded to a local folder).

Layout: ``<root>/framework/<framework>/<cprofile|pyinstrument>/<node_id>/<start>_<end>/<file>``
where ``<file>`` is ``python_stats`` (cProfile) or ``python_stats.json`` and ``python_stats.html``
(pyinstrument: one entry each, as 1.0.34 lists them). Written by 1.0.34's profiler and by ours
(:mod:`smdebug.profiler.recording.python_profiler`).

:class:`LocalPythonStatsReader` takes ``<root>/framework/<framework>/<profiler>`` (the framework is
that folder's parent's name). :class:`S3PythonStatsReader` takes a local folder and the job's
profiler root URL (``s3://bucket/.../profiler-output``): it empties ``<folder>/python_stats`` and
downloads every stats file under ``<url>/framework/`` into ``python_stats/<node_id>/<start>_<end>/``.
Any other file is left out with a debug log line, as in 1.0.34 (its info line). A missing folder is a
ValueError naming it (1.0.34: an ``AssertionError``).
"""

from __future__ import annotations

import logging
import os
import shutil

from smdebug.profiler.analysis.utils.python_profile_analysis_utils import StepPythonProfileStats
from smdebug.profiler.python_profile_utils import STATS_FILES

__all__ = ["PythonStatsReader", "LocalPythonStatsReader", "S3PythonStatsReader", "STATS_FILES"]

logger = logging.getLogger("smdebug")


def _sorted(stats: list[StepPythonProfileStats]) -> list[StepPythonProfileStats]:
    """By start time, then node (stable: the two files of a pyinstrument interval keep their order)."""
    return sorted(stats, key=lambda s: (s.start_time_since_epoch_in_micros, s.node_id))


class PythonStatsReader:
    """A folder of Python-profile stats: :meth:`load_python_profile_stats` lists them."""

    def __init__(self, profile_dir: str | os.PathLike[str]) -> None:
        self.profile_dir = str(profile_dir)

    def load_python_profile_stats(self) -> list[StepPythonProfileStats]:
        raise NotImplementedError


class LocalPythonStatsReader(PythonStatsReader):
    """The stats under ``<root>/framework/<framework>/<profiler>`` on this machine."""

    def __init__(self, profile_dir: str | os.PathLike[str]) -> None:
        if not os.path.isdir(profile_dir):
            raise ValueError(
                f"local_profile_dir: {profile_dir} is no folder (give "
                "<profiler root>/framework/<framework>/<cprofile|pyinstrument>)"
            )
        super().__init__(profile_dir)

    def load_python_profile_stats(self) -> list[StepPythonProfileStats]:
        framework = os.path.basename(os.path.dirname(os.path.abspath(self.profile_dir)))
        out = []
        for node_id in sorted(os.listdir(self.profile_dir)):
            node_dir = os.path.join(self.profile_dir, node_id)
            if not os.path.isdir(node_dir):
                continue
            for stats_dir in sorted(os.listdir(node_dir)):
                folder = os.path.join(node_dir, stats_dir)
                if not os.path.isdir(folder):
                    continue
                for name in sorted(os.listdir(folder)):
                    profiler = STATS_FILES.get(name)
                    if profiler is None:
                        logger.debug(
                            "smdebug: not a Python-profile stats file, left out: %s", os.path.join(folder, name)
                        )
                        continue
                    out.append(
                        StepPythonProfileStats(framework, profiler, node_id, stats_dir, os.path.join(folder, name))
                    )
        return _sorted(out)


class S3PythonStatsReader(PythonStatsReader):
    """The stats under ``<s3_path>/framework/``, downloaded into ``<profile_dir>/python_stats``
    (emptied first) at every load."""

    def __init__(self, profile_dir: str | os.PathLike[str], s3_path: str) -> None:
        from smdebug.storage import is_remote

        if not os.path.isdir(profile_dir):
            raise ValueError(
                f"local_profile_dir: {profile_dir} is no folder (the stats are downloaded into "
                "<local_profile_dir>/python_stats)"
            )
        if not is_remote(str(s3_path)):
            raise ValueError(f"s3_path: {s3_path!r} is no s3://bucket/... URL of a profiler root")
        super().__init__(os.path.join(profile_dir, "python_stats"))
        self.s3_path = str(s3_path).rstrip("/")

    def load_python_profile_stats(self) -> list[StepPythonProfileStats]:
        from smdebug.storage import open_store

        shutil.rmtree(self.profile_dir, ignore_errors=True)
        os.makedirs(self.profile_dir)
        store = open_store(self.s3_path)
        keys = []
        for key in store.list("framework/"):
            parts = key.split("/")
            if parts[-1] not in STATS_FILES or len(parts) < 6:  # framework/<fw>/<profiler>/<node>/<dir>/<file>
                if parts[-1] in STATS_FILES:
                    logger.debug("smdebug: a stats file outside <framework>/<profiler>/<node>/<start>_<end>/: %s", key)
                continue
            keys.append(key)
        out = []
        for key, data in zip(keys, store.read_many(keys)):
            if isinstance(data, Exception):
                raise data
            framework, profiler, node_id, stats_dir, name = key.split("/")[-5:]
            folder = os.path.join(self.profile_dir, node_id, stats_dir)
            os.makedirs(folder, exist_ok=True)
            path = os.path.join(folder, name)
            with open(path, "wb") as f:
                f.write(data)
            out.append(StepPythonProfileStats(framework, profiler, node_id, stats_dir, path))
        return _sorted(out)
