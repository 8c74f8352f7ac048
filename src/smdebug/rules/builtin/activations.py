"""Rules on layer inputs and outputs: DeadRelu, SaturatedActivation, CheckInputImages, NLPSequenceRatio.

Specification: docs/builtin-rules.md sections 3.9, 3.10, 3.17, 3.18 and its ambiguity register. The
default regexes are MXNet Gluon names; the PyTorch hook names a module's tensors
``<attribute name>_input_<i>`` / ``<attribute name>_output_<i>`` (inside ``nn.Sequential`` the
attribute is the index, e.g. ``1_output_0``; the model itself is ``<ClassName>_input_0``), saved
with the ``inputs``/``outputs`` collections or ``include_regex``. Each rule's docstring gives the
regex a PyTorch user passes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from smdebug.exceptions import RuleConfigurationError
from smdebug.rules.builtin.base import BuiltinRule, HookCollection, Param, select_tensor_names, value_or_none
from smdebug.rules.params import (
    as_float,
    as_float_list,
    as_int,
    as_int_list,
    as_regex,
    as_regex_list,
    as_str_list,
    optional,
)

if TYPE_CHECKING:
    from smdebug.trials.trial import Trial

__all__ = ["DeadRelu", "SaturatedActivation", "CheckInputImages", "NLPSequenceRatio"]


def _numeric(value: Any) -> Any:
    """The value as an ndarray if it is numeric (bool included), else None."""
    if value is None:
        return None
    arr = np.asarray(value)
    return arr if arr.dtype.kind in "fiub" else None


def _percent_of_units_inactive(x: np.ndarray, active: Any, threshold_inactivity: float) -> float:
    """Percent of units (every non-batch element; axis 0 is the batch, a 1-D tensor one sample)
    whose share of samples where ``active`` holds is below ``threshold_inactivity`` percent."""
    x = x.reshape(1, -1) if x.ndim == 1 else x.reshape(x.shape[0], -1)
    if x.size == 0:
        return 0.0
    activity = 100.0 * np.mean(active(x), axis=0)
    return 100.0 * float(np.mean(activity < threshold_inactivity))


def _check_percent(rule: Any, name: Any) -> Any:
    value = getattr(rule, name)
    if not 0 <= value <= 100:
        raise RuleConfigurationError(type(rule).__name__, name, f"is a percentage: 0 to 100, got {value}")


class _LayerActivityRule(BuiltinRule):
    """Per step, per selected tensor (one tensor = one layer): fires when more than
    ``threshold_layer`` percent of the layer's units are inactive (active on fewer than
    ``threshold_inactivity`` percent of the batch's samples). Per step, not accumulated."""

    def _check_thresholds(self) -> Any:
        _check_percent(self, "threshold_inactivity")
        _check_percent(self, "threshold_layer")

    def _selected(self, step: Any) -> list:
        colls = getattr(self, "collection_names", ())
        return select_tensor_names(self.base_trial, step, colls, self.tensor_regex, rule_name=self.rule_name)

    def _active_test(self, name: Any) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    def invoke_at_step(self, step: int) -> bool:
        fired = False
        for name in self._selected(step):
            active = self._active_test(name)
            if active is None:
                continue
            x = _numeric(value_or_none(self.base_trial, name, step))
            if x is None or x.ndim == 0:
                continue
            self.evaluated()
            pct = _percent_of_units_inactive(x.astype(np.float64, copy=False), active, self.threshold_inactivity)
            if pct > self.threshold_layer:
                self.logger.info("%s: %.1f%% of the units of %s are inactive at step %s", self.rule_name, pct, name,
                                 step)
                fired = True
        return fired


class DeadRelu(_LayerActivityRule):
    """Fires when more than ``threshold_layer`` % of a ReLU layer's units are dead: positive on
    fewer than ``threshold_inactivity`` % of a step's samples (spec 3.10; unit = every non-batch
    element, per step, register #12).

    PyTorch: ReLU modules held as attributes named ``relu...`` give ``relu_output_0`` and the
    default ``.*relu_output`` matches; otherwise pass the module's name, e.g.
    ``tensor_regex="^1_output_0$"`` for the ReLU at index 1 of an ``nn.Sequential``.
    """

    report_needs = {"regex": ".*relu_output"}  # what smdebug report needs saved to run it
    params = (
        Param("tensor_regex", as_regex_list, ".*relu_output"),
        Param("threshold_inactivity", as_float, "1.0"),
        Param("threshold_layer", as_float, "50.0"),
    )
    hook_collections = (HookCollection("relu_output", {"include_regex": ".*relu_output", "save_interval": "500"}),)

    def __init__(self, base_trial: Trial, action_str: str = "", other_trials: Iterable[Trial] | None = None,
                 **params: Any) -> None:
        super().__init__(base_trial, action_str=action_str, other_trials=other_trials, **params)
        self._check_thresholds()

    def _active_test(self, name: Any) -> Any:
        return lambda x: x > 0


