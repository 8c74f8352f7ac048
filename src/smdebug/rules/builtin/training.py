"""Rules on the course of the loss: LossNotDecreasing, Overfit, Overtraining (StalledTrainingRule,
which watches the clock: stalled.py).

Specification: docs/builtin-rules.md 3.7, 3.13, 3.14 and its ambiguity register. Losses are scalars.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from typing import TYPE_CHECKING, Any

import numpy as np

from smdebug.core.metric_names import is_increasing_metric
from smdebug.core.modes import ModeKeys
from smdebug.exceptions import RuleConfigurationError
from smdebug.rules.builtin.base import BuiltinRule, HookCollection, Param, select_tensor_names, value_or_none
from smdebug.rules.builtin.evidence import first_worker, trial_holds
from smdebug.rules.finding import show_value
from smdebug.rules.params import as_bool, as_float, as_int, as_mode, as_regex_list, as_str_list, optional

if TYPE_CHECKING:
    from smdebug.trials.trial import Trial

__all__ = ["LossNotDecreasing", "Overfit", "Overtraining"]

LOSSES = "losses"
# XGBoost has no modes: training and validation metrics are told apart by their name's prefix
_TRAIN_METRIC = re.compile(r"^train-(.+)$")
_VALID_METRIC = re.compile(r"^(?:validation|valid|eval|test)-(.+)$")


def _require(rule: Any, name: Any, ok: Any, message: Any) -> Any:
    if not ok:
        raise RuleConfigurationError(type(rule).__name__, name, message)


def _steps_phrase(steps: list, mode: Any) -> str:
    """``6 saved TRAIN steps (0 to 5)``."""
    many = "s" if len(steps) != 1 else ""
    span = f" ({steps[0]} to {steps[-1]})" if len(steps) > 1 else (f" ({steps[0]})" if steps else "")
    return f"{len(steps)} saved {mode.name} step{many}{span}"


class _LossRule(BuiltinRule):
    """What the loss rules share: which tensors are losses, and their scalar values."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._scalar: dict = {}  # tensor name -> whether its values have one element

    def _scalar_value(self, name: Any, step: Any, mode: Any) -> Any:
        """The tensor's value at (step, mode) as a float; None if not saved there or not a scalar."""
        if self._scalar.get(name) is False:
            return None
        v = value_or_none(self.base_trial, name, step, mode)
        if v is None:
            return None
        arr = np.asarray(v)
        ok = arr.size == 1 and arr.dtype.kind in "fiub"
        self._scalar[name] = ok
        return float(arr.ravel()[0]) if ok else None

    def _loss_names(
        self, step: Any, collection_names: Any = (), tensor_regex: Any = (), use_losses: Any = True
    ) -> list:
        colls = list(collection_names)
        if use_losses and LOSSES not in colls and LOSSES in self.base_trial.collections():
            colls.append(LOSSES)
        return select_tensor_names(self.base_trial, step, colls, tensor_regex, rule_name=self.rule_name)


