"""Whether a step of a Trial can be read: available, not yet, or never (``has_passed_step``), the
wait for steps of a live trial (``wait_for_steps``), and the error of an unreadable index file that
holds, or may hold, a step (``check_step_readable``). Functions of a :class:`~smdebug.trials.Trial`,
whose methods of the same names call them."""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Iterable
from typing import TYPE_CHECKING

from smdebug.core.modes import ModeKeys
from smdebug.core.output.locations import parse_index_key
from smdebug.core.tensor import StepState
from smdebug.exceptions import IndexReaderException, NoMoreData, StepUnavailable

if TYPE_CHECKING:
    from smdebug.trials.trial import Trial

__all__ = ["has_passed_step", "wait_for_steps", "check_step_readable"]


def has_passed_step(trial: Trial, step: int, mode: ModeKeys | None = ModeKeys.GLOBAL) -> StepState:
    """AVAILABLE (complete), NOT_YET_AVAILABLE (may still come) or UNAVAILABLE (never will)."""
    all_steps = trial.steps(mode=mode, show_incomplete_steps=True)
    i = bisect_left(all_steps, step)
    if i < len(all_steps):
        g = trial._global_step_currently(mode, all_steps[i])
        if all_steps[i] > step:
            return StepState.UNAVAILABLE if trial.last_complete_step >= g else StepState.NOT_YET_AVAILABLE
        return StepState.AVAILABLE if trial._is_complete(g) else StepState.NOT_YET_AVAILABLE
    return StepState.UNAVAILABLE if trial.loaded_all_steps else StepState.NOT_YET_AVAILABLE


def wait_for_steps(trial: Trial, required_steps: Iterable[int], mode: ModeKeys = ModeKeys.GLOBAL,
                   timeout: float | None = None) -> None:
    """Block until each step is available; StepUnavailable / NoMoreData when it never will be;
    TimeoutError after ``timeout`` seconds (default: no limit)."""
    from smdebug.core.utils import refresh

    deadline = None if timeout is None else time.monotonic() + timeout
    with refresh(trial):
        for step in required_steps:
            while True:
                state = trial.has_passed_step(step, mode)
                if state == StepState.AVAILABLE:
                    break
                if state == StepState.UNAVAILABLE:
                    if not trial.loaded_all_steps:
                        raise StepUnavailable(step, mode)
                    avail = trial._all_steps(mode)
                    last = avail[-1] if avail else -1
                    if step < last:
                        raise StepUnavailable(step, mode)
                    raise NoMoreData(step, mode, last)
                if deadline is not None and time.monotonic() >= deadline:
                    raise TimeoutError(f"step {step} of mode {mode.name} not available after {timeout} s")
                time.sleep(trial.poll_interval)


def check_step_readable(trial: Trial, step: int, worker: str | None = None,
                        mode: ModeKeys | None = ModeKeys.GLOBAL) -> None:
    """Raise the error of an unreadable index file of this step (and worker, if given). A step
    of another mode is matched by global step when known; when not, any unreadable index
    file of a global step the trial has not mapped may hold it, and the error says so."""
    mode = mode or ModeKeys.GLOBAL
    g = step if mode == ModeKeys.GLOBAL else trial._global_step_currently(mode, step)
    index = trial._index
    unknown = []
    for key, msg in trial.bad_index_files.items():
        s, w = parse_index_key(key)  # type: ignore[misc]  # a listed index key parses
        if worker is not None and w != worker:
            continue
        if s == g:
            raise IndexReaderException(msg)
        if g is None and s not in index.global_to_mode and _may_hold(trial, mode, step, s):
            unknown.append(msg)
    if unknown:
        raise IndexReaderException(
            f"step {step} of mode {mode.name} is in no readable index file, and {len(unknown)} index file(s) "
            f"of this trial cannot be read (it may be in one): {unknown[0]}")


def _may_hold(trial: Trial, mode: ModeKeys, mode_step: int, g: int) -> bool:
    """Whether global step ``g`` can be ``mode_step`` of ``mode``, given the steps of that mode known
    (mode steps grow with global steps)."""
    m2g = trial._index.mode_to_global.get(mode, {})
    below = [gg for ms, gg in m2g.items() if ms < mode_step]
    above = [gg for ms, gg in m2g.items() if ms > mode_step]
    return (not below or max(below) < g) and (not above or min(above) > g)
