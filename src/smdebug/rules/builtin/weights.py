"""Built-in rules that follow tensors over steps (docs/builtin-rules.md §3.4, 3.6, 3.16).

WeightUpdateRatio, UnchangedTensor and PoorWeightInitialization. Rules that compare a tensor with
its own history run on TRAIN steps when the trial has any (EVAL-phase weights do not change and
must not fire), else on GLOBAL steps (§1.5). History comes from the trial, so a rule started at
step 500 sees the steps before it; values read for one step are kept for the next evaluation, so
that walking the steps in order reads each value once. Every worker is checked on its own.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from typing import TYPE_CHECKING, Any

import numpy as np

from smdebug.exceptions import RuleConfigurationError
from smdebug.modes import ModeKeys
from smdebug.rules.builtin.base import HookCollection, Param, ReadingRule, SelectingRule
from smdebug.rules.builtin.evidence import trial_holds
from smdebug.rules.builtin.reading import ValueKey, close_each
from smdebug.rules.builtin.tensors import _COLLECTIONS, _REGEX
from smdebug.rules.finding import show_value
from smdebug.rules.params import as_bool, as_float, as_int, as_regex_list, bounded, optional

if TYPE_CHECKING:
    from smdebug.trials.trial import Trial

__all__ = ["WeightUpdateRatio", "UnchangedTensor", "PoorWeightInitialization"]


def history_mode(trial: Any) -> Any:
    """TRAIN when the trial saved TRAIN steps, else GLOBAL (docs/builtin-rules.md §1.5)."""
    return ModeKeys.TRAIN if ModeKeys.TRAIN in trial.modes() else ModeKeys.GLOBAL


class _RecentValues:
    """Values of (tensor, global step) for every worker, kept from one evaluation to the next."""

    def __init__(self) -> None:
        self._kept: dict = {}  # (name, global step) -> {worker: value}

    def get(self, reader: Any, trial: Any, wanted: Any) -> dict:
        """{(name, global step): {worker: value}} for ``wanted`` (name, global step) pairs; the
        ones not kept are read in one batched read. Only ``wanted`` is kept afterwards."""
        wanted = list(dict.fromkeys(wanted))
        missing = [w for w in wanted if w not in self._kept]
        if missing:
            got: dict = {w: {} for w in missing}
            for v in reader.values(trial, [ValueKey(name, step) for name, step in missing]):
                got[(v.name, v.step)][v.worker] = v.value
            self._kept.update(got)
        self._kept = {w: self._kept[w] for w in wanted}
        return self._kept


class _SavedSteps:
    """Each tensor's saved steps of a mode, listed once while the trial has read nothing new."""

    _seen: Any  # what the trial had read when the steps were listed

    def __init__(self) -> None:
        self._seen = None
        self._steps: dict = {}

    def up_to(self, trial: Any, name: Any, step: Any, n: Any, mode: Any) -> list:
        """The last ``n`` saved steps of ``name`` at or before ``step`` (of ``mode``)."""
        seen = (trial.index_version, trial.last_complete_step, trial.loaded_all_steps)
        if seen != self._seen:
            self._seen, self._steps = seen, {}
        steps = self._steps.get((name, mode))
        if steps is None:
            steps = self._steps[(name, mode)] = trial.tensor(name).steps(mode=mode)
        i = bisect_right(steps, step)
        return steps[max(i - n, 0) : i]


class _HistoryRule:
    """Mixin: a history rule evaluates the steps of its mode (:func:`history_mode`), each compared
    with earlier saved steps; the values read at one step are kept for the next."""

    base_trial: Any  # the rule's (the mixin goes with a BuiltinRule)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._recent = _RecentValues()
        self._saved_steps = _SavedSteps()

    def _prev_steps(self, name: Any, step: Any, n: Any, mode: Any) -> list:
        return self._saved_steps.up_to(self.base_trial, name, step, n, mode)

    def invoke_at_step(self, step: int) -> bool:
        """Global ``step`` compared (:meth:`_compare`) as a step of the history's mode; a step of
        another mode is skipped."""
        trial = self.base_trial
        mode = history_mode(trial)
        if mode == ModeKeys.GLOBAL:
            return self._compare(step, mode, step)
        if trial.mode(step) != mode:
            return False
        return self._compare(step, mode, trial.mode_step(step))

    def _compare(self, step: int, mode: ModeKeys, s: int) -> bool:
        """Judge global ``step``, step ``s`` of ``mode``; True when the rule fires."""
        raise NotImplementedError


