"""RequiredTensors: what a rule needs at a step, declared in ``set_required_tensors`` and fetched at once.

The API is smdebug 1.0.34's. ``fetch`` waits for the required steps of every trial and reads every
required value of a trial in one batched read (grouped by event file; concurrent on S3). The values
stay with their tensors until the rule's evaluation of the step ends (``release``), so
``tensor.value(step)`` inside ``invoke_at_step`` answers from memory.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from smdebug.exceptions import SMDebugValueError, TensorUnavailable

if TYPE_CHECKING:
    from smdebug.trials.tensor import Tensor
    from smdebug.trials.trial import Trial

__all__ = ["RequiredTensors", "RequiredTensorsForTrial"]

logger = logging.getLogger("smdebug")


def _as_steps(steps: Any) -> list[int]:  # an int or an iterable of ints
    if isinstance(steps, int) and not isinstance(steps, bool):
        return [steps]
    return list(steps)


class RequiredTensorsForTrial:
    """The tensors (and their steps) a rule needs from one trial."""

    def __init__(self, trial: Trial) -> None:
        self.trial = trial
        self.logger = logger
        self._tensor_steps: dict[str, list] = {}
        self._tensors: dict = {}
        self._held = None  # the values of the last fetch, held by their tensors (Trial.hold)

    def _add_steps_for_tensor(self, name: str, steps: list[int]) -> None:
        self._tensor_steps.setdefault(name, []).extend(steps)
        if name not in self._tensors:
            self._tensors[name] = self.trial.tensor(name)

    def add(self, name: str, steps: int | Iterable[int], should_match_regex: bool = False) -> None:
        """Require ``name`` (or every tensor matching the regex ``name``) at the global ``steps``."""
        steps = _as_steps(steps)
        if should_match_regex:
            for n in self.trial.tensor_names(regex=[name]):
                self._add_steps_for_tensor(n, steps)
            return
        if not self.trial.has_tensor(name):
            raise TensorUnavailable(name)
        self._add_steps_for_tensor(name, steps)

    def get_tensor_steps(self, name: str) -> list[int]:
        return self._tensor_steps[name]

    def get_names(self) -> list[str]:
        return list(self._tensor_steps)

    def get(self) -> list[Tensor]:
        """The required Tensor objects."""
        return list(self._tensors.values())

    def clear(self) -> None:
        self.release()
        self._tensor_steps.clear()
        self._tensors.clear()

    def fetch(self) -> None:
        """Wait for the required steps, then read every required value in one batched read.

        Raises what ``tensor.value(step)`` would: StepUnavailable, TensorUnavailableForStep (a
        step where only reductions of the tensor were saved), NoMoreData.
        """
        wanted = {}
        for name, steps in self._tensor_steps.items():
            wanted[name] = sorted(set(steps))
        required = sorted({s for steps in wanted.values() for s in steps})
        if not required:
            return
        self.logger.debug("Waiting for required_steps: %s", required)
        self.trial.wait_for_steps(required)
        self.release()
        hold = getattr(self.trial, "hold", None)
        if hold is None:  # a trial-like object without the batched read: one read per value
            for name, steps in wanted.items():
                for s in steps:
                    self._tensors[name].value(s)
            return
        self._held = hold(wanted)  # one batched read, each payload checked against its index's CRC32C

    def release(self) -> None:
        """Drop fetched values from tensors that do not cache values themselves."""
        if self._held is not None:
            self._held.release()
            self._held = None


class RequiredTensors:
    """Per trial (the base trial unless ``trial=`` says otherwise), the tensors a rule needs."""

    def __init__(self, base_trial: Trial, other_trials: Iterable[Trial] | None = None) -> None:
        self.base_trial = base_trial
        self._per_trial: list = [(base_trial, RequiredTensorsForTrial(base_trial))]
        for trial in other_trials or ():
            if not any(t is trial for t, _ in self._per_trial):
                self._per_trial.append((trial, RequiredTensorsForTrial(trial)))

    def _for(self, trial: Trial | None) -> RequiredTensorsForTrial:
        trial = self.base_trial if trial is None else trial
        for t, req in self._per_trial:
            if t is trial:
                return req
        for t, req in self._per_trial:
            if t == trial:
                return req
        raise SMDebugValueError(f"{trial!r} is neither the rule's base trial nor one of its other_trials")

    def add(
        self, name: str, steps: int | Iterable[int], trial: Trial | None = None, should_match_regex: bool = False
    ) -> None:
        self._for(trial).add(name, steps, should_match_regex=should_match_regex)

    def get_tensor_steps(self, name: str, trial: Trial | None = None) -> list[int]:
        return self._for(trial).get_tensor_steps(name)

    def get_names(self, trial: Trial | None = None) -> list[str]:
        return self._for(trial).get_names()

    def get(self, trial: Trial | None = None) -> list[Tensor]:
        return self._for(trial).get()

    def clear(self) -> None:
        for _t, req in self._per_trial:
            req.clear()

    def fetch(self) -> None:
        for _t, req in self._per_trial:
            req.fetch()

    def release(self) -> None:
        for _t, req in self._per_trial:
            req.release()