class SaturatedActivation(_LayerActivityRule):
    """Fires when more than ``threshold_layer`` % of a tanh or sigmoid layer's units are saturated:
    their input is inside ``(min, max)`` on fewer than ``threshold_inactivity`` % of a step's
    samples (spec 3.17). Thresholds are chosen by the tensor name: ``tanh`` or ``sigmoid`` in it
    (lower-cased); other selected tensors are skipped. The 2020 tuple parameters
    ``threshold_tanh="(-9.4999, 9.4999)"`` and ``threshold_sigmoid`` are accepted too and win.

    PyTorch: activation modules held as attributes named ``tanh...``/``sigmoid...`` give
    ``tanh_input_0``/``sigmoid_input_0`` and the default ``.*tanh_input|.*sigmoid_input`` matches
    (save them with the ``inputs`` collection or ``include_regex``).
    """

    report_needs = {"regex": ".*tanh_input|.*sigmoid_input"}  # what smdebug report needs saved to run it
    params = (
        Param("collection_names", as_str_list, None),
        Param("tensor_regex", as_regex_list, ".*tanh_input|.*sigmoid_input"),
        Param("threshold_tanh_min", as_float, "-9.4999"),
        Param("threshold_tanh_max", as_float, "9.4999"),
        Param("threshold_sigmoid_min", as_float, "-23"),
        Param("threshold_sigmoid_max", as_float, "16.99999"),
        Param("threshold_inactivity", as_float, "1.0"),
        Param("threshold_layer", as_float, "50.0"),
        Param("threshold_tanh", optional(as_float_list), None),
        Param("threshold_sigmoid", optional(as_float_list), None),
    )

    def __init__(self, base_trial: Trial, action_str: str = "", other_trials: Iterable[Trial] | None = None,
                 **params: Any) -> None:
        super().__init__(base_trial, action_str=action_str, other_trials=other_trials, **params)
        self._check_thresholds()
        self.ranges = {}
        for kind in ("tanh", "sigmoid"):
            pair = getattr(self, f"threshold_{kind}")
            if pair is not None:
                if len(pair) != 2:
                    raise RuleConfigurationError(self.rule_name, f"threshold_{kind}",
                                                 f"expected two numbers (min, max), got {pair}")
                lo, hi = pair
            else:
                lo, hi = getattr(self, f"threshold_{kind}_min"), getattr(self, f"threshold_{kind}_max")
            if not lo < hi:
                raise RuleConfigurationError(self.rule_name, f"threshold_{kind}_min",
                                             f"must be below threshold_{kind}_max ({lo} >= {hi})")
            self.ranges[kind] = (lo, hi)

    def _active_test(self, name: Any) -> Any:
        lower = name.lower()
        for kind, (lo, hi) in self.ranges.items():
            if kind in lower:
                return lambda x, lo=lo, hi=hi: (x > lo) & (x < hi)
        return None


