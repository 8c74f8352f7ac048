"""Built-in rules that look at tensors' values at one step (docs/builtin-rules.md §3.1-3.3, 3.5, 3.15).

VanishingGradient, ExplodingTensor, AllZero, TensorVariance and SimilarAcrossRuns. Every rule
reads what a step needs in one batched read per trial (``reading.StepReader``), on **every worker**
that saved the tensor at the step: a NaN, a vanished gradient or an all-zero tensor on one worker
fires the rule (the spec's reference reads one worker, ``value(step)``; one worker's NaN is a
real NaN, so we look at all). Non-numeric tensors (strings) are skipped; a tensor without data
at the step is skipped, not the step.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from smdebug.exceptions import RuleConfigurationError
from smdebug.modes import ModeKeys
from smdebug.rules.builtin.base import HookCollection, Param, ReadingRule, SelectingRule
from smdebug.rules.builtin.reading import close_each, mean_abs, scalar
from smdebug.rules.params import as_bool, as_float, as_regex_list, as_str_list, bounded, optional

if TYPE_CHECKING:
    from smdebug.trials.trial import Trial

__all__ = [
    "VanishingGradient",
    "ExplodingTensor",
    "AllZero",
    "TensorVariance",
    "SimilarAcrossRuns",
]

# the names these bases had here before they moved to base.py
_ReadingRule = ReadingRule
_SelectingRule = SelectingRule

_percent = bounded(as_float, 0.0, 100.0)


_COLLECTIONS = Param("collection_names", as_str_list, None, "collections to inspect")
_REGEX = Param("tensor_regex", as_regex_list, None, "regexes of tensor names to inspect (union with collections)")


# ---------------------------------------------------------------------- the rules
class VanishingGradient(ReadingRule):
    """Fires when the mean of the absolute values of a gradient is below ``threshold``.

    Reads the ``gradients`` collection (fixed, as documented); the saved ``abs mean`` reduction
    is used when there is one. NaN never fires (ExplodingTensor does). Unlike the reference
    (``value(step)``, one worker), every worker's gradients are checked.
    """

    report_needs = {"collection": "gradients"}  # what smdebug report needs saved to run it
    params = (Param("threshold", as_float, "0.0000001", "mean |gradient| below which it has vanished"),)
    hook_collections = (HookCollection("gradients", {"save_interval": "500"}),)

    def invoke_at_step(self, step: int) -> bool:
        trial = self.base_trial
        names = trial.tensor_names(step=step, collection="gradients")
        values = self.reader.step(trial, step, names, reduction="mean", abs=True, compute=False)
        self.evaluated(len(values))
        if not values:
            return False
        hit = np.flatnonzero(mean_abs(values) < self.threshold)  # NaN is never below
        if hit.size:
            v = values[hit[0]]
            self.logger.info("%s: mean |%s| = %g < %g at step %d (%s)",
                             self.rule_name, v.name, mean_abs([v])[0], self.threshold, step, v.worker)
            return True
        return False


class ExplodingTensor(SelectingRule):
    """Fires when a selected tensor holds NaN (or ±Inf unless ``only_nan``).

    No selection means every tensor. A tensor saved only as reductions is checked through its
    saved reductions. Unlike the reference (one worker), every worker's values are checked.
    """

    report_needs = {}  # what smdebug report needs saved to run it
    params = (_COLLECTIONS, _REGEX, Param("only_nan", as_bool, "False", "True: NaN only; False: NaN and ±Inf"))

    def invoke_at_step(self, step: int) -> bool:
        values = self.reader.step(self.base_trial, step, self.selected(step), reductions_if_no_value=True)
        self.evaluated(len(values))
        floats = [v.value.ravel() for v in values if v.value.dtype.kind in "fc"]
        if not floats:
            return False
        flat = np.concatenate(floats)
        if (not np.isnan(flat).any()) if self.only_nan else np.isfinite(flat).all():
            return False  # the common case: one vectorized check for the whole step
        for v in values:
            bad = np.isnan(v.value).any() if self.only_nan else not np.isfinite(v.value).all()
            if bad:
                what = "NaN" if self.only_nan or np.isnan(v.value).any() else "infinite values"
                self.logger.info("%s: %s holds %s at step %d (%s)", self.rule_name, v.name, what, step, v.worker)
                return True
        return False  # pragma: no cover - the vectorized check found what this loop finds


class AllZero(SelectingRule):
    """Fires when at least ``threshold`` percent of a selected tensor's values are zero (per tensor,
    on every worker). No selection means every tensor, with a warning. ``threshold`` outside
    0-100 is refused when the rule is built."""

    params = (_COLLECTIONS, _REGEX, Param("threshold", _percent, "100", "percent of zeros that fires"))
    warn_on_all = True

    def __init__(self, base_trial: Trial, action_str: str = "", **params: Any) -> None:
        super().__init__(base_trial, action_str=action_str, **params)
        self._check_selection()

    def invoke_at_step(self, step: int) -> bool:
        for v in self.reader.step(self.base_trial, step, self.selected(step)):
            if v.value.size == 0:
                continue
            self.evaluated()
            pct = 100.0 * (v.value.size - np.count_nonzero(v.value)) / v.value.size
            if pct >= self.threshold:
                self.logger.info("%s: %.1f%% of %s is zero at step %d (%s)", self.rule_name, pct, v.name, step, v.worker)
                return True
        return False


class TensorVariance(SelectingRule):
    """Fires when a selected tensor's variance (numpy ``var``, or its saved ``variance`` reduction)
    is above ``max_threshold`` or below ``min_threshold``, on any worker; with neither threshold it
    never fires (a warning says so at construction); ``min_threshold > max_threshold`` is refused.
    A tensor holding inf has a NaN variance, which fires neither bound (ExplodingTensor does)."""

    params = (
        _COLLECTIONS,
        _REGEX,
        Param("max_threshold", optional(as_float), None, "variance above which the rule fires"),
        Param("min_threshold", optional(as_float), None, "variance below which the rule fires"),
    )
    warn_on_all = True

    def __init__(self, base_trial: Trial, action_str: str = "", **params: Any) -> None:
        super().__init__(base_trial, action_str=action_str, **params)
        if self.max_threshold is None and self.min_threshold is None:
            self.logger.warning("%s: neither max_threshold nor min_threshold is set: it never fires", self.rule_name)
        elif self.max_threshold is not None and self.min_threshold is not None and self.min_threshold > self.max_threshold:
            raise RuleConfigurationError(self.rule_name, "min_threshold",
                                         f"{self.min_threshold} is above max_threshold {self.max_threshold}")
        self._check_selection()

    def invoke_at_step(self, step: int) -> bool:
        if self.max_threshold is None and self.min_threshold is None:
            return False
        for v in self.reader.step(self.base_trial, step, self.selected(step), reduction="variance"):
            var = scalar(v.value)
            self.evaluated()
            if (self.max_threshold is not None and var > self.max_threshold) or (
                self.min_threshold is not None and var < self.min_threshold
            ):
                self.logger.info("%s: variance of %s is %g at step %d (%s)", self.rule_name, v.name, var, step, v.worker)
                return True
        return False


def _as_trials(other_trials: Any) -> list:
    """Trial objects, or paths (a list, or a comma-separated string) opened with create_trial."""
    from smdebug.trials import create_trial

    items = as_str_list(other_trials) if isinstance(other_trials, str) else list(other_trials or [])
    return [create_trial(t) if isinstance(t, str) else t for t in items]


class SimilarAcrossRuns(SelectingRule):
    """Fires when a selected tensor differs between the base trial and another trial at a step.

    Compared with ``numpy.allclose(rtol=1e-5, atol=1e-8, equal_nan=True)`` (different shapes
    differ), worker by worker for the workers both trials saved. Tensors, steps or workers the
    other trial does not have (yet) are skipped. ``other_trials``: Trial objects or paths.
    """

    params = (_COLLECTIONS, _REGEX)
    uses_other_trials = True

    def __init__(self, base_trial: Trial, action_str: str = "", other_trials: Iterable[Trial] | None = None,
                 **params: Any) -> None:
        try:
            trials = _as_trials(other_trials)
        except Exception as exc:  # a path that is not a trial
            raise RuleConfigurationError(type(self).__name__, "other_trials", str(exc)) from exc
        if not trials:
            raise RuleConfigurationError(type(self).__name__, "other_trials", "required: the trials to compare with")
        super().__init__(base_trial, action_str=action_str, other_trials=trials, **params)

    def invoke_at_step(self, step: int) -> bool:
        names = self.selected(step)
        mine = {(v.name, v.worker): v.value for v in self.reader.step(self.base_trial, step, names)}
        if not mine:
            return False
        for other in self.other_trials:
            there = set(other.tensor_names(step=step, mode=ModeKeys.GLOBAL)) & set(names)
            pairs = [(mine[(v.name, v.worker)], v) for v in self.reader.step(other, step, sorted(there))
                     if (v.name, v.worker) in mine]
            self.evaluated(len(pairs))
            for a, v in pairs:
                if a.shape != v.value.shape:
                    return self._differs(v, other, step, "has another shape")
            same = close_each([a for a, _ in pairs], [v.value for _, v in pairs], 1e-5, 1e-8, True)
            for ok, (_, v) in zip(same, pairs):
                if not ok:
                    return self._differs(v, other, step, "differs")
        return False

    def _differs(self, v: Any, other: Any, step: Any, how: Any) -> bool:
        self.logger.info("%s: %s %s in %s at step %d (%s)", self.rule_name, v.name, how, other.name, step, v.worker)
        return True