_positive_int = bounded(as_int, 1)
_at_least_two = bounded(as_int, 2)


_non_negative = bounded(as_float, 0.0)


class WeightUpdateRatio(_HistoryRule, ReadingRule):
    """Fires when ``‖w_s − w_p‖ / (‖w_p‖ + epsilon)`` (L2 norms) of a tensor of the ``weights``
    collection is above ``large_threshold`` or below ``small_threshold``; ``p`` is the previous
    saved step (of TRAIN mode if the trial has TRAIN steps). With ``num_steps``, a previous step
    older than ``s − num_steps`` is not compared (``num_steps`` counts steps of that mode). A
    frozen layer (no update: ratio 0) fires. Every worker is checked; ``small_threshold`` above
    ``large_threshold`` is refused when the rule is built.

    NaN and inf: a ratio that is not finite (weights that hold NaN or inf, now or at ``p``) fires,
    naming it: an update that made the weights non-finite is not a sane update size.

    Nothing judged: the reason says whether the ``weights`` collection holds no tensor (and what
    the trial holds), a weight has one saved step only (two are compared), or its previous saved
    step is further back than ``num_steps``.
    """

    report_needs = {"collection": "weights"}  # what smdebug report needs saved to run it
    params = (
        Param("num_steps", optional(_positive_int), None, "compare only with a step at most this far back"),
        Param("large_threshold", as_float, "10.0", "ratio above which the rule fires"),
        Param("small_threshold", as_float, "0.00000001", "ratio below which the rule fires"),
        Param("epsilon", _non_negative, "0.000000001", "added to the weight norm"),
    )
    # the parameters, parsed when the rule is built (see ``params``)
    num_steps: int | None
    large_threshold: float
    small_threshold: float
    epsilon: float
    hook_collections = (HookCollection("weights", {"save_interval": "500"}),)

    def __init__(self, base_trial: Trial, action_str: str = "", **params: Any) -> None:
        super().__init__(base_trial, action_str=action_str, **params)
        if self.small_threshold > self.large_threshold:
            raise RuleConfigurationError(
                self.rule_name,
                "small_threshold",
                f"{self.small_threshold} is above large_threshold {self.large_threshold}",
            )

    def _compare(self, step: int, mode: ModeKeys, s: int) -> bool:
        trial = self.base_trial
        pairs = []
        names = trial.tensor_names(step=step, collection="weights")
        for name in names:
            prev = self._prev_steps(name, s, 2, mode)
            if len(prev) < 2 or prev[-1] != s:
                if not self.tensors_evaluated and len(prev) < 2:
                    self.unjudged(
                        f"{name} has {len(prev)} saved {mode.name} step up to {mode.name} step {s}: WeightUpdateRatio "
                        "compares two saved steps; save the weights at more steps"
                    )
                continue
            if self.num_steps is not None and prev[0] < s - self.num_steps:
                if not self.tensors_evaluated:
                    self.unjudged(
                        f"the previous saved {mode.name} step of {name} ({prev[0]}) is {s - prev[0]} steps "
                        f"before {s}, more than num_steps {self.num_steps}: raise num_steps or save the "
                        "weights more often"
                    )
                continue
            g_prev = prev[0] if mode == ModeKeys.GLOBAL else trial.global_step(mode, prev[0])
            pairs.append((name, g_prev, prev[0]))
        if not names and not self.tensors_evaluated and not trial.tensor_names(collection="weights"):
            self.unjudged(f"the 'weights' collection holds no tensor; the trial holds {trial_holds(trial)}")
        values = self._recent.get(self.reader, trial, [p for name, g, _ in pairs for p in ((name, g), (name, step))])
        for name, g_prev, p in pairs:
            before = values[(name, g_prev)]
            for worker, now in values[(name, step)].items():
                old = before.get(worker)
                if old is None or old.shape != now.shape:
                    continue
                self.evaluated()
                old64 = old.astype(np.float64)
                with np.errstate(all="ignore"):  # inf weights give NaN or inf, quietly
                    ratio = float(
                        np.linalg.norm((now - old64).ravel()) / (np.linalg.norm(old64.ravel()) + self.epsilon)
                    )
                if ratio > self.large_threshold or ratio < self.small_threshold or not np.isfinite(ratio):
                    return self._found(step, name, worker, ratio, mode, p, s)
        return False

    def _found(self, step: int, name: str, worker: str, ratio: float, mode: Any, p: int, s: int) -> bool:
        if not np.isfinite(ratio):
            condition, why = f"ratio {show_value(ratio)} is not finite", "the weights or their update hold NaN or inf"
        elif ratio > self.large_threshold:
            condition = f"ratio {show_value(ratio)} > large_threshold {show_value(self.large_threshold)}"
            why = f"above large_threshold {show_value(self.large_threshold)}"
        else:
            condition = f"ratio {show_value(ratio)} < small_threshold {show_value(self.small_threshold)}"
            why = f"below small_threshold {show_value(self.small_threshold)}" + (
                ": the weights did not change" if ratio == 0 else ""
            )
        return self.found(
            step,
            f"update ratio |w - w_prev| / |w_prev| of {name} is {show_value(ratio)} over "
            f"{mode.name} steps {p} -> {s}, {why}",
            tensors=[name],
            values=[ratio],
            condition=condition,
            worker=worker,
        )


