"""Detailed profiling of the configured steps (DetailedProfilingConfig) through PyTorch's own
profiler (torch.profiler / Kineto: CPU operators, and CUDA kernels where a GPU is there).

The profile of steps ``s .. s+n-1`` is one Kineto trace (Chrome trace JSON with
``baseTimeNanoseconds``: an event's absolute time is ``baseTimeNanoseconds / 1000 + ts`` µs) at
``<root>/framework/pytorch/detailed_profiling/<YYYYMMDDHH>/<s:09d>/<node>_<start_us>_<end_us>.pt.trace.json``,
beside our timeline, which part 2 merges with it. Starting torch's profiler costs tens of
milliseconds or more: only the configured steps pay it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import torch

from smdebug.profiler.recording.config import ProfilingRange

__all__ = ["DetailedProfiling"]


def _now_us() -> int:
    return time.time_ns() // 1000


class DetailedProfiling:
    def __init__(
        self, root: str, node_id: str, config_range: ProfilingRange, on_file: Callable[[str], None] | None = None
    ):
        self.root = root
        self.on_file = on_file  # called with each trace written (the profiler uploads it)
        self.node_id = node_id
        self.range = config_range
        self._prof: Any = None  # the open torch.profiler.profile (torch is not analysed: Any)
        self._first_step = 0  # of the open profile
        self._start_us = 0
        self.files: list[str] = []

    def boundary(self, step: int | None) -> None:
        """Step ``step`` starts (None: the steps ended): start or stop the profile. The file name
        holds when the profile started and stopped: it may hold the next batch's fetch, which
        comes before the next step is known to start."""
        wanted = step is not None and self.range.has_step(step, time.time())
        if self._prof is not None and not wanted:
            self._stop(_now_us())
        if wanted and step is not None and self._prof is None:
            from torch.profiler import ProfilerActivity, profile

            acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
            self._prof = profile(activities=acts)
            self._prof.__enter__()
            self._first_step, self._start_us = step, _now_us()

    def _stop(self, end_us: int) -> None:
        prof, self._prof = self._prof, None
        prof.__exit__(None, None, None)
        hour = time.strftime("%Y%m%d%H", time.gmtime(self._start_us / 1e6))
        folder = os.path.join(self.root, "framework", "pytorch", "detailed_profiling", hour, f"{self._first_step:09d}")
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, f"{self.node_id}_{self._start_us}_{end_us}.pt.trace.json")
        prof.export_chrome_trace(path)
        self.files.append(path)
        if self.on_file is not None:
            self.on_file(path)

    def close(self) -> None:
        if self._prof is not None:
            self._stop(_now_us())