class LossNotDecreasing(_LossRule):
    """Fires when a loss did not decrease enough over ``num_steps`` steps (spec 3.7).

    ``dec = 100 * (prev - cur) / |prev|``, comparing a loss with its value at the latest saved
    step at least ``num_steps`` (steps of the evaluated mode) earlier, at most once every
    ``num_steps`` steps per tensor. A loss that did not change (``dec == 0``) fires, even with
    ``diff_percent=0``. Reading 1 of the spec (reference): when the loss decreased
    (``dec > 0``) fire iff ``dec < diff_percent``; when it increased fire iff the increase is
    over ``increase_threshold_percent``. ``strict=True`` (our addition, ambiguity register #1)
    fires on any increase too (reading 2). ``mode``: absent means EVAL, else TRAIN, else GLOBAL,
    whichever first has steps of the selected tensors (register #2); an explicit mode is honoured.
    The reported step is the global step.

    NaN and inf: a loss whose current value is NaN or infinite fires at once, at that step (it
    is not decreasing; NaN compares as False, so it used to pass), whatever ``num_steps``. A
    finite value compared with an earlier NaN or inf does not fire (that earlier value fired).
    An increase to a huge finite value fires through ``increase_threshold_percent``.

    Nothing judged: the reason says whether the selection matched no tensor (what was asked,
    which collections the trial holds), no selected tensor is a scalar, or the loss has too few
    saved steps of the mode for ``num_steps`` (how many, and what to change).
    """

    report_needs = {"collection": LOSSES}  # what smdebug report needs saved to run it
    params = (
        Param("collection_names", as_str_list, None),
        Param("tensor_regex", as_regex_list, None),
        Param("use_losses_collection", as_bool, "True"),
        Param("num_steps", as_int, "10"),
        Param("diff_percent", as_float, "0.1"),
        Param("increase_threshold_percent", as_float, "5"),
        Param("mode", optional(as_mode), None),
        Param("strict", as_bool, "False"),
    )
    # the parameters, parsed when the rule is built (see ``params``)
    collection_names: list[str]
    tensor_regex: list[re.Pattern]
    use_losses_collection: bool
    num_steps: int
    diff_percent: float
    increase_threshold_percent: float
    mode: Any | None
    strict: bool
    hook_collections = (HookCollection(LOSSES, {"save_interval": "500"}),)

    @classmethod
    def report_params(cls, trial: Any) -> dict | None:
        params = super().report_params(trial)
        if params is not None and any(m.name == "TRAIN" for m in trial.modes()):
            params["mode"] = "TRAIN"  # the training loss (the rule's own default prefers EVAL)
        return params

    def __init__(self, base_trial: Trial, action_str: str = "", **params: Any) -> None:
        super().__init__(base_trial, action_str=action_str, **params)
        _require(self, "num_steps", self.num_steps >= 1, f"must be at least 1, got {self.num_steps}")
        _require(self, "diff_percent", 0 <= self.diff_percent < 100, f"must be in [0, 100), got {self.diff_percent}")
        _require(
            self,
            "increase_threshold_percent",
            self.increase_threshold_percent >= 0,
            f"must be at least 0, got {self.increase_threshold_percent}",
        )
        self.last_checked: dict = {}
        self._mode = self.mode

    def _resolve_mode(self, names: Any) -> Any:
        if self._mode is not None:
            return self._mode
        for m in (ModeKeys.EVAL, ModeKeys.TRAIN, ModeKeys.GLOBAL):
            if any(self.base_trial.tensor(n).steps(mode=m) for n in names):
                self._mode = m
                return m
        return None

    def _change(self, prev: float, cur: float) -> float:
        """``dec``: the decrease from prev to cur, percent of |prev| (negative: an increase)."""
        if prev == 0:
            return 0.0 if cur == 0 else (math.inf if cur < prev else -math.inf)
        return 100.0 * (prev - cur) / abs(prev)

    def _condition(self, prev: float, cur: float) -> str:
        """The comparison that holds when the loss is not decreasing enough, else ""."""
        dec = self._change(prev, cur)
        if not math.isfinite(prev) or math.isnan(dec):
            return ""
        if dec == 0:  # did not decrease at all (a flat loss): fires whatever diff_percent is
            return "no change"
        if dec > 0:
            return (
                f"decrease {show_value(dec)} % < diff_percent {show_value(self.diff_percent)}"
                if dec < self.diff_percent
                else ""
            )
        if self.strict:
            return f"increase {show_value(-dec)} % (strict: any increase)"
        if -dec > self.increase_threshold_percent:
            return f"increase {show_value(-dec)} % > increase_threshold_percent {show_value(self.increase_threshold_percent)}"
        return ""

    def not_decreasing(self, prev: float, cur: float) -> bool:
        return bool(self._condition(prev, cur))

    def invoke_at_step(self, step: int) -> bool:
        trial = self.base_trial
        names = self._loss_names(step, self.collection_names, self.tensor_regex, self.use_losses_collection)
        if not names:
            self._nothing_selected()
            return False
        mode = self._resolve_mode(names)
        if mode is None:
            return False
        if mode != ModeKeys.GLOBAL:
            if trial.mode(step) != mode:
                if not self.tensors_evaluated and not any(trial.tensor(n).steps(mode=mode) for n in names):
                    self.unjudged(
                        f"the selected losses ({', '.join(names[:3])}) have no saved {mode.name} step "
                        f"(mode={mode.name}; the trial's modes: {', '.join(m.name for m in trial.modes())})"
                    )
                return False
            s = trial.mode_step(step)
            if s is None:
                return False
        else:
            s = step
        for n in names:
            cur = self._scalar_value(n, s, mode)
            if cur is None:
                continue
            if not math.isfinite(cur):  # NaN or inf: not decreasing, whatever num_steps
                self.last_checked[n] = s
                self.evaluated()
                return self.found(
                    step,
                    f"{n} is {show_value(cur)}: a NaN or infinite loss is not decreasing",
                    tensors=[n],
                    values=[cur],
                    condition=f"{n} is {show_value(cur)}",
                    worker=first_worker(trial, n, s, mode),
                )
            last = self.last_checked.get(n)
            if last is not None and s < last + self.num_steps:
                continue
            saved = trial.tensor(n).steps(mode=mode)
            i = bisect_right(saved, s - self.num_steps)
            if i == 0:  # no saved step num_steps before this one
                if not self.tensors_evaluated:
                    self._too_few(n, saved[: bisect_right(saved, s)], mode)
                continue
            p = saved[i - 1]
            prev = self._scalar_value(n, p, mode)
            if prev is None:
                continue
            self.last_checked[n] = s
            self.evaluated()
            condition = self._condition(prev, cur)
            if condition:
                dec = self._change(prev, cur)
                change = "no change" if dec == 0 else f"{'+' if dec < 0 else ''}{show_value(-dec)} %"
                return self.found(
                    step,
                    f"{n} went from {show_value(prev)} to {show_value(cur)} over {mode.name} "
                    f"steps {p} -> {s} ({change}, {self._why(dec)})",
                    tensors=[n],
                    values=[prev, cur],
                    condition=condition,
                    worker=first_worker(trial, n, s, mode),
                )
        if not self.tensors_evaluated and all(self._scalar.get(n) is False for n in names):
            self.unjudged(
                f"no selected tensor is a scalar ({', '.join(names[:3])}{', ...' if len(names) > 3 else ''}): "
                "a loss is one number per step; select the loss with tensor_regex or collection_names"
            )
        return False

    def _why(self, dec: float) -> str:
        if dec == 0:
            return f"a loss must decrease at least diff_percent {show_value(self.diff_percent)} % over num_steps"
        if dec > 0:
            return f"less than diff_percent {show_value(self.diff_percent)}"
        if self.strict:
            return "strict: any increase fires"
        return f"more than increase_threshold_percent {show_value(self.increase_threshold_percent)}"

    def _nothing_selected(self) -> None:
        """Say what was asked and what the trial holds, when the selection matches no tensor at all."""
        if self.tensors_evaluated or self._loss_names(
            None, self.collection_names, self.tensor_regex, self.use_losses_collection
        ):
            return  # judged before, or the losses are saved at other steps
        asked = []
        if self.collection_names:
            asked.append(f"collection_names {self.collection_names}")
        if self.tensor_regex:
            asked.append("tensor_regex [" + ", ".join(repr(r.pattern) for r in self.tensor_regex) + "]")
        if self.use_losses_collection:
            asked.append("the 'losses' collection")
        self.unjudged(
            f"{' and '.join(asked) or 'the selection'} matched no tensor; the trial holds "
            f"{trial_holds(self.base_trial)}"
        )

    def _too_few(self, name: str, saved: list, mode: Any) -> None:
        """Say that ``name`` has no saved step ``num_steps`` before another, and what to change."""
        span = saved[-1] - saved[0] if saved else 0
        lower = f"lower num_steps (to {span} at most here) or " if span else ""
        hint = ""
        if self.mode is None:  # the default picked this mode: another may have enough steps
            for m in (ModeKeys.TRAIN, ModeKeys.GLOBAL):
                other = self.base_trial.tensor(name).steps(mode=m) if m != mode else []
                if other and other[-1] - other[0] >= self.num_steps:
                    hint = f"; its {len(other)} {m.name} steps would do: pass mode={m.name}"
                    break
        self.unjudged(
            f"fewer saved steps of {name} than num_steps={self.num_steps} needs: {_steps_phrase(saved, mode)}, "
            f"none {self.num_steps} {mode.name} steps before another; {lower}save the loss more often"
            f"{hint}"
        )