class UnchangedTensor(_HistoryRule, SelectingRule):
    """Fires when a selected tensor is ``numpy.allclose`` to itself over the last ``num_steps``
    saved steps (they need not be consecutive): every older step is compared with the current one
    (``allclose`` is not transitive). Steps are TRAIN steps when the trial has any, else GLOBAL
    steps (the reference's convention for WeightUpdateRatio, applied here too, so that EVAL
    phases do not fire). Every worker is checked on its own. ``num_steps`` below 2 is refused
    (nothing to compare). No selection means every tensor, with a warning.

    NaN and inf: compared as ``numpy.allclose`` compares them: NaN equals nothing unless
    ``equal_nan=True`` (then NaNs at the same places are unchanged), inf equals an inf of the same
    sign. So a tensor stuck at NaN fires only with ``equal_nan=True``; one stuck at inf fires.

    Nothing judged: the reason says whether the selection matched no tensor (what was asked,
    which collections the trial holds) or a tensor has fewer saved steps than ``num_steps``.
    """

    params = (
        _COLLECTIONS,
        _REGEX,
        Param("num_steps", _at_least_two, "3", "how many saved steps must be alike"),
        Param("rtol", _non_negative, "1e-05", "numpy.allclose rtol"),
        Param("atol", _non_negative, "1e-08", "numpy.allclose atol"),
        Param("equal_nan", as_bool, "False", "numpy.allclose equal_nan"),
    )
    # the parameters, parsed when the rule is built (see ``params``)
    collection_names: list[str]
    tensor_regex: list[re.Pattern]
    num_steps: int
    rtol: float
    atol: float
    equal_nan: bool
    warn_on_all = True

    def __init__(self, base_trial: Trial, action_str: str = "", **params: Any) -> None:
        super().__init__(base_trial, action_str=action_str, **params)
        self._check_selection()

    def _compare(self, step: int, mode: ModeKeys, s: int) -> bool:
        trial = self.base_trial
        histories = []
        selected = self.selected(step)
        for name in selected:
            hist = self._prev_steps(name, s, self.num_steps, mode)
            if len(hist) < self.num_steps or hist[-1] != s:
                if not self.tensors_evaluated and len(hist) < self.num_steps:
                    self.unjudged(
                        f"fewer saved steps of {name} than num_steps={self.num_steps} needs: {len(hist)} "
                        f"saved {mode.name} steps up to {mode.name} step {s}; lower num_steps (2 at least) "
                        "or save the tensor at more steps"
                    )
                continue
            mode_hist = hist
            if mode != ModeKeys.GLOBAL:
                hist = [trial.global_step(mode, h) for h in hist]
            histories.append((name, hist, mode_hist))
        if not selected and not self.tensors_evaluated and not self.selected(None):
            self.unjudged(f"{self.selection()} matched no tensor; the trial holds {trial_holds(trial)}")
        values = self._recent.get(self.reader, trial, [(name, g) for name, hist, _ in histories for g in hist])
        olds, news, who = [], [], []
        for name, hist, mode_hist in histories:
            for worker, now in values[(name, step)].items():
                before = [values[(name, g)].get(worker) for g in hist[:-1]]
                if any(o is None or o.shape != now.shape for o in before):
                    continue
                olds.extend(before)
                news.extend([now] * len(before))
                who.extend([(name, worker, tuple(mode_hist))] * len(before))
        self.evaluated(len(set(who)))
        if not olds:
            return False
        close = close_each(olds, news, self.rtol, self.atol, self.equal_nan)
        unchanged: dict = {}
        for ok, key in zip(close, who):
            unchanged[key[:2]] = unchanged.get(key[:2], True) and bool(ok)
        for i, (name, worker, steps) in enumerate(who):
            if unchanged[(name, worker)] and (i == 0 or who[i - 1] != who[i]):
                change = max(_max_change(o, n) for o, n, w in zip(olds, news, who) if w == who[i])
                return self.found(
                    step,
                    f"{name} did not change over {mode.name} steps {', '.join(map(str, steps))} (largest "
                    f"change {show_value(change)}, within rtol {show_value(self.rtol)} and atol "
                    f"{show_value(self.atol)})",
                    tensors=[name],
                    values=[change],
                    condition=f"numpy.allclose(rtol={show_value(self.rtol)}, atol={show_value(self.atol)}, "
                    f"equal_nan={self.equal_nan}) over {len(steps)} saved steps (num_steps {self.num_steps})",
                    worker=worker,
                )
        return False


