"""Rules on layer inputs and outputs: DeadRelu, SaturatedActivation, CheckInputImages, NLPSequenceRatio.

Specification: docs/builtin-rules.md sections 3.9, 3.10, 3.17, 3.18 and its ambiguity register. The
default regexes are MXNet Gluon names; the PyTorch hook names a module's tensors
``<attribute name>_input_<i>`` / ``<attribute name>_output_<i>`` (inside ``nn.Sequential`` the
attribute is the index, e.g. ``1_output_0``; the model itself is ``<ClassName>_input_0``), saved
with the ``inputs``/``outputs`` collections or ``include_regex``. Each rule's docstring gives the
regex a PyTorch user passes.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import numpy as np

from smdebug.exceptions import RuleConfigurationError
from smdebug.rules.builtin.base import BuiltinRule, HookCollection, Param, select_tensor_names, value_or_none
from smdebug.rules.builtin.evidence import first_worker, trial_holds
from smdebug.rules.finding import show_value
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

    inactive_word = "inactive"  # how a firing names the units that are not active
    active_phrase = "active"  # what active means, for a firing
    tensor_regex: list[re.Pattern[str]]  # parameters of the subclasses (their ``params``)
    threshold_inactivity: float
    threshold_layer: float

    def _check_thresholds(self) -> Any:
        _check_percent(self, "threshold_inactivity")
        _check_percent(self, "threshold_layer")

    def _selected(self, step: Any) -> list:
        colls = getattr(self, "collection_names", ())
        return select_tensor_names(self.base_trial, step, colls, self.tensor_regex, rule_name=self.rule_name)

    def _active_test(self, name: Any) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    def _active_phrase(self, name: str) -> str:  # pragma: no cover - overridden
        raise NotImplementedError

    def invoke_at_step(self, step: int) -> bool:
        fired: list = []
        selected = self._selected(step)
        skipped: list = []
        for name in selected:
            active = self._active_test(name)
            if active is None:
                skipped.append(name)
                continue
            x = _numeric(value_or_none(self.base_trial, name, step))
            if x is None or x.ndim == 0:
                skipped.append(name)
                continue
            self.evaluated()
            x = x.astype(np.float64, copy=False)
            pct = _percent_of_units_inactive(x, active, self.threshold_inactivity)
            if pct > self.threshold_layer:
                fired.append(
                    (name, pct, float(np.mean(np.isnan(x))) if x.size else 0.0, x.shape[0] if x.ndim > 1 else 1)
                )
        if fired:
            return self._found(step, fired)
        if not self.tensors_evaluated:
            self._say_why_unjudged(selected, skipped)
        return False

    def _found(self, step: int, fired: list) -> bool:
        name, pct, nan, samples = fired[0]
        more = f"; {len(fired) - 1} more layer{'s' if len(fired) > 2 else ''} too" if len(fired) > 1 else ""
        nans = (
            f"; {show_value(100 * nan)} % of its values are NaN, which counts as not {self.active_phrase}"
            if nan
            else ""
        )
        return self.found(
            step,
            f"{show_value(pct)} % of the units of {name} are {self.inactive_word} ({self._active_phrase(name)} on "
            f"fewer than threshold_inactivity {show_value(self.threshold_inactivity)} % of {samples} samples), more "
            f"than threshold_layer {show_value(self.threshold_layer)} %{nans}{more}",
            tensors=[f[0] for f in fired],
            values=[f[1] for f in fired],
            condition=f"{self.inactive_word} units {show_value(pct)} % > threshold_layer {show_value(self.threshold_layer)} %",
            worker=first_worker(self.base_trial, name, step),
        )

    def _say_why_unjudged(self, selected: list, skipped: list) -> None:
        if skipped:
            self.unjudged(
                f"the selected tensors ({', '.join(skipped[:4])}) are not layer activations it can judge "
                f"({self._skip_reason()})"
            )
        elif not self._selected(None):
            self.unjudged(f"{self.selection()} matched no tensor; the trial holds {trial_holds(self.base_trial)}")

    def _skip_reason(self) -> str:
        return "scalars or not numbers"


class DeadRelu(_LayerActivityRule):
    """Fires when more than ``threshold_layer`` % of a ReLU layer's units are dead: positive on
    fewer than ``threshold_inactivity`` % of a step's samples (spec 3.10; unit = every non-batch
    element, per step, register #12).

    PyTorch: ReLU modules held as attributes named ``relu...`` give ``relu_output_0`` and the
    default ``.*relu_output`` matches; otherwise pass the module's name, e.g.
    ``tensor_regex="^1_output_0$"`` for the ReLU at index 1 of an ``nn.Sequential``.

    NaN and inf: a NaN is not positive, so a unit whose outputs are NaN counts as dead and a
    layer of NaN fires; the finding then says which share of the layer's values are NaN. +inf
    is positive (active).

    Nothing judged: the reason gives the selection and the collections the trial holds, or
    names the selected tensors it cannot judge (scalars, not numbers).
    """

    report_needs = {"regex": ".*relu_output"}  # what smdebug report needs saved to run it
    params = (
        Param("tensor_regex", as_regex_list, ".*relu_output"),
        Param("threshold_inactivity", as_float, "1.0"),
        Param("threshold_layer", as_float, "50.0"),
    )
    # the parameters, parsed when the rule is built (see ``params``)
    tensor_regex: list[re.Pattern]
    threshold_inactivity: float
    threshold_layer: float
    hook_collections = (HookCollection("relu_output", {"include_regex": ".*relu_output", "save_interval": "500"}),)

    def __init__(self, base_trial: Trial, action_str: str = "", **params: Any) -> None:
        super().__init__(base_trial, action_str=action_str, **params)
        self._check_thresholds()

    inactive_word = "dead"
    active_phrase = "positive"

    def _active_test(self, name: Any) -> Any:
        return lambda x: x > 0

    def _active_phrase(self, name: str) -> str:
        return "positive"


class SaturatedActivation(_LayerActivityRule):
    """Fires when more than ``threshold_layer`` % of a tanh or sigmoid layer's units are saturated:
    their input is inside ``(min, max)`` on fewer than ``threshold_inactivity`` % of a step's
    samples (spec 3.17). Thresholds are chosen by the tensor name: ``tanh`` or ``sigmoid`` in it
    (lower-cased); other selected tensors are skipped. The 2020 tuple parameters
    ``threshold_tanh="(-9.4999, 9.4999)"`` and ``threshold_sigmoid`` are accepted too and win.

    PyTorch: activation modules held as attributes named ``tanh...``/``sigmoid...`` give
    ``tanh_input_0``/``sigmoid_input_0`` and the default ``.*tanh_input|.*sigmoid_input`` matches
    (save them with the ``inputs`` collection or ``include_regex``).

    NaN and inf: a NaN input is not inside ``(min, max)``, so a unit whose inputs are NaN counts
    as saturated and a layer of NaN fires; the finding says which share of its values are NaN.
    ±inf is outside the range: saturated.

    Nothing judged: the reason gives the selection and the collections the trial holds, or
    names the selected tensors it cannot judge (no ``tanh``/``sigmoid`` in the name, scalars).
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
    # the parameters, parsed when the rule is built (see ``params``)
    collection_names: list[str]
    tensor_regex: list[re.Pattern]
    threshold_tanh_min: float
    threshold_tanh_max: float
    threshold_sigmoid_min: float
    threshold_sigmoid_max: float
    threshold_inactivity: float
    threshold_layer: float
    threshold_tanh: list[float] | None
    threshold_sigmoid: list[float] | None

    def __init__(self, base_trial: Trial, action_str: str = "", **params: Any) -> None:
        super().__init__(base_trial, action_str=action_str, **params)
        self._check_thresholds()
        self.ranges = {}
        for kind in ("tanh", "sigmoid"):
            pair = getattr(self, f"threshold_{kind}")
            if pair is not None:
                if len(pair) != 2:
                    raise RuleConfigurationError(
                        self.rule_name, f"threshold_{kind}", f"expected two numbers (min, max), got {pair}"
                    )
                lo, hi = pair
            else:
                lo, hi = getattr(self, f"threshold_{kind}_min"), getattr(self, f"threshold_{kind}_max")
            if not lo < hi:
                raise RuleConfigurationError(
                    self.rule_name, f"threshold_{kind}_min", f"must be below threshold_{kind}_max ({lo} >= {hi})"
                )
            self.ranges[kind] = (lo, hi)

    inactive_word = "saturated"
    active_phrase = "inside the range"

    def _active_test(self, name: Any) -> Any:
        lower = name.lower()
        for kind, (lo, hi) in self.ranges.items():
            if kind in lower:
                return lambda x, lo=lo, hi=hi: (x > lo) & (x < hi)
        return None

    def _active_phrase(self, name: str) -> str:
        kind = next(k for k in self.ranges if k in name.lower())
        lo, hi = self.ranges[kind]
        return f"inside the {kind} range ({show_value(lo)}, {show_value(hi)})"

    def _skip_reason(self) -> str:
        return "a name with neither 'tanh' nor 'sigmoid' in it picks no range; or scalars"


