"""Rules on the course of the loss: LossNotDecreasing, Overfit, Overtraining (StalledTrainingRule,
which watches the clock: stalled.py).

Specification: docs/builtin-rules.md 3.7, 3.13, 3.14 and its ambiguity register. Losses are scalars.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from smdebug.core.metric_names import is_increasing_metric
from smdebug.core.modes import ModeKeys
from smdebug.exceptions import RuleConfigurationError
from smdebug.rules.builtin.base import BuiltinRule, HookCollection, Param, select_tensor_names, value_or_none
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

    def _loss_names(self, step: Any, collection_names: Any = (), tensor_regex: Any = (), use_losses: Any = True) -> list:
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
    hook_collections = (HookCollection(LOSSES, {"save_interval": "500"}),)

    @classmethod
    def report_params(cls, trial: Any) -> dict | None:
        params = super().report_params(trial)
        if params is not None and any(m.name == "TRAIN" for m in trial.modes()):
            params["mode"] = "TRAIN"  # the training loss (the rule's own default prefers EVAL)
        return params

    def __init__(self, base_trial: Trial, action_str: str = "", other_trials: Iterable[Trial] | None = None,
                 **params: Any) -> None:
        super().__init__(base_trial, action_str=action_str, other_trials=other_trials, **params)
        _require(self, "num_steps", self.num_steps >= 1, f"must be at least 1, got {self.num_steps}")
        _require(self, "diff_percent", 0 <= self.diff_percent < 100, f"must be in [0, 100), got {self.diff_percent}")
        _require(self, "increase_threshold_percent", self.increase_threshold_percent >= 0,
                 f"must be at least 0, got {self.increase_threshold_percent}")
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

    def not_decreasing(self, prev: float, cur: float) -> bool:
        if prev == 0:
            dec = 0.0 if cur == 0 else (math.inf if cur < prev else -math.inf)
        else:
            dec = 100.0 * (prev - cur) / abs(prev)
        if dec == 0:  # did not decrease at all (a flat loss): fires whatever diff_percent is
            return True
        if dec > 0 or self.strict:
            return dec < self.diff_percent
        return -dec > self.increase_threshold_percent

    def invoke_at_step(self, step: int) -> bool:
        trial = self.base_trial
        names = self._loss_names(step, self.collection_names, self.tensor_regex, self.use_losses_collection)
        if not names:
            return False
        mode = self._resolve_mode(names)
        if mode is None:
            return False
        if mode != ModeKeys.GLOBAL:
            if trial.mode(step) != mode:
                return False
            s = trial.mode_step(step)
        else:
            s = step
        for n in names:
            cur = self._scalar_value(n, s, mode)
            if cur is None:
                continue
            last = self.last_checked.get(n)
            if last is not None and s < last + self.num_steps:
                continue
            older = [x for x in trial.tensor(n).steps(mode=mode) if x <= s - self.num_steps]
            if not older:
                continue
            prev = self._scalar_value(n, max(older), mode)
            if prev is None:
                continue
            self.last_checked[n] = s
            self.evaluated()
            if self.not_decreasing(prev, cur):
                self.logger.info("%s: %s %s -> %s (%s steps %s -> %s)", self.rule_name, n, prev, cur, mode.name,
                                 max(older), s)
                return True
        return False


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
    ``valid-``, ``eval-``, ``test-``) at each step, auc and map excluded. Loss tensors:
    ``tensor_regex`` if given, else the ``losses`` collection, else every scalar tensor.
    Global steps below ``start_step`` are ignored.
    """

    params = (
        Param("tensor_regex", as_regex_list, None),
        Param("start_step", as_int, "0"),
        Param("patience", as_int, "1"),
        Param("ratio_threshold", as_float, "0.1"),
    )

    def __init__(self, base_trial: Trial, action_str: str = "", other_trials: Iterable[Trial] | None = None,
                 **params: Any) -> None:
        super().__init__(base_trial, action_str=action_str, other_trials=other_trials, **params)
        _require(self, "patience", self.patience >= 1, f"must be at least 1, got {self.patience}")
        _require(self, "start_step", self.start_step >= 0, f"must be at least 0, got {self.start_step}")
        self._buf: dict[str, dict[Any, Any]] = {"train": {}, "validation": {}}
        self._count: dict = {}

    def _exceeds(self, key: Any, train: Any, val: Any) -> bool:
        if train == 0 or not (math.isfinite(train) and math.isfinite(val)):
            r = math.inf if val > train else 0.0
        else:
            r = (val - train) / abs(train)
        self._count[key] = self._count.get(key, 0) + 1 if r > self.ratio_threshold else 0
        self.logger.debug("%s: %s train %s validation %s ratio %s", self.rule_name, key, train, val, r)
        return self._count[key] >= self.patience

    def invoke_at_step(self, step: int) -> bool:
        if step < self.start_step:
            return False
        trial = self.base_trial
        mode = trial.mode(step)
        if mode is None or mode == ModeKeys.PREDICT:
            return False
        names = self._loss_names(step, (), self.tensor_regex, use_losses=not self.tensor_regex)
        if mode == ModeKeys.GLOBAL:
            return self._check_metrics(step, names)
        s = trial.mode_step(step)
        values = {n: v for n in names if (v := self._scalar_value(n, s, mode)) is not None}
        self.evaluated(len(values))
        fired = False
        if mode == ModeKeys.TRAIN and self._buf["validation"]:
            fired = self._check_phases()
            self._buf = {"train": {}, "validation": {}}
        phase = self._buf["train" if mode == ModeKeys.TRAIN else "validation"]
        for n, v in values.items():
            phase.setdefault(n, []).append(v)
        return fired

    def _check_phases(self) -> bool:
        train, val = self._buf["train"], self._buf["validation"]
        pairs = [(n, n) for n in sorted(train) if n in val]
        if not pairs and len(train) == 1 and len(val) == 1:  # differently named, one each
            pairs = [(next(iter(train)), next(iter(val)))]
        return any([self._exceeds(tn, float(np.mean(train[tn])), float(np.mean(val[vn]))) for tn, vn in pairs])

    def _check_metrics(self, step: Any, names: Any) -> bool:
        train = {m.group(1): n for n in names if (m := _TRAIN_METRIC.match(n)) and not is_increasing_metric(n)}
        fired = False
        for n in names:
            m = _VALID_METRIC.match(n)
            if not m or m.group(1) not in train:
                continue
            tv = self._scalar_value(train[m.group(1)], step, ModeKeys.GLOBAL)
            vv = self._scalar_value(n, step, ModeKeys.GLOBAL)
            if tv is not None and vv is not None:
                self.evaluated(2)
                fired |= self._exceeds(m.group(1), tv, vv)
        return fired