def _max_change(old: np.ndarray, new: np.ndarray) -> float:
    """The largest ``|new - old|``: 0 where both are NaN or the same inf; NaN where only one is NaN."""
    if old.size == 0:
        return 0.0
    a, b = old.astype(np.float64), new.astype(np.float64)
    with np.errstate(all="ignore"):
        d = np.where((np.isnan(a) & np.isnan(b)) | (a == b), 0.0, np.abs(b - a))
    return float(np.max(d))


class PoorWeightInitialization(ReadingRule):
    """Fires when the weights look poorly initialized in the first ``steps`` saved steps: the
    activation inputs' variances differ too much, a gradient barely varies, or the loss stalls.

    During the first ``steps`` analyzed (saved) steps, it fires when any of three checks does:

    - the largest variance of the activation inputs (``activation_inputs_regex``, one tensor per
      layer) is more than ``threshold`` times the smallest (or the smallest is 0 and the largest
      not), per worker;
    - a tensor of the ``gradients`` collection has ``p95 − p5 < distribution_range``;
    - a scalar tensor of the ``losses`` collection has not improved for ``patience`` analyzed steps.

    A step counts as analyzed when it holds any of those tensors (``steps`` counts saved steps,
    not step numbers: with save_interval 500, step numbers would leave one step). After ``steps``
    the rule is inert. The loss improves when it is below its best so far.

    NaN and inf: an activation-input variance or a gradient's ``p95 - p5`` that is not finite
    fires its check (NaN or inf in the first steps is a broken initialization, whatever the
    thresholds); a NaN or inf loss is no improvement (it adds to the wait).

    Nothing judged: the reason says which tensors were asked (the regex, ``gradients``,
    ``losses``) and which collections the trial holds.
    """

    params = (
        Param("activation_inputs_regex", as_regex_list, ".*relu_input", "activation inputs, one tensor per layer"),
        Param("threshold", as_float, "10.0", "max/min ratio of the layers' activation-input variances"),
        Param("distribution_range", _non_negative, "0.001", "smallest allowed p95 - p5 of a gradient"),
        Param("patience", _positive_int, "5", "analyzed steps without loss improvement that fire"),
        Param("steps", _positive_int, "10", "how many saved steps are analyzed"),
    )
    # the parameters, parsed when the rule is built (see ``params``)
    activation_inputs_regex: list[re.Pattern]
    threshold: float
    distribution_range: float
    patience: int
    steps: int
    hook_collections = (HookCollection("relu_input", {"include_regex": ".*relu_input", "save_interval": "500"}),)

    def __init__(self, base_trial: Trial, action_str: str = "", **params: Any) -> None:
        super().__init__(base_trial, action_str=action_str, **params)
        self.analyzed = 0
        self._best: dict = {}  # (loss name, worker) -> best loss so far
        self._waited: dict = {}  # (loss name, worker) -> analyzed steps without improvement

    def invoke_at_step(self, step: int) -> bool:
        if self.analyzed >= self.steps:
            return False
        trial = self.base_trial
        acts: set = set()
        for r in self.activation_inputs_regex:
            acts.update(trial.tensor_names(step=step, regex=r.pattern))
        grads = set(trial.tensor_names(step=step, collection="gradients"))
        losses = set(trial.tensor_names(step=step, collection="losses"))
        values = self.reader.step(trial, step, sorted(acts | grads | losses))
        if not values:
            if not self.tensors_evaluated:
                asked = "activation_inputs_regex [" + ", ".join(repr(r.pattern) for r in self.activation_inputs_regex)
                self.unjudged(
                    f"{asked}], the 'gradients' and the 'losses' collections matched no tensor saved at "
                    f"step {step}; the trial holds {trial_holds(trial)}"
                )
            return False
        self.evaluated(len(values))
        self.analyzed += 1
        with np.errstate(all="ignore"):  # inf and NaN give NaN or inf: the checks say so
            return self._checks(step, values, acts, grads, losses)

    def _checks(self, step: Any, values: Any, acts: Any, grads: Any, losses: Any) -> bool:
        return (
            self._variances(step, [v for v in values if v.name in acts])
            or self._gradients(step, [v for v in values if v.name in grads])
            or self._loss(step, [v for v in values if v.name in losses])
        )

    def _variances(self, step: Any, values: Any) -> bool:
        per_worker: dict = {}
        for v in values:
            if v.value.size:
                per_worker.setdefault(v.worker, {})[v.name] = float(np.var(v.value, dtype=np.float64))
        for worker, var in per_worker.items():
            bad = [n for n, x in var.items() if not np.isfinite(x)]
            if bad:
                return self.found(
                    step,
                    f"the activation-input variance of {bad[0]} is {show_value(var[bad[0]])}",
                    tensors=[bad[0]],
                    values=[var[bad[0]]],
                    condition="variance is not finite",
                    worker=worker,
                )
            if len(var) < 2:
                continue
            lo_name, hi_name = min(var, key=var.get), max(var, key=var.get)
            lo, hi = var[lo_name], var[hi_name]
            if (lo == 0 < hi) or (lo > 0 and hi / lo > self.threshold):
                ratio = hi / lo if lo > 0 else float("inf")
                return self.found(
                    step,
                    f"activation-input variances range from {show_value(lo)} ({lo_name}) to {show_value(hi)} "
                    f"({hi_name}): {show_value(ratio)} times, more than threshold {show_value(self.threshold)}",
                    tensors=[lo_name, hi_name],
                    values=[lo, hi],
                    condition=f"largest / smallest variance {show_value(ratio)} > threshold {show_value(self.threshold)}",
                    worker=worker,
                )
        return False

    def _gradients(self, step: Any, values: Any) -> bool:
        for v in values:
            if v.value.size == 0:
                continue
            p5, p95 = np.percentile(v.value.astype(np.float64, copy=False), [5, 95])
            width = float(p95 - p5)
            if not np.isfinite(width):
                return self.found(
                    step,
                    f"{v.name} holds NaN or inf (p95 - p5 = {show_value(width)})",
                    tensors=[v.name],
                    values=[width],
                    condition="p95 - p5 is not finite",
                    worker=v.worker,
                )
            if width < self.distribution_range:
                return self.found(
                    step,
                    f"{v.name} has p95 - p5 = {show_value(width)}, less than distribution_range "
                    f"{show_value(self.distribution_range)}: the gradients barely differ",
                    tensors=[v.name],
                    values=[width],
                    condition=f"p95 - p5 {show_value(width)} < distribution_range "
                    f"{show_value(self.distribution_range)}",
                    worker=v.worker,
                )
        return False

    def _loss(self, step: Any, values: Any) -> bool:
        for v in values:
            if v.value.size != 1:
                continue
            key, loss = (v.name, v.worker), float(v.value.ravel()[0])
            best = self._best.get(key)
            if np.isfinite(loss) and (best is None or loss < best):
                self._best[key], self._waited[key] = loss, 0
                continue
            self._waited[key] = self._waited.get(key, 0) + 1
            if self._waited[key] >= self.patience:
                return self.found(
                    step,
                    f"{v.name} has not improved on its best {show_value(best)} for {self._waited[key]} analyzed "
                    f"steps (patience {self.patience}); now {show_value(loss)}",
                    tensors=[v.name],
                    values=[loss] if best is None else [loss, best],
                    condition=f"no value below the best for {self._waited[key]} analyzed steps >= patience "
                    f"{self.patience}",
                    worker=v.worker,
                )
        return False