class CheckInputImages(BuiltinRule):
    """Fires when input images are not normalized: once at least ``threshold_samples`` images
    were seen, the mean of some channel over all of them differs from 0 by more than
    ``threshold_mean`` (spec 3.9). Sums and counts accumulate over the steps evaluated; the
    batch is axis 0 (axis 1 when ``channel`` is 0); tensors with fewer than 3 dimensions are
    skipped.

    PyTorch: the model's input is ``<ModelClass>_input_0``, so pass e.g.
    ``regex="^Net_input_0$"`` (``"^Sequential_input_0$"`` for an ``nn.Sequential``), saved with
    ``include_regex``; ``channel="1"`` is NCHW as in PyTorch.

    NaN and inf: a NaN or inf in the inputs makes its channel's mean non-finite, which fires
    (inputs holding NaN or inf are not normalized), naming the channel; the sums keep it, so it
    fires at every later judged step too. Inputs count as judged once ``threshold_samples``
    images were seen: before, the reason says how many there are.

    Nothing judged: the reason says the regex matched no tensor (what the trial holds, with
    tensors named ``*_input_0``), the matched tensors have fewer than 3 dimensions, or fewer than
    ``threshold_samples`` images were seen.
    """

    params = (
        Param("threshold_mean", as_float, "0.2"),
        Param("threshold_samples", as_int, "500"),
        Param("regex", as_regex, ".*hybridsequential0_input_0"),
        Param("channel", as_int, "1"),
    )
    # the parameters, parsed when the rule is built (see ``params``)
    threshold_mean: float
    threshold_samples: int
    regex: re.Pattern
    channel: int
    hook_collections = (
        HookCollection("input_image", {"include_regex": ".*hybridsequential0_input_0", "save_interval": "500"}),
    )

    def __init__(self, base_trial: Trial, action_str: str = "", **params: Any) -> None:
        super().__init__(base_trial, action_str=action_str, **params)
        if self.threshold_mean < 0:
            raise RuleConfigurationError(
                self.rule_name, "threshold_mean", f"must be at least 0, got {self.threshold_mean}"
            )
        if self.threshold_samples < 1:
            raise RuleConfigurationError(
                self.rule_name, "threshold_samples", f"must be at least 1, got {self.threshold_samples}"
            )
        if self.channel < 0:
            raise RuleConfigurationError(self.rule_name, "channel", f"must be at least 0, got {self.channel}")
        self.sums: np.ndarray | None = None
        self.counts = 0
        self.n_images = 0
        self.names: list = []  # the tensors whose images are in the sums
        self._pending = 0  # tensors added to the sums since the last judgement
        self._skipped: dict = {}  # tensor name -> its shape, when it has too few dimensions

    def _add(self, name: Any, x: np.ndarray) -> None:
        if x.ndim < 3 or self.channel >= x.ndim:
            self._skipped[name] = x.shape
            return
        batch_axis = 1 if self.channel == 0 else 0
        n = x.shape[batch_axis]
        x = np.moveaxis(x, self.channel, -1)
        with np.errstate(all="ignore"):  # inf inputs give inf or NaN sums: the means say so
            sums = x.reshape(-1, x.shape[-1]).sum(axis=0, dtype=np.float64)
        if self.sums is not None and self.sums.shape != sums.shape:
            self.logger.warning(
                "%s: %s has %d channels, earlier inputs %d; starting again",
                self.rule_name,
                name,
                sums.shape[0],
                self.sums.shape[0],
            )
            self.sums, self.counts, self.n_images, self.names = None, 0, 0, []
        self.sums = sums if self.sums is None else self.sums + sums
        self.counts += x.size // x.shape[-1]
        self.n_images += n
        self._pending += 1
        if name not in self.names:
            self.names.append(name)

    def invoke_at_step(self, step: int) -> bool:
        for name in select_tensor_names(self.base_trial, step, (), (self.regex,), rule_name=self.rule_name):
            x = _numeric(value_or_none(self.base_trial, name, step))
            if x is not None:
                self._add(name, x)
        if self.sums is None or self.n_images < self.threshold_samples:
            if not self.tensors_evaluated:
                self._say_why_unjudged()
            return False
        self.evaluated(self._pending)
        self._pending = 0
        means = self.sums / max(self.counts, 1)
        with np.errstate(invalid="ignore"):
            off = ~(np.abs(means) <= self.threshold_mean)  # NaN and inf are off too
        if np.any(off):
            c = int(np.flatnonzero(off)[np.argmax(np.nan_to_num(np.abs(means[off]), nan=np.inf))])
            return self.found(
                step,
                f"channel {c} of the input images has mean {show_value(means[c])} over {self.n_images} images "
                f"({', '.join(self.names[:3])}), more than threshold_mean {show_value(self.threshold_mean)} "
                "from 0: the inputs are not normalized",
                tensors=list(self.names),
                values=[float(means[c])],
                channel=c,
                condition=f"|mean of channel {c}| {show_value(abs(means[c]))} > threshold_mean "
                f"{show_value(self.threshold_mean)}",
                worker=first_worker(self.base_trial, self.names[-1], step),
            )
        return False

    def _say_why_unjudged(self) -> None:
        trial = self.base_trial
        if self.sums is not None:
            self.unjudged(
                f"{self.n_images} images seen in {', '.join(self.names[:3])}, fewer than threshold_samples "
                f"{self.threshold_samples}: lower threshold_samples or save the inputs at more steps"
            )
        elif self._skipped:
            name, shape = next(iter(self._skipped.items()))
            self.unjudged(
                f"{name} has shape {shape}: images need 3 dimensions or more, with the channel axis "
                f"channel={self.channel}"
            )
        elif not trial.tensor_names(regex=self.regex.pattern):
            inputs = trial.tensor_names(regex=r"_input_0$")[:4]
            hint = f"; tensors named like inputs: {', '.join(inputs)}" if inputs else ""
            self.unjudged(f"regex {self.regex.pattern!r} matched no tensor; the trial holds {trial_holds(trial)}{hint}")


