"""Tensor: one saved tensor's steps, values, reductions and shapes across modes and workers."""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from smdebug.core.modes import ModeKeys
from smdebug.core.tensor import StepState
from smdebug.core.tensors.reductions import get_numpy_reduction
from smdebug.exceptions import (
    InvalidWorker,
    NoMoreData,
    ShapeUnavailableForStep,
    SMDebugNotImplementedError,
    StepNotYetAvailable,
    StepUnavailable,
    TensorUnavailableForStep,
)
from smdebug.trials.reader import Pick

if TYPE_CHECKING:
    from smdebug.trials.index_state import IndexState
    from smdebug.trials.reader import RecordReader

__all__ = ["Tensor"]


def _owned(v: np.ndarray) -> np.ndarray:
    """``v``, or a copy of it when it is a read-only view into the bytes read."""
    return v if v.flags.writeable else v.copy()


class TrialView(Protocol):
    """What a Tensor asks of the trial it belongs to (a :class:`smdebug.trials.Trial`; named here so
    that this module does not import the trial's, which imports this one)."""

    loaded_all_steps: bool
    _index: IndexState
    _reader: RecordReader

    def maybe_refresh(self, name: str | None = None) -> None: ...

    def steps(self, mode: ModeKeys | None = ModeKeys.GLOBAL, show_incomplete_steps: bool = False) -> list[int]: ...

    def has_passed_step(self, step: int, mode: ModeKeys | None = ModeKeys.GLOBAL) -> StepState: ...

    def tensor(self, tname: str) -> Tensor: ...

    def _is_complete(self, g: int) -> bool: ...

    def _global_step_currently(self, mode: ModeKeys | None, mode_step: int) -> Any: ...

    def _check_step_readable(
        self, step: int, worker: str | None = None, mode: ModeKeys | None = ModeKeys.GLOBAL
    ) -> None: ...


