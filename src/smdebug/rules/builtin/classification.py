"""Rules comparing predictions with labels: Confusion and ClassImbalance (docs/builtin-rules.md 3.8, 3.12).

Both turn saved values into class ids the same way (:func:`class_ids`): probability vectors
(a last axis of more than one element) become their argmax, one-dimensional probabilities of a
binary model (XGBoost ``binary:logistic``: floats in [0, 1], some not whole) are thresholded at
0.5 (positive when > 0.5, as XGBoost's ``error`` metric counts), anything else is rounded to an
int; NaN or infinite values become -1, which no class matches.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from smdebug.rules.builtin.base import BuiltinRule, HookCollection, Param, value_or_none
from smdebug.rules.params import as_bool, as_float, as_int, as_regex, as_str, bounded, optional

if TYPE_CHECKING:
    from smdebug.trials.trial import Trial

__all__ = ["Confusion", "ClassImbalance", "class_ids", "confusion_matrix"]

_LABEL_COLLECTIONS = (HookCollection("labels"), HookCollection("predictions"))


_fraction = bounded(as_float, 0.0, 1.0)
_positive = bounded(as_float, above=0)


_category_no = bounded(as_int, 2)
_count = bounded(as_int, 0)


def class_ids(values: Any, argmax: bool = False) -> np.ndarray:
    """Saved labels or predictions -> a flat int64 array of class ids (see the module docstring).

    With ``argmax`` the last axis of a two-or-more-dimensional value is reduced by argmax even
    when it has one element; a one-dimensional value is one class id per element either way.
    """
    arr = np.asarray(values)
    if arr.ndim >= 2 and (argmax or arr.shape[-1] > 1):
        return np.argmax(arr, axis=-1).reshape(-1).astype(np.int64)
    arr = arr.reshape(-1)
    if arr.dtype.kind in "biu":
        return arr.astype(np.int64)
    if arr.dtype.kind != "f":
        raise ValueError(f"class ids must be numbers, got values of dtype {arr.dtype}")
    finite = np.isfinite(arr)
    out = np.full(arr.shape, -1, dtype=np.int64)
    vals = arr[finite]
    if vals.size and vals.min() >= 0.0 and vals.max() <= 1.0 and np.any(vals != np.rint(vals)):
        out[finite] = (vals > 0.5).astype(np.int64)
    else:
        out[finite] = np.rint(vals).astype(np.int64)
    return out


def confusion_matrix(labels: np.ndarray, predictions: np.ndarray, category_no: int) -> np.ndarray:
    """``C[label, prediction]`` counts; pairs with a class outside ``[0, category_no)`` are left out."""
    keep = (labels >= 0) & (labels < category_no) & (predictions >= 0) & (predictions < category_no)
    flat = labels[keep] * category_no + predictions[keep]
    return np.bincount(flat, minlength=category_no * category_no).reshape(category_no, category_no)


def _values(trial: Any, names: Any, step: Any, argmax: Any = False) -> np.ndarray | None:
    """Class ids of the named tensors at ``step``, concatenated in name order; None if none has a value."""
    parts = []
    for n in sorted(names):
        v = value_or_none(trial, n, step)
        if v is not None:
            parts.append(class_ids(v, argmax=argmax))
    return np.concatenate(parts) if parts else None


class Confusion(BuiltinRule):
    """Fires when the confusion matrix of predictions against labels at a step is poor.

    Labels are the tensors of ``labels_collection`` plus the tensor named ``labels`` (likewise
    predictions), concatenated in name order; each step is judged on its own (XGBoost saves the
    whole validation set at each saved round). ``C[i, j]`` counts samples of label ``i``
    predicted ``j``. Reference choice (ambiguity register 3): it fires when a class's diagonal
    ratio ``C[i, i] / sum_j C[i, j]`` (its recall) is below ``min_diag``, or when an off-diagonal
    ratio ``C[j, i] / sum_j C[j, i]`` (within the column of predictions ``i``) is above
    ``max_off_diag``; rows and columns with no samples are not judged. ``category_no`` defaults
    to the largest class id seen plus one; pairs outside ``[0, category_no)`` are left out.
    Labels and predictions of different lengths are a bad step: logged, not judged.

    Hook collections: none in SageMaker's configuration; we declare ``labels`` and
    ``predictions``, which the rule reads.
    """

    params = (
        Param("category_no", optional(_category_no), None, "number of classes (default: inferred)"),
        Param("labels", optional(as_str), "labels", "name of the labels tensor"),
        Param("predictions", optional(as_str), "predictions", "name of the predictions tensor"),
        Param("labels_collection", optional(as_str), "labels", "collection of labels tensors"),
        Param("predictions_collection", optional(as_str), "predictions", "collection of predictions tensors"),
        Param("min_diag", _fraction, "0.9", "smallest acceptable ratio on the diagonal"),
        Param("max_off_diag", _fraction, "0.1", "largest acceptable ratio off the diagonal"),
    )
    hook_collections = _LABEL_COLLECTIONS

    def __init__(self, base_trial: Trial, action_str: str = "", **params: Any) -> None:
        super().__init__(base_trial, action_str=action_str, **params)
        self.last_matrix: np.ndarray | None = None
        self.last_reason = ""
        self._warned = False

    def _names(self, step: Any, collection: Any, name: Any) -> set:
        trial = self.base_trial
        names = set(trial.tensor_names(step=step, collection=collection)) if collection else set()
        if name and trial.has_tensor(name):
            names.add(name)
        return names

    def invoke_at_step(self, step: int) -> bool:
        trial = self.base_trial
        labels = _values(trial, self._names(step, self.labels_collection, self.labels), step)
        preds = _values(trial, self._names(step, self.predictions_collection, self.predictions), step)
        if labels is None or preds is None:
            return False
        if labels.size != preds.size:
            if not self._warned:
                self.logger.warning(
                    "%s: step %s has %d labels but %d predictions; such steps are not judged",
                    self.rule_name, step, labels.size, preds.size,
                )
                self._warned = True
            return False
        n = self.category_no
        if n is None:
            n = max(int(labels.max(initial=-1)), int(preds.max(initial=-1))) + 1
            if n < 1:
                return False
        self.evaluated(2)  # the step's labels and predictions
        c = confusion_matrix(labels, preds, n)
        self.last_matrix = c
        self.last_reason = self._judge(c)
        if self.last_reason:
            self.logger.info("%s at step %s: %s", self.rule_name, step, self.last_reason)
        return bool(self.last_reason)

    def _judge(self, c: np.ndarray) -> str:
        rows, cols, diag = c.sum(axis=1), c.sum(axis=0), np.diag(c)
        for i in np.flatnonzero(rows):
            ratio = diag[i] / rows[i]
            if ratio < self.min_diag:
                return f"class {i}: diagonal ratio {ratio:.4g} < min_diag {self.min_diag}"
        for i in np.flatnonzero(cols):
            off = c[:, i].astype(np.float64) / cols[i]
            off[i] = 0.0
            j = int(np.argmax(off))
            if off[j] > self.max_off_diag:
                return f"label {j} predicted as {i}: off-diagonal ratio {off[j]:.4g} > max_off_diag {self.max_off_diag}"
        return ""


class ClassImbalance(BuiltinRule):
    """Fires on imbalanced classes or a class that is mostly mispredicted, once enough labels are seen.

    At each step the tensors matching ``labels_regex`` (and ``predictions_regex``) are
    concatenated in name order and turned into class ids (``argmax=True`` reduces the last axis
    of predictions; probability vectors are reduced anyway, see the module docstring). Label
    counts and, where the lengths match, per-class misprediction counts accumulate over steps
    (a step is counted once, so a step evaluated again is not counted twice). When at least
    ``samples`` labels have been counted, it fires if the largest class count divided by the
    smallest (over classes seen) exceeds ``threshold_imbalance``, or if a class's mispredicted
    fraction (over its labels that came with a prediction) exceeds ``threshold_misprediction``.

    Hook collections: none in SageMaker's configuration; we declare ``labels`` and
    ``predictions``, which the default regexes read.
    """

    report_needs = {"regex": ".*labels", "regex2": ".*predictions"}  # what smdebug report needs saved to run it
    params = (
        Param("threshold_imbalance", _positive, "10", "largest acceptable largest/smallest class count"),
        Param("threshold_misprediction", _fraction, "0.7", "largest acceptable mispredicted fraction of a class"),
        Param("samples", _count, "500", "labels to count before judging"),
        Param("argmax", as_bool, "False", "argmax over the last axis of predictions"),
        Param("labels_regex", as_regex, ".*labels", "labels tensors"),
        Param("predictions_regex", as_regex, ".*predictions", "predictions tensors"),
    )
    hook_collections = _LABEL_COLLECTIONS

    def __init__(self, base_trial: Trial, action_str: str = "", **params: Any) -> None:
        super().__init__(base_trial, action_str=action_str, **params)
        self.counts = np.zeros(0, dtype=np.int64)
        self.mispredicted = np.zeros(0, dtype=np.int64)
        self.judged = np.zeros(0, dtype=np.int64)  # labels counted together with a prediction
        self.total = 0
        self.last_reason = ""
        self._counted: set = set()
        self._warned = False

    def _add(self, labels: np.ndarray, preds: np.ndarray | None) -> None:
        n = max(self.counts.size, int(labels.max(initial=-1)) + 1)
        self.counts = np.pad(self.counts, (0, n - self.counts.size))
        self.mispredicted = np.pad(self.mispredicted, (0, n - self.mispredicted.size))
        self.judged = np.pad(self.judged, (0, n - self.judged.size))
        counts = np.bincount(labels, minlength=n)
        self.counts += counts
        self.total += int(labels.size)
        if preds is not None:
            self.judged += counts
            self.mispredicted += np.bincount(labels[preds != labels], minlength=n)

    def invoke_at_step(self, step: int) -> bool:
        trial = self.base_trial
        if step not in self._counted:
            label_names = trial.tensor_names(step=step, regex=self.labels_regex.pattern)
            pred_names = trial.tensor_names(step=step, regex=self.predictions_regex.pattern)
            labels = _values(trial, label_names, step)
            preds = _values(trial, pred_names, step, argmax=self.argmax)
            if labels is not None:
                self._counted.add(step)
                if preds is not None and preds.size != labels.size:
                    if not self._warned:
                        self.logger.warning(
                            "%s: step %s has %d labels but %d predictions; only its labels are counted",
                            self.rule_name, step, labels.size, preds.size,
                        )
                        self._warned = True
                    preds = None
                ok = labels >= 0
                self.evaluated(1 if preds is None else 2)  # the step's labels (and predictions)
                self._add(labels[ok], None if preds is None else preds[ok])
        if self.total < self.samples:
            return False
        self.last_reason = self._judge()
        if self.last_reason:
            self.logger.info("%s at step %s: %s", self.rule_name, step, self.last_reason)
        return bool(self.last_reason)

    def _judge(self) -> str:
        seen = np.flatnonzero(self.counts)
        if seen.size == 0:
            return ""
        big, small = self.counts[seen].max(), self.counts[seen].min()
        if big / small > self.threshold_imbalance:
            return f"largest/smallest class count {big}/{small} = {big / small:.4g} > {self.threshold_imbalance}"
        judged = np.flatnonzero(self.judged)
        if judged.size == 0:
            return ""
        frac = self.mispredicted[judged] / self.judged[judged]
        worst = int(np.argmax(frac))
        if frac[worst] > self.threshold_misprediction:
            return (
                f"class {judged[worst]}: mispredicted fraction {frac[worst]:.4g} > "
                f"threshold_misprediction {self.threshold_misprediction}"
            )
        return ""