class NLPSequenceRatio(BuiltinRule):
    """Fires when a token makes up more than its threshold percent of an input sequence tensor at
    a step (spec 3.18), e.g. padding. One threshold for several tokens applies to each; otherwise
    ``token_values`` and ``token_thresholds_percent`` must have the same length.

    PyTorch: an embedding held as attribute ``embedding`` takes ``embedding_input_0``, so pass
    ``tensor_regex=".*embedding_input_0"`` (saved with the ``inputs`` collection or
    ``include_regex``).

    NaN and inf: tokens are compared exactly; a NaN matches no token and counts in the
    sequence's length only (token ids are whole numbers; a float tensor holding NaN is judged
    as it is).

    Nothing judged: the reason gives the selection and the collections the trial holds.
    """

    params = (
        Param("tensor_regex", as_regex_list, ".*embedding0_input_0"),
        Param("token_values", as_int_list, "0"),
        Param("token_thresholds_percent", as_float_list, "50"),
    )
    # the parameters, parsed when the rule is built (see ``params``)
    tensor_regex: list[re.Pattern]
    token_values: list[int]
    token_thresholds_percent: list[float]
    hook_collections = (
        HookCollection("input_sequence", {"include_regex": ".*embedding0_input_0", "save_interval": "500"}),
    )

    def __init__(self, base_trial: Trial, action_str: str = "", **params: Any) -> None:
        super().__init__(base_trial, action_str=action_str, **params)
        tokens, thresholds = self.token_values, self.token_thresholds_percent
        if not tokens:
            raise RuleConfigurationError(self.rule_name, "token_values", "needs at least one token id")
        if len(thresholds) == 1:
            thresholds = thresholds * len(tokens)
        if len(thresholds) != len(tokens):
            raise RuleConfigurationError(
                self.rule_name,
                "token_thresholds_percent",
                f"{len(thresholds)} thresholds for {len(tokens)} token_values",
            )
        for t in thresholds:
            if not 0 <= t <= 100:
                raise RuleConfigurationError(
                    self.rule_name, "token_thresholds_percent", f"is a percentage: 0 to 100, got {t}"
                )
        self.thresholds = dict(zip(tokens, thresholds))

    def invoke_at_step(self, step: int) -> bool:
        fired: list = []
        names = select_tensor_names(self.base_trial, step, (), self.tensor_regex, rule_name=self.rule_name)
        for name in names:
            v = _numeric(value_or_none(self.base_trial, name, step))
            if v is None or v.size == 0:
                continue
            self.evaluated()
            for tok, thr in self.thresholds.items():
                pct = 100.0 * np.count_nonzero(v == tok) / v.size
                if pct > thr:
                    fired.append((name, tok, pct, thr, v.size))
        if fired:
            name, tok, pct, thr, size = fired[0]
            more = f"; {len(fired) - 1} more" if len(fired) > 1 else ""
            return self.found(
                step,
                f"token {tok} is {show_value(pct)} % of {name} ({size} tokens), more than its "
                f"threshold {show_value(thr)} %{more}",
                tensors=[f[0] for f in fired],
                values=[f[2] for f in fired],
                condition=f"share of token {tok} {show_value(pct)} % > {show_value(thr)} %",
                worker=first_worker(self.base_trial, name, step),
                token=tok,
            )
        if (
            not self.tensors_evaluated
            and not names
            and not select_tensor_names(self.base_trial, None, (), self.tensor_regex, rule_name=self.rule_name)
        ):
            self.unjudged(f"{self.selection()} matched no tensor; the trial holds {trial_holds(self.base_trial)}")
        return False