class Overtraining(_LossRule):
    """Fires when a training loss has not improved for ``patience_train`` saved steps, or a
    validation loss for ``patience_validation`` saved steps (spec 3.14, reference choice).

    Early-stopping style, per loss tensor and phase (TRAIN/GLOBAL = training, EVAL or an XGBoost
    ``validation-``/``valid-``/``eval-``/``test-`` metric = validation): a value improves when
    it is below the best so far minus ``delta`` (absolute); each other saved value adds one to
    the wait. The two conditions are combined with OR (register #8). Loss tensors: the
    ``losses`` collection, else every scalar tensor.
    """

    params = (
        Param("patience_train", as_int, "5"),
        Param("patience_validation", as_int, "10"),
        Param("delta", as_float, "0.01"),
    )

    def __init__(self, base_trial: Trial, action_str: str = "", other_trials: Iterable[Trial] | None = None,
                 **params: Any) -> None:
        super().__init__(base_trial, action_str=action_str, other_trials=other_trials, **params)
        for p in ("patience_train", "patience_validation"):
            _require(self, p, getattr(self, p) >= 1, f"must be at least 1, got {getattr(self, p)}")
        _require(self, "delta", self.delta >= 0, f"must be at least 0, got {self.delta}")
        self.best: dict = {}
        self.wait: dict = {}

    def invoke_at_step(self, step: int) -> bool:
        trial = self.base_trial
        mode = trial.mode(step)
        if mode is None:
            return False
        s = trial.mode_step(step) if mode != ModeKeys.GLOBAL else step
        fired = False
        for n in self._loss_names(step):
            phase = _phase(mode, n)
            if phase is None or (mode == ModeKeys.GLOBAL and is_increasing_metric(n)):
                continue
            v = self._scalar_value(n, s, mode)
            if v is None:
                continue
            self.evaluated()
            key = (phase, n)
            if v < self.best.get(key, math.inf) - self.delta:
                self.best[key], self.wait[key] = v, 0
            else:
                self.wait[key] = self.wait.get(key, 0) + 1
            patience = self.patience_train if phase == "train" else self.patience_validation
            if self.wait[key] >= patience:
                self.logger.info("%s: %s not below %s for %d %s steps", self.rule_name, n, self.best[key], patience, phase)
                fired = True
        return fired
