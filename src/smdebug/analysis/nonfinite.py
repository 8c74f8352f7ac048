"""Which tensor went NaN or inf first: the order a step's tensors were computed in, and the first
non-finite value of a trial.

A hook writes a step's tensors into the step's event file as the model computes them (the
parameters at the start of the step, the layers' outputs in forward order, the gradients in
backward order), and the step's index file lists the records in that order with their byte
offsets. :func:`computation_order` sorts tensor names by that offset, worker by worker (workers
in their natural order: worker_2 before worker_10); :func:`first_nonfinite` scans the steps in
order and names, at the first step holding a non-finite value, the first tensor in computation
order that holds one: the layer where the NaN entered, not the alphabetically first of the many
tensors computed from it.

Some NaN are structure, not an explosion (:func:`structural_nan`): XGBoost's ``trees`` collection
saves ``trees_to_dataframe``'s columns, and a leaf has no split value (``trees/Split`` is NaN on
every leaf row). Those NaN are left out here and by the rule ExplodingTensor; an infinite value
there still counts.

This module reads a trial through its public reads (``Trial.read``, ``tensor_names``, ``steps``)
and, for the write order, the index the trial keeps (``trial._index``: per step and worker, each
record's position and offset); it imports nothing of ``smdebug.trials`` or ``smdebug.rules``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from smdebug.core.tensors.reductions import REDUCTIONS_PREFIX, as_numeric, reverse_reduction_tensor_name
from smdebug.exceptions import IndexReaderException

__all__ = [
    "NonFinite",
    "NonFiniteScan",
    "STRUCTURAL_NAN",
    "structural_nan",
    "nonfinite_counts",
    "worker_key",
    "write_positions",
    "computation_order",
    "first_written",
    "scan_nonfinite",
    "first_nonfinite",
]

# tensors whose NaN is structure, with why: the columns of XGBoost's trees_to_dataframe that a
# leaf (or a categorical split, for Split) leaves empty; numeric in some writers' files
STRUCTURAL_NAN = {
    f"trees/{column}": "a leaf of an XGBoost tree has no split (trees_to_dataframe writes NaN)"
    for column in ("Split", "Yes", "No", "Missing", "Category")
}


def structural_nan(name: str) -> bool:
    """Whether a NaN in tensor ``name`` is structure rather than an explosion (see STRUCTURAL_NAN)."""
    return name in STRUCTURAL_NAN


def as_floats(value: Any) -> np.ndarray | None:
    """``value`` as an array that can hold NaN (float or complex; bfloat16 and friends as float32),
    or None when it cannot (integers, booleans, strings)."""
    arr = as_numeric(value)
    return arr if arr is not None and arr.dtype.kind in "fc" else None


def is_numeric(value: Any) -> bool:
    """Whether ``value`` is an array of numbers (what a NaN check judges, even if it cannot hold one)."""
    return as_numeric(value) is not None


def nonfinite_counts(name: str, value: Any, only_nan: bool = False) -> tuple[int, int, int]:
    """(NaN, ±inf, values) in ``value``: structural NaN (:func:`structural_nan`) are not counted;
    with ``only_nan`` the infinite values are not either. Values that cannot be NaN give (0, 0, size)."""
    arr = as_floats(value)
    size = int(np.size(value))
    if arr is None or arr.size == 0:
        return 0, 0, size
    nan = 0 if structural_nan(name) else int(np.count_nonzero(np.isnan(arr)))
    inf = 0 if only_nan else int(np.count_nonzero(np.isinf(arr)))
    return nan, inf, size


def worker_key(worker: str) -> tuple:
    """Natural order of worker names: worker_2 before worker_10."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", str(worker)) if p)


def _files_at(trial: Any, step: int) -> dict:
    """{worker: index file} of global ``step`` from the index the trial keeps; {} for a trial-like
    object without one."""
    index = getattr(trial, "_index", None)
    table = getattr(index, "by_step", None)
    files = table.get(step) if table is not None else None
    return dict(files or {})


def _offsets(f: Any) -> dict[str, int]:
    """{tensor: where its first record lies in the event file} of one index file: the record's byte
    offset, or its entry's position when the index cannot locate every record. A tensor written
    twice at a step, or saved as reductions, is placed by its first record."""
    first: dict[str, int] = {}
    for pos, tag in enumerate(f.layout.tags):
        name = reverse_reduction_tensor_name(tag)[0] if tag.startswith(REDUCTIONS_PREFIX) else tag
        first.setdefault(name, pos)
    try:
        return {name: f.location(pos, f.key)[0] for name, pos in first.items()}
    except IndexReaderException:  # no event file named, or a bad entry: the index order is the file order
        return first


def write_positions(trial: Any, step: int, worker: str | None = None) -> dict[str, dict[str, int]]:
    """{worker: {tensor: offset of its record}} at global ``step`` (only ``worker`` when given),
    the workers in natural order."""
    files = _files_at(trial, step)
    workers = [worker] if worker is not None else sorted(files, key=worker_key)
    return {w: _offsets(files[w]) for w in workers if w in files}


def computation_order(trial: Any, step: int, names: Iterable[str], worker: str | None = None) -> list[str]:
    """``names`` in the order the model computed them at global ``step``: the order the hook wrote
    them in the step's event file, of ``worker`` or (None) of the first worker, in natural order,
    that saved each. Names not saved at the step come last, in alphabetical order."""
    positions = write_positions(trial, step, worker)
    ranks = list(positions.values())
    missing = (len(ranks), 0)

    def key(name: str) -> tuple:
        for rank, offsets in enumerate(ranks):
            at = offsets.get(name)
            if at is not None:
                return rank, at, name
        return (*missing, name)

    return sorted(set(names), key=key)


