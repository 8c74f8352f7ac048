"""Built-in rules that look at tensors' values at one step (docs/builtin-rules.md §3.1-3.3, 3.5, 3.15).

VanishingGradient, ExplodingTensor, AllZero, TensorVariance and SimilarAcrossRuns. Every rule
reads what a step needs in one batched read per trial (``reading.StepReader``), on **every worker**
that saved the tensor at the step: a NaN, a vanished gradient or an all-zero tensor on one worker
fires the rule (the spec's reference reads one worker, ``value(step)``; one worker's NaN is a
real NaN, so we look at all). Non-numeric tensors (strings) are skipped; a tensor without data
at the step is skipped, not the step.

A firing returns ``self.found(...)``: it names the tensor, its worker, its value and the condition
that held (:class:`smdebug.rules.finding.Finding`). A step that gives a rule nothing to judge says
why (``unjudged``): the selection matched no saved tensor (with the collections the trial holds),
or the tensors were saved only as reductions the rule cannot use (with the reduction to add).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from smdebug.analysis.nonfinite import first_written, nonfinite_counts, structural_nan
from smdebug.exceptions import RuleConfigurationError, TensorUnavailable, TensorUnavailableForStep
from smdebug.modes import ModeKeys
from smdebug.rules.builtin.base import HookCollection, Param, ReadingRule, SelectingRule
from smdebug.rules.builtin.reading import close_each, mean_abs, scalar
from smdebug.rules.finding import show_value
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


# ---------------------------------------------------------------------- what a step gave nothing of
def _collections_with_tensors(trial: Trial) -> list[str]:
    return [c for c in sorted(trial.collections()) if trial.tensor_names(collection=c)]


def _held(rule: Any, trial: Trial) -> str:
    """The collections the trial holds tensors in, for a reason (asked once per rule)."""
    held = rule.__dict__.get("_held_collections")
    if held is None:
        held = rule._held_collections = ", ".join(_collections_with_tensors(trial)) or "none"
    return held


def _matched_nothing(rule: Any, trial: Trial) -> str:
    """Why a selection gave nothing: what it was and which collections the trial holds tensors in."""
    return f"no saved tensor matches {rule.selection()} (collections holding tensors: {_held(rule, trial)})"


def _reductions_only(trial: Trial, step: int, names: Iterable[str]) -> dict[str, list[str]]:
    """{name: its saved reductions ("abs_mean")} of the ``names`` saved at ``step`` only as reductions."""
    out = {}
    for n in names:
        try:
            saved = trial.tensor(n).saved(step)
        except (TensorUnavailable, TensorUnavailableForStep):  # not saved there: nothing to say about it
            continue
        if not saved["raw"]:
            out[n] = [f"abs_{op}" if ab else op for op, ab in saved["reductions"]]
    return out


@dataclass(frozen=True)
class _Reads:
    """What a rule reads at a step (``values``) and how a user saves it (``fix``), for the reason it
    gives when a step gave it nothing to judge; ``tensors``: what it calls its selection."""

    values: str
    fix: str
    tensors: str = "the selected tensors"


_RAW = _Reads("raw values", "save them raw (ReductionConfig save_raw_tensor=True)")


def _why_unread(rule: Any, trial: Trial, step: int, names: list[str]) -> str:
    """Why ``names`` (the rule's selection at ``step``) gave no value to judge: nothing matched, the
    tensors were saved only as reductions the rule cannot use (``rule.reads``: what it needs and how
    to save it), or they hold no number."""
    if not names:
        return _matched_nothing(rule, trial)
    reads: _Reads = rule.reads
    only = _reductions_only(trial, step, names)
    if only and len(only) == len(names):
        saved = sorted({r for rs in only.values() for r in rs})
        return (
            f"{reads.tensors} were saved only as reductions ({', '.join(saved) or 'none'}) and "
            f"{type(rule).__name__} reads {reads.values}: {reads.fix}"
        )
    return f"{reads.tensors} hold no number at the step (strings, or empty)"


def _say_unread(rule: Any, step: int, names: list[str], none_saved: str | None = None) -> None:
    """``rule.unjudged`` with :func:`_why_unread`'s reason; when the step merely lacked the selected
    tensors that other steps saved, a passing reason (``BuiltinRule.unjudged``) that names the step.
    ``none_saved``: the reason when no step saved any (else :func:`_matched_nothing`'s)."""
    trial = rule.base_trial
    if not names:
        if rule.selected(None):
            rule.unjudged(f"{rule.reads.tensors} were not saved at step {step} (other steps have them)", passing=True)
        else:
            rule.unjudged(none_saved or _matched_nothing(rule, trial))
        return
    rule.unjudged(_why_unread(rule, trial, step, names))


def _fire(
    rule: Any, step: int, message: str, *, tensor: str, value: Any, condition: str, worker: str, **extra: Any
) -> bool:
    """Log the finding and return ``rule.found(...)`` (True) naming ``tensor``, its value, the condition."""
    rule.logger.info("%s: %s, at step %d (%s)", rule.rule_name, message, step, worker)
    return rule.found(step, message, tensors=[tensor], values=[value], condition=condition, worker=worker, **extra)


# ---------------------------------------------------------------------- the rules
class VanishingGradient(ReadingRule):
    """Fires when the mean of the absolute values of a gradient is below ``threshold``.

    Reads the ``gradients`` collection (fixed, as documented); the saved ``abs mean`` reduction
    is used when there is one. NaN never fires (ExplodingTensor does). Unlike the reference
    (``value(step)``, one worker), every worker's gradients are checked.

    Its firing names the gradient whose mean |x| is the smallest below ``threshold``, its worker
    and the value (``mean |gradient/fc1.bias| = 1.2e-14 < threshold 1e-07``). NaN and inf: a mean
    |x| of NaN is never below the threshold (ExplodingTensor's job); a gradient holding inf has an
    infinite mean, which never is either. Gradients saved only as reductions without the abs mean
    (``abs_reductions=["mean"]``) give it nothing to judge, and its "evaluated nothing" line says
    which reduction to add. It has no selection parameter: a layer whose gradients are legitimately
    tiny needs a lower ``threshold``, or a hook that leaves it out of the ``gradients`` collection.
    """

    report_needs = {"collection": "gradients"}  # what smdebug report needs saved to run it
    params = (Param("threshold", as_float, "0.0000001", "mean |gradient| below which it has vanished"),)
    # the parameters, parsed when the rule is built (see ``params``)
    threshold: float
    hook_collections = (HookCollection("gradients", {"save_interval": "500"}),)
    reads = _Reads(
        "the abs mean of each gradient",
        'add abs_reductions=["mean"] to the hook\'s ReductionConfig, or save the raw gradients (save_raw_tensor=True)',
        tensors="the gradients",
    )

    def invoke_at_step(self, step: int) -> bool:
        trial = self.base_trial
        names = self.selected(step)
        values = self.reader.step(trial, step, names, reduction="mean", abs=True, compute=False)
        self.evaluated(len(values))
        if not values:
            _say_unread(
                self,
                step,
                names,
                none_saved=f"no tensor of the collection 'gradients' was saved (collections holding "
                f"tensors: {_held(self, trial)}): include the gradients collection in the hook",
            )
            return False
        means = mean_abs(values)
        hit = np.flatnonzero(means < self.threshold)  # NaN is never below
        if not hit.size:
            return False
        i = hit[np.argmin(means[hit])]
        v, mean = values[i], float(means[i])
        more = f" ({hit.size} of {len(values)} gradient values below it)" if hit.size > 1 else ""
        return _fire(
            self,
            step,
            f"mean |{v.name}| = {show_value(mean)} < threshold {show_value(self.threshold)}{more}",
            tensor=v.name,
            value=mean,
            condition=f"mean |x| < {show_value(self.threshold)}",
            worker=v.worker,
        )

    def selected(self, step: int | None) -> list[str]:
        """The gradients saved at ``step`` (None: at any step)."""
        return self.base_trial.tensor_names(step=step, collection="gradients")


class ExplodingTensor(SelectingRule):
    """Fires when a selected tensor holds NaN (or ±Inf unless ``only_nan``).

    No selection means every tensor. A tensor saved only as reductions is checked through its
    saved reductions. Unlike the reference (one worker), every worker's values are checked.

    Its firing names the FIRST non-finite tensor in the order the model computed it at the step
    (the order the hook wrote the step's records: parameters, then outputs in forward order, then
    gradients in backward order; several workers: worker order first), how many of its values are
    NaN or inf, and its worker: ``fc1_output_0 holds 3 NaN of 10 values (the first of 6 non-finite,
    in computation order)``: the layer where the NaN entered, not the tensors computed from it
    (:func:`smdebug.analysis.nonfinite.computation_order`).

    NaN that are structure are not explosions: XGBoost's ``trees`` collection holds NaN in
    ``trees/Split`` (and the other columns a leaf leaves empty) on every leaf row, so those NaN are
    never counted, whatever selects them; an inf there still is
    (:data:`smdebug.analysis.nonfinite.STRUCTURAL_NAN`). To leave out another tensor that is
    legitimately non-finite (an attention mask of -inf, a log of zero), select the others:
    ``collection_names="weights,gradients"`` or a ``tensor_regex`` naming only what to read (RE2
    has no lookahead: a regex says what to read, not what to skip).
    """

    report_needs = {}  # what smdebug report needs saved to run it
    params = (_COLLECTIONS, _REGEX, Param("only_nan", as_bool, "False", "True: NaN only; False: NaN and ±Inf"))
    # the parameters, parsed when the rule is built (see ``params``)
    collection_names: list[str]
    tensor_regex: list[re.Pattern]
    only_nan: bool
    reads = _Reads("raw values or saved reductions", "save them (raw, or with reductions)")

    def invoke_at_step(self, step: int) -> bool:
        trial = self.base_trial
        names = self.selected(step)
        values = self.reader.step(trial, step, names, reductions_if_no_value=True)
        self.evaluated(len(values))
        if not values:
            _say_unread(self, step, names)
            return False
        plain = [v.value.ravel() for v in values if v.value.dtype.kind in "fc" and not structural_nan(v.name)]
        if plain and not any(structural_nan(v.name) for v in values):
            flat = np.concatenate(plain)
            if (not np.isnan(flat).any()) if self.only_nan else np.isfinite(flat).all():
                return False  # the common case: one vectorized check for the whole step
        seen: dict = {}  # (worker, tensor) -> [NaN, inf, values, from reductions, +inf seen]
        for v in values:
            nan, inf, size = nonfinite_counts(v.name, v.value, self.only_nan)
            acc = seen.setdefault((v.worker, v.name), [0, 0, 0, v.from_reduction, False])
            acc[0] += nan
            acc[1] += inf
            acc[2] += size
            acc[4] = acc[4] or bool(inf and (np.isinf(v.value) & (np.real(v.value) > 0)).any())
        bad = {key: acc for key, acc in seen.items() if acc[0] or acc[1]}
        first = first_written(trial, step, bad)
        if first is None:
            return False
        worker, name = first
        nan, inf, size, reds, posinf = bad[first]
        held = " and ".join(f"{n} {k}" for n, k in ((nan, "NaN"), (inf, "inf")) if n)
        what = (
            f"of its {size} saved reductions (no raw value saved)"
            if reds
            else f"of {size} value{'s' if size != 1 else ''}"
        )
        order = (
            f"the first of {len(bad)} non-finite, in computation order"
            if len(bad) > 1
            else "the only non-finite tensor at the step"
        )
        kind = "NaN" if nan else "inf"
        value = float("nan") if nan else (float("inf") if posinf else float("-inf"))
        return _fire(
            self,
            step,
            f"{name} holds {held} {what} ({order})",
            tensor=name,
            value=value,
            condition="any NaN" if self.only_nan else "any NaN or ±inf",
            worker=worker,
            kind=kind,
            count=nan or inf,
            size=size,
        )


class AllZero(SelectingRule):
    """Fires when at least ``threshold`` percent of a selected tensor's values are zero (per tensor,
    on every worker). No selection means every tensor, with a warning. ``threshold`` outside
    0-100 is refused when the rule is built.

    Its firing names the tensor, its worker and its percent of zeros against the threshold
    (``62.5% of fc1.weight's 1024 values are zero >= threshold 50%``). NaN and inf are not zero
    (-0.0 is). It reads raw values: tensors saved only as reductions give it nothing to judge, and
    its "evaluated nothing" line says so.
    """

    params = (_COLLECTIONS, _REGEX, Param("threshold", _percent, "100", "percent of zeros that fires"))
    # the parameters, parsed when the rule is built (see ``params``)
    collection_names: list[str]
    tensor_regex: list[re.Pattern]
    threshold: float
    warn_on_all = True
    reads = _RAW

    def __init__(self, base_trial: Trial, action_str: str = "", **params: Any) -> None:
        super().__init__(base_trial, action_str=action_str, **params)
        self._check_selection()

    def invoke_at_step(self, step: int) -> bool:
        trial = self.base_trial
        names = self.selected(step)
        judged = 0
        for v in self.reader.step(trial, step, names):
            if v.value.size == 0:
                continue
            self.evaluated()
            judged += 1
            zeros = v.value.size - np.count_nonzero(v.value)  # NaN and inf count as non-zero
            pct = 100.0 * zeros / v.value.size
            if pct >= self.threshold:
                return _fire(
                    self,
                    step,
                    f"{show_value(pct)}% of {v.name}'s {v.value.size} values are zero >= "
                    f"threshold {show_value(self.threshold)}%",
                    tensor=v.name,
                    value=pct,
                    condition=f"percent zero >= {show_value(self.threshold)}",
                    worker=v.worker,
                )
        if not judged:
            _say_unread(self, step, names)
        return False


class TensorVariance(SelectingRule):
    """Fires when a selected tensor's variance (numpy ``var``, or its saved ``variance`` reduction)
    is above ``max_threshold`` or below ``min_threshold``, on any worker; with neither threshold it
    never fires (a warning says so at construction); ``min_threshold > max_threshold`` is refused.
    A tensor holding inf has a NaN variance, which fires neither bound (ExplodingTensor does).

    Its firing names the tensor, its worker and its variance against the bound it crossed
    (``variance of fc1.weight = 3.2 > max_threshold 1``). NaN and inf: decided, a tensor holding
    NaN or inf has a NaN variance and fires neither bound (ExplodingTensor names it); finite values
    whose variance overflows to inf are above every ``max_threshold`` and fire it. Tensors saved only
    as reductions without ``variance`` give it nothing to judge, and its "evaluated nothing" line
    says which reduction to add.
    """

    params = (
        _COLLECTIONS,
        _REGEX,
        Param("max_threshold", optional(as_float), None, "variance above which the rule fires"),
        Param("min_threshold", optional(as_float), None, "variance below which the rule fires"),
    )
    # the parameters, parsed when the rule is built (see ``params``)
    collection_names: list[str]
    tensor_regex: list[re.Pattern]
    max_threshold: float | None
    min_threshold: float | None
    warn_on_all = True
    reads = _Reads(
        "the variance of each", 'add reductions=["variance"] to the hook\'s ReductionConfig, or save them raw'
    )

    def __init__(self, base_trial: Trial, action_str: str = "", **params: Any) -> None:
        super().__init__(base_trial, action_str=action_str, **params)
        if self.max_threshold is None and self.min_threshold is None:
            self.logger.warning("%s: neither max_threshold nor min_threshold is set: it never fires", self.rule_name)
        elif (
            self.max_threshold is not None
            and self.min_threshold is not None
            and self.min_threshold > self.max_threshold
        ):
            raise RuleConfigurationError(
                self.rule_name, "min_threshold", f"{self.min_threshold} is above max_threshold {self.max_threshold}"
            )
        self._check_selection()

    def invoke_at_step(self, step: int) -> bool:
        if self.max_threshold is None and self.min_threshold is None:
            self.unjudged("neither max_threshold nor min_threshold is set: there is nothing to compare a variance with")
            return False
        trial = self.base_trial
        names = self.selected(step)
        values = self.reader.step(trial, step, names, reduction="variance")
        if not values:
            _say_unread(self, step, names)
        for v in values:
            var = scalar(v.value)
            self.evaluated()
            for bound, crossed, op in (
                (self.max_threshold, "max_threshold", ">"),
                (self.min_threshold, "min_threshold", "<"),
            ):
                if bound is not None and (var > bound if op == ">" else var < bound):
                    return _fire(
                        self,
                        step,
                        f"variance of {v.name} = {show_value(var)} {op} {crossed} {show_value(bound)}",
                        tensor=v.name,
                        value=var,
                        condition=f"variance {op} {show_value(bound)}",
                        worker=v.worker,
                    )
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

    Its firing names the tensor, its worker, the other trial and how it differs: how many values
    and the largest absolute difference (``fc1.weight differs in trial 'b': 1024 of 1024 values,
    max |difference| = 0.41``), or both shapes. NaN and inf: decided, NaN equals NaN (both runs
    went NaN at the same place) and inf equals inf of the same sign; NaN against a number, or inf
    against -inf, differs (the max |difference| is then NaN or inf when no finite value differs).
    It reads raw values: tensors saved only as reductions give it nothing to judge.
    """

    params = (_COLLECTIONS, _REGEX)
    # the parameters, parsed when the rule is built (see ``params``)
    collection_names: list[str]
    tensor_regex: list[re.Pattern]
    uses_other_trials = True
    reads = _RAW

    def __init__(
        self, base_trial: Trial, action_str: str = "", other_trials: Iterable[Trial] | None = None, **params: Any
    ) -> None:
        try:
            trials = _as_trials(other_trials)
        except Exception as exc:  # a path that is not a trial
            raise RuleConfigurationError(type(self).__name__, "other_trials", str(exc)) from exc
        if not trials:
            raise RuleConfigurationError(type(self).__name__, "other_trials", "required: the trials to compare with")
        super().__init__(base_trial, action_str=action_str, other_trials=trials, **params)

    def invoke_at_step(self, step: int) -> bool:
        trial = self.base_trial
        names = self.selected(step)
        mine = {(v.name, v.worker): v.value for v in self.reader.step(trial, step, names)}
        if not mine:
            _say_unread(self, step, names)
            return False
        compared = 0
        for other in self.other_trials:
            there = set(other.tensor_names(step=step, mode=ModeKeys.GLOBAL)) & set(names)
            pairs = [
                (mine[(v.name, v.worker)], v)
                for v in self.reader.step(other, step, sorted(there))
                if (v.name, v.worker) in mine
            ]
            self.evaluated(len(pairs))
            compared += len(pairs)
            for a, v in pairs:
                if a.shape != v.value.shape:
                    return _fire(
                        self,
                        step,
                        f"{v.name} has shape {tuple(a.shape)} here and {tuple(v.value.shape)} in trial {other.name!r}",
                        tensor=v.name,
                        value=None,
                        condition="same shape",
                        worker=v.worker,
                        other_trial=other.name,
                    )
            same = close_each([a for a, _ in pairs], [v.value for _, v in pairs], 1e-5, 1e-8, True)
            for ok, (a, v) in zip(same, pairs):
                if not ok:
                    return self._differs(step, a, v, other)
        if not compared:
            others = ", ".join(repr(o.name) for o in self.other_trials)
            self.unjudged(
                f"the other trial(s) {others} saved none of the selected tensors at the step for the same workers"
            )
        return False

    def _differs(self, step: int, a: np.ndarray, v: Any, other: Any) -> bool:
        """Fire naming how ``v`` (of ``other``) differs from ``a`` (the base trial's value)."""
        x, y = a.reshape(-1), v.value.reshape(-1)
        if x.dtype.kind not in "fc" or y.dtype.kind not in "fc":
            x, y = x.astype(np.float64), y.astype(np.float64)
        with np.errstate(all="ignore"):
            off = ~np.isclose(x, y, rtol=1e-5, atol=1e-8, equal_nan=True)
            diff = np.abs(x[off].astype(np.complex128 if x.dtype.kind == "c" else np.float64) - y[off])
        finite = diff[np.isfinite(diff)]
        biggest = float(finite.max()) if finite.size else float(diff[0])
        one_nan = int(np.count_nonzero(np.isnan(x[off]) != np.isnan(y[off])))
        nan_note = f", {one_nan} NaN in one run only" if one_nan else ""
        return _fire(
            self,
            step,
            f"{v.name} differs in trial {other.name!r}: {int(off.sum())} of {x.size} values, "
            f"max |difference| = {show_value(biggest)}{nan_note}",
            tensor=v.name,
            value=biggest,
            condition="not allclose(rtol=1e-05, atol=1e-08, equal_nan=True)",
            worker=v.worker,
            other_trial=other.name,
        )
