"""Values read ahead and held by their tensors: what ``RequiredTensors`` fetches for a rule's step
(:meth:`smdebug.trials.Trial.hold`), so that ``tensor.value(step)`` inside the rule answers from
memory until the step's evaluation ends."""

from __future__ import annotations

from smdebug.core.modes import ModeKeys
from smdebug.exceptions import TensorUnavailableForStep
from smdebug.trials.reader import Pick

__all__ = ["HeldValues", "hold"]


class HeldValues:
    """The tensors holding values read ahead; :meth:`release` drops the values from those that do
    not cache values themselves."""

    def __init__(self, tensors: list):
        self._tensors = tensors  # (tensor, its cache setting before)

    def release(self) -> None:
        for t, cached in self._tensors:
            if not cached:
                t.cache = False
                t._values.clear()
        self._tensors = []


def hold(trial, wanted: dict) -> HeldValues:
    """Read ``wanted`` ({tensor name: global steps}) as ``tensor.value(step)`` reads it (the first
    worker), in one batched read; raises what ``tensor.value`` raises."""
    picks, tensors = [], []
    for name, steps in wanted.items():
        t = trial.tensor(name)
        for s in steps:
            f = t._file(s, ModeKeys.GLOBAL, None)
            pos = t._value_pos(f)
            if pos < 0:
                entry = f.layout.tensors.get(name)
                raise TensorUnavailableForStep(name, s, ModeKeys.GLOBAL, bool(entry and entry[1]))
            picks.append(Pick(f, pos, name))
            tensors.append(t)
    values = trial._reader.read(picks)
    held: dict = {}
    for t, p, v in zip(tensors, picks, values):
        if id(t) not in held:
            held[id(t)] = (t, t.cache)
            t.cache = True
        t._hold(p.file, p.pos, v)
    return HeldValues(list(held.values()))