def first_written(trial: Any, step: int, pairs: Iterable[tuple[str, str]]) -> tuple[str, str] | None:
    """The first of ``pairs`` ((worker, tensor)) in worker order, then in the order that worker's
    hook wrote them at global ``step``; None when ``pairs`` is empty."""
    by_worker: dict[str, list[str]] = {}
    for w, name in pairs:
        by_worker.setdefault(w, []).append(name)
    if not by_worker:
        return None
    w = min(by_worker, key=worker_key)
    return w, computation_order(trial, step, by_worker[w], worker=w)[0]


@dataclass(frozen=True)
class NonFinite:
    """The first non-finite value of a trial: at global ``step`` (``mode`` step ``mode_step``, its
    name such as "TRAIN"), ``worker``'s ``tensor`` held ``count`` of its ``size`` values as
    ``kind`` ("NaN", or "inf" when it held no NaN but ±inf). ``from_reductions``: the tensor was
    saved only as reductions, and ``count`` / ``size`` count those."""

    step: int
    mode: str | None
    mode_step: int | None
    worker: str
    tensor: str
    kind: str
    count: int
    size: int
    from_reductions: bool = False

    def text(self) -> str:
        """``fc1_output_0 went NaN first: 3 of its 10 values, at global step 5 (TRAIN step 5, worker_0)``."""
        inside = [f"{self.mode} step {self.mode_step}"] if self.mode is not None and self.mode_step is not None else []
        inside.append(self.worker)
        what = ("saved reduction" if self.from_reductions else "value") + ("s" if self.size != 1 else "")
        return (
            f"{self.tensor} went {self.kind} first: {self.count} of its {self.size} {what}, at global step "
            f"{self.step} ({', '.join(inside)})"
        )

    def to_json(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class NonFiniteScan:
    """What :func:`scan_nonfinite` looked at: ``steps`` read, ``values`` numeric values (a tensor of
    a worker at a step, or one saved reduction) checked, and the first non-finite one (or None)."""

    found: NonFinite | None
    steps: int
    values: int


class _Key:
    """What ``Trial.read`` takes for one value (a ValueKey's fields: name, global step, worker or
    None for every worker)."""

    __slots__ = ("name", "step", "worker")

    def __init__(self, name: str, step: int, worker: str | None = None):
        self.name, self.step, self.worker = name, step, worker


def _mode_of(trial: Any, step: int) -> tuple[str | None, int | None]:
    try:
        mode, mode_step = trial.mode(step), trial.mode_step(step)
    except Exception:  # noqa: BLE001 - a trial-like object without modes
        return None, None
    return (getattr(mode, "name", None if mode is None else str(mode)), None if mode_step is None else int(mode_step))


def scan_nonfinite(
    trial: Any, *, start_step: int = 0, end_step: int | None = None, regex: str | Iterable[str] | None = None
) -> NonFiniteScan:
    """:func:`first_nonfinite`, saying also how much it read (``values`` 0: no numeric tensor)."""
    wanted = set(trial.tensor_names(regex=regex)) if regex is not None else None
    steps = [s for s in trial.steps() if s >= start_step and (end_step is None or s < end_step)]
    checked = read_steps = 0
    for step in steps:
        names = trial.tensor_names(step=step)
        if wanted is not None:
            names = [n for n in names if n in wanted]
        if not names:
            continue
        read_steps += 1
        seen: dict[tuple[str, str], list] = {}  # (worker, tensor) -> [NaN, inf, values, from reductions]
        for v in trial.read([_Key(n, step) for n in names], reductions_if_no_value=True):
            if not is_numeric(v.value):
                continue
            checked += 1
            nan, inf, size = nonfinite_counts(v.name, v.value)
            acc = seen.setdefault((v.worker, v.name), [0, 0, 0, v.from_reduction])
            acc[0] += nan
            acc[1] += inf
            acc[2] += size
        bad = {key: acc for key, acc in seen.items() if acc[0] or acc[1]}
        first = first_written(trial, step, bad)
        if first is not None:
            nan, inf, size, reds = bad[first]
            mode, mode_step = _mode_of(trial, step)
            kind, count = ("NaN", nan) if nan else ("inf", inf)
            return NonFiniteScan(
                NonFinite(step, mode, mode_step, first[0], first[1], kind, count, size, reds), read_steps, checked
            )
    return NonFiniteScan(None, read_steps, checked)


def first_nonfinite(trial: Any, *, start_step: int = 0, end_step: Any = None, regex: Any = None) -> NonFinite | None:
    """The first non-finite value of ``trial`` ("which layer went NaN first"), or None when every
    value is finite.

    Steps from ``start_step`` to before ``end_step`` are scanned in order, every tensor (only those
    matching ``regex``, a pattern or list of patterns, when given) on every worker: its raw value,
    or its saved reductions when no raw value was saved. At the first step where any holds NaN or
    ±inf, the first such tensor in :func:`computation_order` (worker order, then write order) is
    named. Structural NaN (:data:`STRUCTURAL_NAN`: an XGBoost leaf's split) are not counted.
    """
    return scan_nonfinite(trial, start_step=start_step, end_step=end_step, regex=regex).found