def _phase(mode: Any, name: Any) -> str | None:
    """'train' or 'validation' for a loss saved in ``mode`` under ``name``; None for PREDICT."""
    if mode == ModeKeys.GLOBAL:
        return "validation" if _VALID_METRIC.match(name) else "train"
    return {ModeKeys.TRAIN: "train", ModeKeys.EVAL: "validation"}.get(mode)


class Overfit(_LossRule):
    """Fires when validation loss exceeds training loss by ``ratio_threshold`` (relative) for
    ``patience`` consecutive checks (spec 3.13, reference choice).

    With modes (PyTorch, TF, MXNet): TRAIN and EVAL values of each loss tensor are buffered; at
    the first TRAIN step after an EVAL phase, ``r = (mean(EVAL phase) - mean(preceding TRAIN
    phase)) / |mean(TRAIN)|`` is computed per tensor name and both buffers are cleared; the
    rule fires there when ``patience`` checks in a row had ``r > ratio_threshold``. Without
    modes (XGBoost), ``train-<metric>`` is compared with ``validation-<metric>`` (also
    ``valid-``, ``eval-``, ``test-``) at each step, the metrics that grow excluded (auc, aucpr, map,
    ndcg, pre; ``smdebug.core.metric_names.INCREASING_METRICS``). Loss tensors:
    ``tensor_regex`` if given, else the ``losses`` collection, else every scalar tensor.
    Global steps below ``start_step`` are ignored.

    NaN and inf: a check whose training mean is NaN or infinite, or whose validation mean is NaN,
    is not judged and leaves the count of checks in a row as it was (a diverged loss is
    LossNotDecreasing's finding, not overfitting); a validation mean of +inf over a finite
    training mean is infinitely above it (``r = inf``) and counts. Values count as judged when a
    check compares them: buffered values that no check reached are not.

    Nothing judged: the reason says whether no loss was selected (what was asked, which
    collections the trial holds), the losses have no EVAL values, no TRAIN step followed an EVAL
    phase, no name is saved in both phases, or (without modes) no ``train-``/``validation-`` pair.
    """

    params = (
        Param("tensor_regex", as_regex_list, None),
        Param("start_step", as_int, "0"),
        Param("patience", as_int, "1"),
        Param("ratio_threshold", as_float, "0.1"),
    )
    # the parameters, parsed when the rule is built (see ``params``)
    tensor_regex: list[re.Pattern]
    start_step: int
    patience: int
    ratio_threshold: float

    def __init__(self, base_trial: Trial, action_str: str = "", **params: Any) -> None:
        super().__init__(base_trial, action_str=action_str, **params)
        _require(self, "patience", self.patience >= 1, f"must be at least 1, got {self.patience}")
        _require(self, "start_step", self.start_step >= 0, f"must be at least 0, got {self.start_step}")
        self._buf: dict[str, dict[Any, Any]] = {"train": {}, "validation": {}}
        self._phase_steps: dict[str, list] = {"train": [], "validation": []}  # mode steps of the buffered phases
        self._count: dict = {}
        self._seen: dict = {"train": set(), "validation": set(), "checks": 0, "pairs": 0}

    def _ratio(self, train: float, val: float) -> float | None:
        """``(val - train) / |train|``; None when the check is not judged (see the NaN paragraph)."""
        if math.isnan(val) or not math.isfinite(train) or val == -math.inf:
            return None
        if val == math.inf:
            return math.inf
        if train == 0:
            return math.inf if val > 0 else 0.0
        return (val - train) / abs(train)

    def _exceeds(self, key: Any, train: Any, val: Any) -> float | None:
        """Count the check of ``key``; ``r`` when ``patience`` checks in a row exceeded, else None."""
        r = self._ratio(train, val)
        self.logger.debug("%s: %s train %s validation %s ratio %s", self.rule_name, key, train, val, r)
        if r is None:
            return None
        self._count[key] = self._count.get(key, 0) + 1 if r > self.ratio_threshold else 0
        return r if self._count[key] >= self.patience else None

    def _in_a_row(self, key: Any) -> str:
        return f", {self._count[key]} checks in a row (patience {self.patience})" if self.patience > 1 else ""

    def invoke_at_step(self, step: int) -> bool:
        if step < self.start_step:
            if not self.tensors_evaluated:
                self.unjudged(f"every step evaluated is before start_step {self.start_step}")
            return False
        trial = self.base_trial
        mode = trial.mode(step)
        if mode is None or mode == ModeKeys.PREDICT:
            return False
        names = self._loss_names(step, (), self.tensor_regex, use_losses=not self.tensor_regex)
        if mode == ModeKeys.GLOBAL:
            fired = self._check_metrics(step, names)
        else:
            fired = self._check_modes(step, mode, names)
        if not fired and not self.tensors_evaluated:
            self._say_why_unjudged(names, mode)
        return fired

    def _check_modes(self, step: int, mode: Any, names: Any) -> bool:
        s = self.base_trial.mode_step(step)
        values = {n: v for n in names if (v := self._scalar_value(n, s, mode)) is not None}
        fired = False
        if mode == ModeKeys.TRAIN and self._buf["validation"]:
            fired = self._check_phases(step)
            self._buf = {"train": {}, "validation": {}}
            self._phase_steps = {"train": [], "validation": []}
        kind = "train" if mode == ModeKeys.TRAIN else "validation"
        for n, v in values.items():
            self._buf[kind].setdefault(n, []).append(v)
        if values:
            self._phase_steps[kind].append(s)
            self._seen[kind].update(values)
        return fired

    def _check_phases(self, step: int) -> bool:
        train, val = self._buf["train"], self._buf["validation"]
        self._seen["checks"] += 1
        pairs = [(n, n) for n in sorted(train) if n in val]
        if not pairs and len(train) == 1 and len(val) == 1:  # differently named, one each
            pairs = [(next(iter(train)), next(iter(val)))]
        first = None
        for tn, vn in pairs:
            tm, vm = float(np.mean(train[tn])), float(np.mean(val[vn]))
            r = self._exceeds(tn, tm, vm)
            if self._ratio(tm, vm) is not None:
                self.evaluated(len(train[tn]) + len(val[vn]))
                self._seen["pairs"] += 1
            if r is not None and first is None:
                first = (tn, vn, tm, vm, r)
        if first is None:
            return False
        tn, vn, tm, vm, r = first
        ts, vs = self._phase_steps["train"], self._phase_steps["validation"]
        what = f"validation mean of {vn}" if tn == vn else f"validation mean of {vn} (against {tn})"
        return self.found(
            step,
            f"{what} {show_value(vm)} (EVAL steps {vs[0]} to {vs[-1]}) is above the training mean "
            f"{show_value(tm)} (TRAIN steps {ts[0] if ts else '?'} to {ts[-1] if ts else '?'}) by "
            f"{show_value(100 * r)} %, more than ratio_threshold {show_value(self.ratio_threshold)}"
            f"{self._in_a_row(tn)}",
            tensors=[tn] if tn == vn else [tn, vn],
            values=[tm, vm],
            condition=f"(validation - train) / |train| = {show_value(r)} > ratio_threshold "
            f"{show_value(self.ratio_threshold)}",
            worker=first_worker(self.base_trial, vn, vs[-1], ModeKeys.EVAL),
        )

    def _check_metrics(self, step: Any, names: Any) -> bool:
        train = {m.group(1): n for n in names if (m := _TRAIN_METRIC.match(n)) and not is_increasing_metric(n)}
        first = None
        for n in names:
            m = _VALID_METRIC.match(n)
            if not m or m.group(1) not in train:
                continue
            tv = self._scalar_value(train[m.group(1)], step, ModeKeys.GLOBAL)
            vv = self._scalar_value(n, step, ModeKeys.GLOBAL)
            if tv is None or vv is None:
                continue
            self._seen["pairs"] += 1
            if self._ratio(tv, vv) is not None:
                self.evaluated(2)
            r = self._exceeds(m.group(1), tv, vv)
            if r is not None and first is None:
                first = (train[m.group(1)], n, tv, vv, r, m.group(1))
        if first is None:
            return False
        tn, vn, tv, vv, r, key = first
        return self.found(
            step,
            f"{vn} {show_value(vv)} is above {tn} {show_value(tv)} by {show_value(100 * r)} %, more than "
            f"ratio_threshold {show_value(self.ratio_threshold)}{self._in_a_row(key)}",
            tensors=[tn, vn],
            values=[tv, vv],
            condition=f"(validation - train) / |train| = {show_value(r)} > ratio_threshold "
            f"{show_value(self.ratio_threshold)}",
            worker=first_worker(self.base_trial, vn, step),
        )

    def _say_why_unjudged(self, names: Any, mode: Any) -> None:
        """The reason no check has judged a value yet (called only while none has)."""
        seen = self._seen
        if not names and not self._loss_names(None, (), self.tensor_regex, use_losses=not self.tensor_regex):
            asked = (
                "tensor_regex [" + ", ".join(repr(r.pattern) for r in self.tensor_regex) + "]"
                if self.tensor_regex
                else "the 'losses' collection (else every scalar)"
            )
            self.unjudged(f"{asked} matched no tensor; the trial holds {trial_holds(self.base_trial)}")
        elif mode == ModeKeys.GLOBAL:
            if not seen["pairs"]:
                self.unjudged(
                    f"without modes Overfit compares train-<metric> with validation-<metric> (XGBoost's "
                    f"names); the losses ({', '.join(names[:4]) or 'none here'}) hold no such pair"
                )
            else:
                self.unjudged("every train-/validation- pair compared held NaN or inf")
        elif not seen["validation"]:
            self.unjudged(
                f"the losses ({', '.join(sorted(seen['train'])[:4]) or ', '.join(names[:4])}) have no EVAL "
                "value so far: Overfit compares an EVAL phase's mean with the TRAIN phase before it; save "
                "the loss during validation (hook.set_mode(modes.EVAL))"
            )
        elif not seen["checks"]:
            self.unjudged(
                "no TRAIN step has followed an EVAL phase yet: a check runs at the first TRAIN step after an EVAL phase"
            )
        elif not seen["pairs"]:
            self.unjudged(
                f"no loss compared: TRAIN losses {sorted(seen['train'])} and EVAL losses "
                f"{sorted(seen['validation'])} share no name, or their means were NaN or inf"
            )