class CheckInputImages(BuiltinRule):
    """Fires when input images are not normalized: once at least ``threshold_samples`` images
    were seen, the mean of some channel over all of them differs from 0 by more than
    ``threshold_mean`` (spec 3.9). Sums and counts accumulate over the steps evaluated; the
    batch is axis 0 (axis 1 when ``channel`` is 0); tensors with fewer than 3 dimensions are
    skipped.

    PyTorch: the model's input is ``<ModelClass>_input_0``, so pass e.g.
    ``regex="^Net_input_0$"`` (``"^Sequential_input_0$"`` for an ``nn.Sequential``), saved with
    ``include_regex``; ``channel="1"`` is NCHW as in PyTorch.
    """

    params = (
        Param("threshold_mean", as_float, "0.2"),
        Param("threshold_samples", as_int, "500"),
        Param("regex", as_regex, ".*hybridsequential0_input_0"),
        Param("channel", as_int, "1"),
    )
    hook_collections = (
        HookCollection("input_image", {"include_regex": ".*hybridsequential0_input_0", "save_interval": "500"}),
    )

    def __init__(self, base_trial: Trial, action_str: str = "", other_trials: Iterable[Trial] | None = None,
                 **params: Any) -> None:
        super().__init__(base_trial, action_str=action_str, other_trials=other_trials, **params)
        if self.threshold_mean < 0:
            raise RuleConfigurationError(self.rule_name, "threshold_mean", f"must be at least 0, got {self.threshold_mean}")
        if self.threshold_samples < 1:
            raise RuleConfigurationError(self.rule_name, "threshold_samples",
                                         f"must be at least 1, got {self.threshold_samples}")
        if self.channel < 0:
            raise RuleConfigurationError(self.rule_name, "channel", f"must be at least 0, got {self.channel}")
        self.sums: np.ndarray | None = None
        self.counts = 0
        self.n_images = 0

    def _add(self, name: Any, x: np.ndarray) -> None:
        if x.ndim < 3 or self.channel >= x.ndim:
            return
        self.evaluated()
        batch_axis = 1 if self.channel == 0 else 0
        n = x.shape[batch_axis]
        x = np.moveaxis(x, self.channel, -1)
        sums = x.reshape(-1, x.shape[-1]).sum(axis=0, dtype=np.float64)
        if self.sums is not None and self.sums.shape != sums.shape:
            self.logger.warning("%s: %s has %d channels, earlier inputs %d; starting again", self.rule_name, name,
                                sums.shape[0], self.sums.shape[0])
            self.sums, self.counts, self.n_images = None, 0, 0
        self.sums = sums if self.sums is None else self.sums + sums
        self.counts += x.size // x.shape[-1]
        self.n_images += n

    def invoke_at_step(self, step: int) -> bool:
        for name in select_tensor_names(self.base_trial, step, (), (self.regex,), rule_name=self.rule_name):
            x = _numeric(value_or_none(self.base_trial, name, step))
            if x is not None:
                self._add(name, x)
        if self.sums is None or self.n_images < self.threshold_samples:
            return False
        means = self.sums / max(self.counts, 1)
        if np.any(np.abs(means) > self.threshold_mean):
            self.logger.info("%s: channel means %s over %d images exceed %s", self.rule_name, means.tolist(),
                             self.n_images, self.threshold_mean)
            return True
        return False


class NLPSequenceRatio(BuiltinRule):
    """Fires when a token makes up more than its threshold percent of an input sequence tensor at
    a step (spec 3.18), e.g. padding. One threshold for several tokens applies to each; otherwise
    ``token_values`` and ``token_thresholds_percent`` must have the same length.

    PyTorch: an embedding held as attribute ``embedding`` takes ``embedding_input_0``, so pass
    ``tensor_regex=".*embedding_input_0"`` (saved with the ``inputs`` collection or
    ``include_regex``).
    """

    params = (
        Param("tensor_regex", as_regex_list, ".*embedding0_input_0"),
        Param("token_values", as_int_list, "0"),
        Param("token_thresholds_percent", as_float_list, "50"),
    )
    hook_collections = (
        HookCollection("input_sequence", {"include_regex": ".*embedding0_input_0", "save_interval": "500"}),
    )

    def __init__(self, base_trial: Trial, action_str: str = "", other_trials: Iterable[Trial] | None = None,
                 **params: Any) -> None:
        super().__init__(base_trial, action_str=action_str, other_trials=other_trials, **params)
        tokens, thresholds = self.token_values, self.token_thresholds_percent
        if not tokens:
            raise RuleConfigurationError(self.rule_name, "token_values", "needs at least one token id")
        if len(thresholds) == 1:
            thresholds = thresholds * len(tokens)
        if len(thresholds) != len(tokens):
            raise RuleConfigurationError(self.rule_name, "token_thresholds_percent",
                                         f"{len(thresholds)} thresholds for {len(tokens)} token_values")
        for t in thresholds:
            if not 0 <= t <= 100:
                raise RuleConfigurationError(self.rule_name, "token_thresholds_percent",
                                             f"is a percentage: 0 to 100, got {t}")
        self.thresholds = dict(zip(tokens, thresholds))

    def invoke_at_step(self, step: int) -> bool:
        fired = False
        for name in select_tensor_names(self.base_trial, step, (), self.tensor_regex, rule_name=self.rule_name):
            v = _numeric(value_or_none(self.base_trial, name, step))
            if v is None or v.size == 0:
                continue
            self.evaluated()
            for tok, thr in self.thresholds.items():
                pct = 100.0 * np.count_nonzero(v == tok) / v.size
                if pct > thr:
                    self.logger.info("%s: token %s is %.1f%% of %s at step %s (threshold %s%%)", self.rule_name, tok,
                                     pct, name, step, thr)
                    fired = True
        return fired