class Tensor:
    """Obtained from ``trial.tensor(name)``; every query refreshes the trial first (unless off)."""

    def __init__(self, name: str, trial: TrialView, cache: bool = False) -> None:
        self.name = name
        self.trial = trial
        self.cache = cache
        self.original_name = None
        self._done: dict[int, int] = {}  # id(layout) -> files of that layout already scanned
        self._chunks_done: dict[int, int] = {}  # id(layout) -> its consolidated chunks already scanned
        self._layouts_seen = 0
        self._mine: list = []  # the layouts holding this tensor
        self._global: set[int] = set()
        self._by_mode: dict[ModeKeys, dict[int, int]] = {}  # mode -> mode step -> global step
        self._sorted: dict[ModeKeys, list] = {}
        self._values: dict[tuple, np.ndarray] = {}

    # ------------------------------------------------------------------ index
    def _sync(self) -> None:
        """Take in the index files read since the last call (per layout, not per file)."""
        idx = self.trial._index
        name = self.name
        for layout in idx.layouts[self._layouts_seen :]:
            if name in layout.tensors:
                self._mine.append(layout)
        self._layouts_seen = len(idx.layouts)
        changed = False
        for layout in self._mine:
            if len(layout.chunks) > self._chunks_done.get(id(layout), 0):
                self._take_chunks(layout)
                changed = True
            done = self._done.get(id(layout), 0)
            files = layout.files
            if done == len(files):
                continue
            steps, modes = layout.steps_and_modes()  # per layout, not per tensor and file
            self._global |= steps
            for mode, steps_of_mode in modes.items():
                mine = self._by_mode.get(mode)
                if mine is None:
                    self._by_mode[mode] = dict(steps_of_mode)
                elif len(mine) != len(steps_of_mode) or mine.keys() != steps_of_mode.keys():
                    for ms, g in steps_of_mode.items():
                        mine.setdefault(ms, g)
            if name in layout.shape_names:
                self.original_name = files[-1].shapes[name][1]
            self._done[id(layout)] = len(files)
            changed = True
        if changed:
            self._sorted.clear()

    def _take_chunks(self, layout: Any) -> None:
        """The steps of a layout's consolidated chunks, array by array."""
        done = self._chunks_done.get(id(layout), 0)
        for chunk, rows in layout.chunks[done:]:
            steps = chunk.steps[rows].tolist()
            self._global.update(steps)
            modes = chunk.head.modes[rows]
            for code in set(modes.tolist()):
                mode = ModeKeys(code)
                sel = modes == code
                d = self._by_mode.setdefault(mode, {})
                for ms, g in zip(chunk.head.mode_steps[rows][sel].tolist(), chunk.steps[rows][sel].tolist()):
                    if ms not in d:
                        d[ms] = g
        if layout.shapes and self.name in layout.shapes:
            self.original_name = layout.shapes[self.name][1]
        self._chunks_done[id(layout)] = len(layout.chunks)

    def _global_of(self, step_num: int, mode: ModeKeys | None) -> Any:  # int, or None when unknown
        if mode is None or mode == ModeKeys.GLOBAL:
            return step_num
        g = self.trial._index.mode_to_global.get(mode, {}).get(step_num)
        if g is None:
            self._sync()
            g = self._by_mode.get(mode, {}).get(step_num)
        return g

    def _files_currently(self, step_num: int, mode: ModeKeys | None) -> dict[str, Any] | None:
        g = self._global_of(step_num, mode)
        if g is None:
            return None
        at = self.trial._index.by_step.get(g)
        if not at:
            return None
        name = self.name
        files = {w: f for w, f in at.items() if name in f.layout.tensors}
        return files or None

    def _file(self, step_num: int, mode: ModeKeys | None = ModeKeys.GLOBAL, worker: str | None = None) -> Any:
        """The index file holding this tensor at a step, with smdebug's exceptions otherwise."""
        files = self._files_currently(step_num, mode)
        if files is None:
            trial = self.trial
            trial.maybe_refresh(self.name)
            state = trial.has_passed_step(step_num, mode)
            if state == StepState.AVAILABLE:
                files = self._files_currently(step_num, mode)
                if files is None:
                    g = trial._global_step_currently(mode, step_num)
                    if g is not None:
                        trial._check_step_readable(g)
                    raise TensorUnavailableForStep(self.name, step_num, mode)
            elif state == StepState.UNAVAILABLE:
                trial._check_step_readable(step_num, mode=mode)
                raise StepUnavailable(step_num, mode)
            else:
                if trial.loaded_all_steps:
                    avail = trial.steps(mode=mode)
                    raise NoMoreData(step_num, mode, avail[-1] if avail else -1)
                raise StepNotYetAvailable(step_num, mode)
        if worker is None:
            return files[min(files)]
        f = files.get(worker)
        if f is None:
            self.trial.maybe_refresh(self.name)
            f = (self._files_currently(step_num, mode) or {}).get(worker)
            if f is not None:
                return f
            g = self._global_of(step_num, mode)
            self.trial._check_step_readable(g, worker)
            if not self.trial._is_complete(g):
                raise StepNotYetAvailable(step_num, mode)  # this worker may still write it
            raise InvalidWorker(worker)
        return f

    # ------------------------------------------------------------------ steps
    def _all_steps(self, mode: ModeKeys | None = ModeKeys.GLOBAL) -> list[int]:
        mode = mode or ModeKeys.GLOBAL
        self.trial.maybe_refresh()
        self._sync()
        out = self._sorted.get(mode)
        if out is None:
            src = self._global if mode == ModeKeys.GLOBAL else self._by_mode.get(mode, ())
            out = self._sorted[mode] = sorted(src)
        return out

    def steps(self, mode: ModeKeys | None = ModeKeys.GLOBAL, show_incomplete_steps: bool = False) -> list[int]:
        mode = mode or ModeKeys.GLOBAL
        steps = self._all_steps(mode)
        if show_incomplete_steps:
            return list(steps)
        done = self.trial._is_complete
        if mode == ModeKeys.GLOBAL:
            return [s for s in steps if done(s)]
        to_global = self._by_mode.get(mode, {})
        return [s for s in steps if done(to_global[s])]

    def workers(self, step_num: int, mode: ModeKeys | None = ModeKeys.GLOBAL) -> list[str]:
        """Sorted names of the workers that saved this tensor at the step (of ``mode``).

        Raises :class:`TensorUnavailableForStep` when no worker saved it there, whether or not the
        step itself exists (as smdebug 1.0.34 does); it never returns an empty list.
        """
        files = self._files_currently(step_num, mode)
        if files is None:
            raise TensorUnavailableForStep(self.name, step_num, mode)
        return sorted(files)

    def prev_steps(self, step: int, n: int | None = None, mode: ModeKeys | None = ModeKeys.GLOBAL) -> list[int]:
        """Up to ``n`` saved steps of ``mode`` at or before ``step``."""
        steps = self.steps(mode=mode)
        prev = steps[: bisect.bisect_right(steps, step)]
        return prev[-n:] if n else prev

    def step(self, step_num: int, mode: ModeKeys | None = ModeKeys.GLOBAL, worker: str | None = None) -> None:
        raise SMDebugNotImplementedError(
            "step method has been removed. Please use tensor.value or tensor.reduction_value methods"
        )

    # ------------------------------------------------------------------ values
    def _read(self, picks: list[tuple[Any, int]]) -> list[Any]:
        """Values of (IndexFile, position) pairs, in one batched read of the trial's reader (arrays
        the caller owns: a view into the bytes read is copied)."""
        read = self.trial._reader.read
        name = self.name
        if not self.cache:
            return [_owned(v) for v in read([Pick(f, pos, name) for f, pos in picks])]
        out = [self._values.get((id(f), pos)) for f, pos in picks]
        missing = [i for i, v in enumerate(out) if v is None]
        if missing:
            got = read([Pick(picks[i][0], picks[i][1], name) for i in missing])
            for i, v in zip(missing, got):
                out[i] = self._values[(id(picks[i][0]), picks[i][1])] = _owned(v)
        return out

    def _hold(self, f: Any, pos: int, value: Any) -> None:
        """Keep ``value`` as this tensor's value at (``f``, ``pos``) (see trials.held)."""
        self._values[(id(f), pos)] = _owned(value)

    def _value_pos(self, f: Any) -> int:
        entry = f.layout.tensors.get(self.name)
        return -1 if entry is None else entry[0]

    def value(self, step_num: int, mode: ModeKeys | None = ModeKeys.GLOBAL, worker: str | None = None) -> np.ndarray:
        f = self._file(step_num, mode, worker)
        pos = self._value_pos(f)
        if pos < 0:
            entry = f.layout.tensors.get(self.name)
            raise TensorUnavailableForStep(self.name, step_num, mode, bool(entry and entry[1]))
        return self._read([(f, pos)])[0]

    def values(self, mode: ModeKeys | None = ModeKeys.GLOBAL, worker: str | None = None) -> dict[int, np.ndarray]:
        """{step: value} for every complete step of ``mode``, fetched in one batched read."""
        steps = self.steps(mode=mode)
        picks = []
        for s in steps:
            f = self._file(s, mode, worker)
            pos = self._value_pos(f)
            if pos < 0:
                entry = f.layout.tensors.get(self.name)
                raise TensorUnavailableForStep(self.name, s, mode, bool(entry and entry[1]))
            picks.append((f, pos))
        return dict(zip(steps, self._read(picks)))

    def reduction_values(
        self, step_num: int, mode: ModeKeys | None = ModeKeys.GLOBAL, worker: str | None = None
    ) -> dict[tuple[str, bool], np.ndarray]:
        """{(reduction name, abs): value} of the reductions saved at the step."""
        f = self._file(step_num, mode, worker)
        entry = f.layout.tensors.get(self.name)
        reds = entry[1] if entry else {}
        keys = list(reds)
        return dict(zip(keys, self._read([(f, reds[k]) for k in keys])))

    def reduction_value(
        self,
        step_num: int,
        reduction_name: str,
        mode: ModeKeys | None = ModeKeys.GLOBAL,
        worker: str | None = None,
        abs: bool = False,
    ) -> np.ndarray:
        """A saved reduction, or one computed from the saved raw tensor (vector norms)."""
        f = self._file(step_num, mode, worker)
        entry = f.layout.tensors.get(self.name)
        if entry is not None:
            pos = entry[1].get((reduction_name, bool(abs)))
            if pos is not None:
                return self._read([(f, pos)])[0]
            if entry[0] >= 0:
                return get_numpy_reduction(reduction_name, self._read([(f, entry[0])])[0], abs)
        raise TensorUnavailableForStep(self.name, step_num, mode, reduction=reduction_name, abs=bool(abs))

    def saved(
        self, step_num: int, mode: ModeKeys | None = ModeKeys.GLOBAL, worker: str | None = None
    ) -> dict[str, Any]:
        """What was saved of this tensor at a step, without reading a value.

        ``{"raw": bool, "reductions": [(name, abs), ...], "shape": tuple or None}``; the shape is
        the one written beside reductions (None when only the raw tensor holds it).
        """
        f = self._file(step_num, mode, worker)
        entry = f.layout.tensors.get(self.name)
        saved_shape = f.shapes.get(self.name) if f.shapes else None
        return {
            "raw": bool(entry and entry[0] >= 0),
            "reductions": sorted(entry[1]) if entry else [],
            "shape": tuple(saved_shape[0]) if saved_shape is not None else None,
        }

    def shape(
        self, step_num: int, mode: ModeKeys | None = ModeKeys.GLOBAL, worker: str | None = None
    ) -> tuple[int, ...]:
        f = self._file(step_num, mode, worker)
        saved = f.shapes.get(self.name)
        if saved is not None:
            return saved[0]
        pos = self._value_pos(f)
        if pos < 0:
            raise ShapeUnavailableForStep(self.name, step_num, mode)
        return self._read([(f, pos)])[0].shape

    def shapes(self, mode: ModeKeys | None = ModeKeys.GLOBAL, worker: str | None = None) -> dict[int, tuple[int, ...]]:
        """{step: shape} for every complete step of ``mode``."""
        out = {}
        need = []
        for s in self.steps(mode=mode):
            f = self._file(s, mode, worker)
            saved = f.shapes.get(self.name)
            if saved is not None:
                out[s] = saved[0]
                continue
            pos = self._value_pos(f)
            if pos < 0:
                raise ShapeUnavailableForStep(self.name, s, mode)
            need.append((s, f, pos))
        for (s, _f, _p), v in zip(need, self._read([(f, p) for _, f, p in need])):
            out[s] = v.shape
        return dict(sorted(out.items()))

    def __repr__(self) -> str:
        return f"<smdebug Tensor {self.name!r}>"
