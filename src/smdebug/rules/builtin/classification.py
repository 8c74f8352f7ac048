"""Rules comparing predictions with labels: Confusion and ClassImbalance (docs/builtin-rules.md 3.8, 3.12).

Both turn saved values into class ids the same way (:func:`class_ids`): probability vectors
(a last axis of more than one element) become their argmax, one-dimensional probabilities of a
binary model (XGBoost ``binary:logistic``: floats in [0, 1], some not whole) are thresholded at
0.5 (positive when > 0.5, as XGBoost's ``error`` metric counts), anything else is rounded to an
int; NaN or infinite values become -1, which no class matches.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import numpy as np

from smdebug.rules.builtin.base import BuiltinRule, HookCollection, Param, value_or_none
from smdebug.rules.builtin.evidence import first_worker, trial_holds
from smdebug.rules.finding import show_value
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
        ids = np.argmax(arr, axis=-1).reshape(-1).astype(np.int64)
        if arr.dtype.kind in "fc":  # argmax names the first NaN as the class: a vector with NaN or inf is none
            ids[~np.isfinite(arr).all(axis=-1).reshape(-1)] = -1
        return ids
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

    NaN and inf: a NaN or infinite label or prediction is class -1, so its pair is left out of
    the matrix (the finding says how many were); a step where every pair is left out is not
    judged. ``last_reason`` is the last firing's message ("" when the step did not fire).

    Nothing judged: the reason says which of labels and predictions has no tensor (what was
    asked, which collections the trial holds), that their lengths differ, or that no pair was
    a class.
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
    # the parameters, parsed when the rule is built (see ``params``)
    category_no: int | None
    labels: str | None
    predictions: str | None
    labels_collection: str | None
    predictions_collection: str | None
    min_diag: float
    max_off_diag: float
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
        self.last_reason = ""
        label_names = self._names(step, self.labels_collection, self.labels)
        pred_names = self._names(step, self.predictions_collection, self.predictions)
        labels = _values(trial, label_names, step)
        preds = _values(trial, pred_names, step)
        if labels is None or preds is None:
            if not self.tensors_evaluated:
                self._say_what_is_missing(labels is None, preds is None)
            return False
        if labels.size != preds.size:
            if not self._warned:
                self.logger.warning(
                    "%s: step %s has %d labels but %d predictions; such steps are not judged",
                    self.rule_name,
                    step,
                    labels.size,
                    preds.size,
                )
                self._warned = True
            if not self.tensors_evaluated:
                self.unjudged(
                    f"labels and predictions differ in length ({labels.size} labels, {preds.size} "
                    f"predictions at step {step}): such steps are not judged"
                )
            return False
        n = self.category_no
        if n is None:
            n = max(int(labels.max(initial=-1)), int(preds.max(initial=-1))) + 1
            if n < 1:
                if not self.tensors_evaluated:
                    self.unjudged(f"no label or prediction at step {step} is a class (all NaN, inf or negative)")
                return False
        c = confusion_matrix(labels, preds, n)
        self.last_matrix = c
        if not c.sum():
            if not self.tensors_evaluated:
                self.unjudged(
                    f"no pair of label and prediction at step {step} is a class in [0, {n}) (NaN and inf are left out)"
                )
            return False
        self.evaluated(2)  # the step's labels and predictions
        judged = self._judge(c)
        if not judged:
            return False
        message, condition, value = judged
        left_out = labels.size - int(c.sum())
        if left_out:
            message += f" ({left_out} of {labels.size} pairs left out: NaN, inf or a class outside [0, {n}))"
        self.last_reason = message
        names = sorted(label_names) + sorted(pred_names)
        return self.found(
            step,
            message,
            tensors=names,
            values=[value],
            condition=condition,
            worker=first_worker(trial, names[0], step),
        )

    def _judge(self, c: np.ndarray) -> tuple | None:
        """(message, condition, ratio) of the first poor class, or None."""
        rows, cols, diag = c.sum(axis=1), c.sum(axis=0), np.diag(c)
        for i in np.flatnonzero(rows):
            ratio = diag[i] / rows[i]
            if ratio < self.min_diag:
                return (
                    f"class {i}: diagonal ratio {show_value(ratio)} < min_diag {show_value(self.min_diag)} "
                    f"({diag[i]} of {rows[i]} samples labelled {i} predicted {i})",
                    f"C[{i},{i}] / sum_j C[{i},j] = {show_value(ratio)} < min_diag {show_value(self.min_diag)}",
                    float(ratio),
                )
        for i in np.flatnonzero(cols):
            off = c[:, i].astype(np.float64) / cols[i]
            off[i] = 0.0
            j = int(np.argmax(off))
            if off[j] > self.max_off_diag:
                return (
                    f"label {j} predicted as {i}: off-diagonal ratio {show_value(off[j])} > max_off_diag "
                    f"{show_value(self.max_off_diag)} ({c[j, i]} of {cols[i]} predictions {i} are labelled {j})",
                    f"C[{j},{i}] / sum_j C[j,{i}] = {show_value(off[j])} > max_off_diag "
                    f"{show_value(self.max_off_diag)}",
                    float(off[j]),
                )
        return None

    def _say_what_is_missing(self, no_labels: bool, no_preds: bool) -> None:
        trial = self.base_trial
        missing = []
        for absent, what, coll, name in (
            (no_labels, "labels", self.labels_collection, self.labels),
            (no_preds, "predictions", self.predictions_collection, self.predictions),
        ):
            if absent and not self._names(None, coll, name):
                missing.append(f"{what} (collection {coll!r}, tensor {name!r})")
        if missing:
            self.unjudged(f"no tensor of {' nor of '.join(missing)}; the trial holds {trial_holds(trial)}")


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

    NaN and inf: a NaN or infinite label is left out (not counted); a NaN or infinite prediction
    is class -1, which matches no label: a misprediction. Values count as judged once
    ``samples`` labels were counted; before, the reason says how many there are.
    ``last_reason`` is the last firing's message ("" when the step did not fire).

    Nothing judged: the reason says the labels regex matched no tensor (and what the trial
    holds), or fewer than ``samples`` labels were counted (how many, what to change).
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
    # the parameters, parsed when the rule is built (see ``params``)
    threshold_imbalance: float
    threshold_misprediction: float
    samples: int
    argmax: bool
    labels_regex: re.Pattern
    predictions_regex: re.Pattern
    hook_collections = _LABEL_COLLECTIONS

    def __init__(self, base_trial: Trial, action_str: str = "", **params: Any) -> None:
        super().__init__(base_trial, action_str=action_str, **params)
        self.counts = np.zeros(0, dtype=np.int64)
        self.mispredicted = np.zeros(0, dtype=np.int64)
        self.judged = np.zeros(0, dtype=np.int64)  # labels counted together with a prediction
        self.total = 0
        self.last_reason = ""
        self._counted: set = set()
        self._pending = 0  # tensors counted since the last judgement
        self._names: list = []  # the labels and predictions tensors counted
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
        self.last_reason = ""
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
                            self.rule_name,
                            step,
                            labels.size,
                            preds.size,
                        )
                        self._warned = True
                    preds = None
                ok = labels >= 0
                self._pending += 1 if preds is None else 2  # the step's labels (and predictions)
                self._names = list(dict.fromkeys(self._names + label_names + (pred_names if preds is not None else [])))
                self._add(labels[ok], None if preds is None else preds[ok])
        if self.total < self.samples:
            if not self.tensors_evaluated:
                self._say_why_unjudged()
            return False
        self.evaluated(self._pending)
        self._pending = 0
        judged = self._judge()
        if not judged:
            return False
        message, condition, value = judged
        self.last_reason = message
        return self.found(
            step,
            message,
            tensors=self._names,
            values=[value],
            condition=condition,
            worker=first_worker(trial, self._names[0], step) if self._names else None,
        )

    def _judge(self) -> tuple | None:
        """(message, condition, value) when the counts are poor, else None."""
        seen = np.flatnonzero(self.counts)
        if seen.size == 0:
            return None
        big_class, small_class = seen[np.argmax(self.counts[seen])], seen[np.argmin(self.counts[seen])]
        big, small = self.counts[big_class], self.counts[small_class]
        if big / small > self.threshold_imbalance:
            ratio = show_value(big / small)
            return (
                f"largest/smallest class count {big}/{small} = {ratio} > {show_value(self.threshold_imbalance)} "
                f"(threshold_imbalance; class {big_class}: {big}, class {small_class}: {small}, over {self.total} "
                "labels)",
                f"{big}/{small} = {ratio} > threshold_imbalance {show_value(self.threshold_imbalance)}",
                float(big / small),
            )
        judged = np.flatnonzero(self.judged)
        if judged.size == 0:
            return None
        frac = self.mispredicted[judged] / self.judged[judged]
        worst = int(np.argmax(frac))
        if frac[worst] > self.threshold_misprediction:
            c = judged[worst]
            return (
                f"class {c}: mispredicted fraction {show_value(frac[worst])} > threshold_misprediction "
                f"{show_value(self.threshold_misprediction)} ({self.mispredicted[c]} of {self.judged[c]} labels "
                "that came with a prediction)",
                f"mispredicted fraction of class {c} {show_value(frac[worst])} > threshold_misprediction "
                f"{show_value(self.threshold_misprediction)}",
                float(frac[worst]),
            )
        return None

    def _say_why_unjudged(self) -> None:
        trial = self.base_trial
        if self.total or self._counted:
            self.unjudged(
                f"{self.total} labels counted ({', '.join(self._names[:3])}), fewer than samples "
                f"{self.samples}: lower samples or save the labels at more steps"
            )
        elif not trial.tensor_names(regex=self.labels_regex.pattern):
            self.unjudged(
                f"labels_regex {self.labels_regex.pattern!r} matched no tensor; the trial holds {trial_holds(trial)}"
            )