class Overtraining(_LossRule):
    """Fires when a training loss has not improved for ``patience_train`` saved steps, or a
    validation loss for ``patience_validation`` saved steps (spec 3.14, reference choice).

    Early-stopping style, per loss tensor and phase (TRAIN/GLOBAL = training, EVAL or an XGBoost
    ``validation-``/``valid-``/``eval-``/``test-`` metric = validation): a value improves when
    it is below the best so far minus ``delta`` (absolute); each other saved value adds one to
    the wait. The two conditions are combined with OR (register #8). Loss tensors: the
    ``losses`` collection, else every scalar tensor.

    NaN and inf: a non-finite value never improves: it adds one to the wait, so a loss that turns
    NaN fires after ``patience`` saved steps, naming its best finite value (if any). A value
    counts as judged once its loss has the ``patience + 1`` saved values of its phase that a
    firing needs; before, the reason says how many there are and what to change.
    """

    params = (
        Param("patience_train", as_int, "5"),
        Param("patience_validation", as_int, "10"),
        Param("delta", as_float, "0.01"),
    )
    # the parameters, parsed when the rule is built (see ``params``)
    patience_train: int
    patience_validation: int
    delta: float

    def __init__(self, base_trial: Trial, action_str: str = "", **params: Any) -> None:
        super().__init__(base_trial, action_str=action_str, **params)
        for p in ("patience_train", "patience_validation"):
            _require(self, p, getattr(self, p) >= 1, f"must be at least 1, got {getattr(self, p)}")
        _require(self, "delta", self.delta >= 0, f"must be at least 0, got {self.delta}")
        self.best: dict = {}
        self.best_step: dict = {}  # (phase, name) -> the step (of its mode) of the best value
        self.wait: dict = {}
        self._seen: dict = {}  # (phase, name) -> saved values read

    def invoke_at_step(self, step: int) -> bool:
        trial = self.base_trial
        mode = trial.mode(step)
        if mode is None:
            return False
        s = trial.mode_step(step) if mode != ModeKeys.GLOBAL else step
        found = None
        names = self._loss_names(step)
        for n in names:
            phase = _phase(mode, n)
            if phase is None or (mode == ModeKeys.GLOBAL and is_increasing_metric(n)):
                continue
            v = self._scalar_value(n, s, mode)
            if v is None:
                continue
            key = (phase, n)
            self._seen[key] = self._seen.get(key, 0) + 1
            patience = self.patience_train if phase == "train" else self.patience_validation
            if self._seen[key] > patience:
                self.evaluated()
            if math.isfinite(v) and v < self.best.get(key, math.inf) - self.delta:
                self.best[key], self.best_step[key], self.wait[key] = v, s, 0
            else:
                self.wait[key] = self.wait.get(key, 0) + 1
            if self.wait[key] >= patience and found is None:
                found = (n, phase, v, patience)
        if found is not None:
            return self._found(step, mode, *found)
        if not self.tensors_evaluated:
            self._say_why_unjudged(names, mode)
        return False

    def _found(self, step: int, mode: Any, name: str, phase: str, v: float, patience: int) -> bool:
        key, p = (phase, name), f"patience_{phase}"
        steps = f"{self.wait[key]} saved {mode.name} steps ({p} {patience})"
        worker = first_worker(self.base_trial, name, step)
        if key not in self.best:
            return self.found(
                step,
                f"{phase} loss {name} has had no finite value for {steps}; now {show_value(v)}",
                tensors=[name],
                values=[v],
                condition=f"no finite value for {self.wait[key]} saved steps >= {p} {patience}",
                worker=worker,
            )
        best = self.best[key]
        return self.found(
            step,
            f"{phase} loss {name} has not improved on its best {show_value(best)} ({mode.name} step "
            f"{self.best_step[key]}) by more than delta {show_value(self.delta)} for {steps}; now {show_value(v)}",
            tensors=[name],
            values=[v, best],
            condition=f"no value below best {show_value(best)} - delta {show_value(self.delta)} for "
            f"{self.wait[key]} saved steps >= {p} {patience}",
            worker=worker,
        )

    def _say_why_unjudged(self, names: Any, mode: Any) -> None:
        """The reason no value has been judged yet (called only while none has)."""
        if not self._seen:
            if not names and not self._loss_names(None):
                self.unjudged(
                    f"the 'losses' collection (else every scalar) matched no tensor; the trial holds "
                    f"{trial_holds(self.base_trial)}"
                )
            return
        (phase, name), n = max(self._seen.items(), key=lambda kv: kv[1])
        p = f"patience_{phase}"
        self.unjudged(
            f"fewer saved steps of {name} than {p}={getattr(self, p)} needs: {n} {phase} values so far, "
            f"and a firing needs {p} + 1; lower {p} or save the loss more often"
        )
