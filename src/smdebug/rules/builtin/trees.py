"""Rules for XGBoost's trees and importances: TreeDepth, FeatureImportanceOverweight, CreateXgboostReport.

Specification: docs/builtin-rules.md 3.11, 3.20, 3.21. Tensor names are those of the XGBoost hook
(``smdebug.xgboost.extract``): ``trees/<column>`` (columns of ``trees_to_dataframe``),
``feature_importance/<type>/<feature>``, ``<data>-<metric>``, ``predictions``, ``labels``,
``hyperparameters/<key>``.
"""

from __future__ import annotations

import importlib.util
import os
import re
from typing import TYPE_CHECKING, Any

import numpy as np

from smdebug.exceptions import MissingDependency
from smdebug.rules.builtin.base import BuiltinRule, HookCollection, Param, value_or_none
from smdebug.rules.builtin.classification import class_ids
from smdebug.rules.builtin.evidence import first_worker, trial_holds
from smdebug.rules.builtin.xgboost_report import (
    REGRESSION,
    MetricSeries,
    ReportData,
    label_bins,
    problem_type,
    render_report,
    step_scores,
)
from smdebug.rules.finding import show_value
from smdebug.rules.params import as_float, as_int, as_regex, as_str, bounded, optional

if TYPE_CHECKING:
    from smdebug.trials.trial import Trial

__all__ = ["TreeDepth", "FeatureImportanceOverweight", "CreateXgboostReport", "REPORT_KEY"]

NODE_TENSOR = "trees/Node"
# where the report goes under the rule's output path, as SageMaker lays out a job's rule output
REPORT_KEY = "rule-output/CreateXgboostReport/xgboost_report.html"
MAX_SCORED_STEPS = 100
# an XGBoost metric as the hook names it, <evals name>-<metric> (train-logloss, validation-ndcg@5)
METRIC_REGEX = r"^[a-zA-Z][a-zA-Z0-9_]*-[-a-zA-Z0-9@:_.]+$"


_non_negative_int = bounded(as_int, 0)
_positive_int = bounded(as_int, 1)


_fraction = bounded(as_float, 0.0, 1.0)


class TreeDepth(BuiltinRule):
    """Fires when the trees saved at a step are deeper than ``depth``.

    The depth is estimated as documented, from the base-2 logarithm of the largest node id in
    ``trees/Node`` at the step; reference choice (ambiguity register 5): ``floor(log2(max id))``,
    0 for a single leaf, and the rule fires iff it is greater than ``depth``. XGBoost numbers
    nodes in the order it creates them, so this is a lower bound of the true depth: a complete
    tree of depth d has ids up to 2**(d+1) - 2 and gives exactly d, a sparse deep tree less.

    Hook collections: none in SageMaker's configuration (issue #2772: the rule then sees
    nothing); we declare ``trees``, which holds ``trees/Node``. A trial without ``trees/Node``
    never fires; the "evaluated no tensor" warning says why, once.

    NaN and inf: only ``trees/Node`` is read, and only its finite whole values: the NaN of a
    leaf's split, gain or children (other ``trees/`` columns) is structure, not a finding, and a
    node id column read as floats with NaN in it is judged on its finite ids.

    Nothing judged: the reason says the trial has no ``trees/Node`` (save the ``trees``
    collection; what the trial holds) or it held no node id at the steps evaluated.
    """

    report_needs = {"regex": "^trees/"}  # what smdebug report needs saved to run it
    params = (Param("depth", _non_negative_int, "4", "largest acceptable tree depth"),)
    # the parameters, parsed when the rule is built (see ``params``)
    depth: int
    hook_collections = (HookCollection("trees"),)

    def __init__(self, base_trial: Trial, action_str: str = "", **params: Any) -> None:
        super().__init__(base_trial, action_str=action_str, **params)
        self.last_depth: int | None = None

    def invoke_at_step(self, step: int) -> bool:
        trial = self.base_trial
        if not trial.has_tensor(NODE_TENSOR):  # invoke_rule's "evaluated no tensor" warning says so, once
            self.unjudged(
                f"the trial has no {NODE_TENSOR} tensor: save the 'trees' collection of the XGBoost "
                f"hook; the trial holds {trial_holds(trial)}"
            )
            return False
        nodes = value_or_none(trial, NODE_TENSOR, step)
        arr = np.asarray(nodes) if nodes is not None else np.empty(0)
        ids = arr.astype(np.float64).ravel() if arr.dtype.kind in "fiub" else np.empty(0)
        ids = ids[np.isfinite(ids)]
        if ids.size == 0:
            if not self.tensors_evaluated:
                self.unjudged(f"{NODE_TENSOR} held no finite node id at the steps evaluated")
            return False
        self.evaluated()
        top = int(ids.max())
        self.last_depth = top.bit_length() - 1 if top > 0 else 0  # floor(log2(top)), exactly
        if self.last_depth > self.depth:
            return self.found(
                step,
                f"the trees saved at this step are at least {self.last_depth} deep (largest node id {top}: "
                f"floor(log2({top})) = {self.last_depth}), more than depth {self.depth}",
                tensors=[NODE_TENSOR],
                values=[self.last_depth],
                condition=f"estimated depth {self.last_depth} > depth {self.depth}",
                worker=first_worker(trial, NODE_TENSOR, step),
            )
        return False


class FeatureImportanceOverweight(BuiltinRule):
    """Fires when the ``nfeatures`` largest importances hold more than ``threshold`` of the total.

    At each step the scalar values of the tensors matching ``tensor_regex`` (one per feature,
    ``feature_importance/weight/<feature>`` by default) are summed; the share of the
    ``nfeatures`` largest is ``sum(top n) / sum(all)`` (normalised again, though the hook already
    normalises). A model using at most ``nfeatures`` features always has a share of 1.

    NaN and inf: an importance that is NaN or infinite is left out (a feature without a usable
    importance), as are tensors that are not one number (``trees/`` columns, whose leaf NaN are
    structure): neither is a finding.

    Nothing judged: the reason gives the regex and the collections the trial holds, or says the
    matched tensors held no finite scalar.
    """

    report_needs = {"regex": ".*feature_importance/weight"}  # what smdebug report needs saved to run it
    params = (
        Param("threshold", _fraction, "0.8", "largest acceptable share of the top features"),
        Param("nfeatures", _positive_int, "3", "number of largest features"),
        Param("tensor_regex", as_regex, ".*feature_importance/weight", "importance tensors"),
    )
    # the parameters, parsed when the rule is built (see ``params``)
    threshold: float
    nfeatures: int
    tensor_regex: re.Pattern
    hook_collections = (HookCollection("feature_importance", {"save_interval": "500"}),)

    def __init__(self, base_trial: Trial, action_str: str = "", **params: Any) -> None:
        super().__init__(base_trial, action_str=action_str, **params)
        self.last_share: float | None = None

    def invoke_at_step(self, step: int) -> bool:
        trial = self.base_trial
        values = {}
        names = trial.tensor_names(step=step, regex=self.tensor_regex.pattern)
        for name in names:
            v = value_or_none(trial, name, step)
            if v is not None and np.size(v) == 1 and np.asarray(v).dtype.kind in "fiub":
                x = float(np.asarray(v).reshape(-1)[0])
                if np.isfinite(x):
                    values[name] = x
        w = np.array(list(values.values()), dtype=np.float64)
        total = w.sum()
        if w.size == 0 or total <= 0:
            if not self.tensors_evaluated:
                self._say_why_unjudged(names)
            return False
        self.evaluated(len(values))
        top_names = sorted(values, key=lambda n: values[n], reverse=True)[: self.nfeatures]
        top = sum(values[n] for n in top_names)
        self.last_share = float(top / total)
        if self.last_share > self.threshold:
            features = ", ".join(n.rsplit("/", 1)[-1] for n in top_names)
            return self.found(
                step,
                f"the {len(top_names)} largest of {w.size} importances ({features}) hold "
                f"{show_value(self.last_share)} of the total, more than threshold {show_value(self.threshold)}",
                tensors=top_names,
                values=[values[n] for n in top_names],
                condition=f"share of the {len(top_names)} largest {show_value(self.last_share)} > threshold "
                f"{show_value(self.threshold)}",
                worker=first_worker(trial, top_names[0], step),
            )
        return False

    def _say_why_unjudged(self, names: list) -> None:
        trial = self.base_trial
        if names:
            self.unjudged(
                f"tensor_regex {self.tensor_regex.pattern!r} matched tensors ({', '.join(names[:3])}) that "
                "hold no finite, positive one-number importance"
            )
        elif not trial.tensor_names(regex=self.tensor_regex.pattern):
            self.unjudged(
                f"tensor_regex {self.tensor_regex.pattern!r} matched no tensor; the trial holds {trial_holds(trial)}"
            )


def default_output_path(trial_path: str) -> str:
    """The folder holding the trial's folder (a job's folder when the trial is its debug-output)."""
    p = str(trial_path).rstrip("/")
    if "://" in p:
        scheme, rest = p.split("://", 1)
        return f"{scheme}://{rest.rsplit('/', 1)[0]}" if "/" in rest else p
    return os.path.dirname(os.path.abspath(p))


class CreateXgboostReport(BuiltinRule):
    """Never fires; writes an HTML report of an XGBoost training (spec 3.21).

    The report (xgboost_report.py) holds the distribution of the true labels, loss and metrics
    per step (train and validation), feature importances (weight, gain, cover), and, for
    classification, the confusion matrix, precision/recall/F1 per class with micro, macro and
    weighted averages, accuracy per class over steps and (binary) the ROC curve with its AUC;
    for regression, the residuals and the absolute error per label bin over steps. The problem
    type comes from ``hyperparameters/objective`` when saved, else from the values.

    It is written to ``<output_path>/rule-output/CreateXgboostReport/xgboost_report.html``
    (``report_path``), a local folder or an ``s3://`` URL. ``output_path`` is our addition to the
    documented parameters; by default it is the folder holding the trial's folder, so a trial at
    ``<job>/debug-output`` gets its report in ``<job>/rule-output/...`` as on SageMaker. The
    report is rewritten whenever the rule is evaluated at the newest step of the trial: once,
    at the last step, for a finished trial; at each new step while training runs, so the
    last version covers the whole training. ``write_report()`` writes it on demand.
    matplotlib (the ``plot`` extra) is needed; its absence is reported when the rule is built.

    It never fires, so it has no finding. When the trial holds
    nothing the report can show, the "evaluated nothing" reason says so and what the trial holds.
    """

    params = (Param("output_path", optional(as_str), None, "folder under which rule-output/ is written"),)
    # the parameters, parsed when the rule is built (see ``params``)
    output_path: str | None
    hook_collections = (
        HookCollection("metrics", {"save_interval": "5"}),
        HookCollection("feature_importance", {"save_interval": "5"}),
        HookCollection("predictions", {"save_interval": "5"}),
        HookCollection("labels", {"save_interval": "5"}),
        HookCollection("hyperparameters", {"save_steps": "0"}),
    )

    def __init__(self, base_trial: Trial, action_str: str = "", **params: Any) -> None:
        super().__init__(base_trial, action_str=action_str, **params)
        if importlib.util.find_spec("matplotlib") is None:
            raise MissingDependency("matplotlib", "plot", "by CreateXgboostReport to draw its plots")
        from smdebug.storage import open_store

        base = self.output_path or default_output_path(base_trial.path)
        self._store = open_store(base)
        self.report_path = self._store.describe(REPORT_KEY)
        self.reports_written = 0

    def invoke_at_step(self, step: int) -> bool:
        steps = self.base_trial.steps()
        if steps and step >= steps[-1]:
            self.write_report()
        return False

    def write_report(self) -> str:
        """Render the report from what the trial holds now and write it; returns where."""
        data = self.collect()
        n = len(data.metrics) + len(data.hyperparameters) + sum(len(d) for d in data.importance.values())
        self.evaluated(n + (0 if data.labels is None else 2))
        if not self.tensors_evaluated:
            self.unjudged(
                "the report has nothing to show: no XGBoost metric, feature importance, labels and "
                f"predictions or hyperparameter is saved; the trial holds {trial_holds(self.base_trial)}"
            )
        page = render_report(data)
        self._store.write(REPORT_KEY, page.encode("utf-8"))
        self.reports_written += 1
        self.logger.info("%s: report written to %s", self.rule_name, self.report_path)
        return self.report_path

    # --------------------------------------------------------------------------- reading
    def _names(self, collection: str, regex: str | None = None) -> list:
        """Names in the hook's collection, and those matching its naming (for trials without the collection)."""
        trial = self.base_trial
        names = set(trial.tensor_names(collection=collection))
        return sorted(names | set(trial.tensor_names(regex=regex)) if regex else names)

    def collect(self) -> Any:
        """What the report shows, read from the trial now (a ReportData; ``smdebug report`` shows it too)."""
        trial = self.base_trial
        steps = trial.steps()
        metrics = []
        for name in sorted(set(self._names("metrics", METRIC_REGEX)) | set(self._names("losses"))):
            vals = trial.tensor(name).values()
            st = sorted(vals)
            metrics.append(MetricSeries(name, np.array(st), np.array([float(np.ravel(vals[s])[0]) for s in st])))
        hyper = {}
        for name in self._names("hyperparameters", r"^hyperparameters/"):
            t = trial.tensor(name)
            v = t.value(t.steps()[0])
            hyper[name.split("/", 1)[1]] = ", ".join(str(x) for x in np.ravel(v))
        data = ReportData(
            trial_path=trial.path,
            steps=steps,
            metrics=metrics,
            importance={},
            importance_step=None,
            hyperparameters=hyper,
        )
        self._importance(data)
        self._predictions(data, hyper.get("objective"))
        return data

    def _importance(self, data: Any) -> None:
        trial = self.base_trial
        names = set(self._names("feature_importance", r"^feature_importance/"))
        for step in reversed(data.steps):
            at = [n for n in trial.tensor_names(step=step) if n in names]
            if not at:
                continue
            for name in at:
                parts = name.split("/", 2)
                v = value_or_none(trial, name, step)
                if len(parts) == 3 and v is not None:
                    data.importance.setdefault(parts[1], {})[parts[2]] = float(np.ravel(v)[0])
            data.importance_step = step
            return

    def _predictions(self, data: Any, objective: Any) -> None:
        trial = self.base_trial
        label_name = _first(self._names("labels", r"^labels$"), "labels")
        pred_name = _first(self._names("predictions", r"^predictions$"), "predictions")
        if label_name is None or pred_name is None:
            return
        common = sorted(set(trial.tensor(label_name).steps()) & set(trial.tensor(pred_name).steps()))
        if not common:
            return
        last = common[-1]
        data.labels, data.predictions = trial.tensor(label_name).value(last), trial.tensor(pred_name).value(last)
        data.prediction_step = last
        data.problem = problem_type(objective, data.labels, data.predictions)
        if len(common) > MAX_SCORED_STEPS:  # evenly spaced, always with the last
            pick = np.unique(np.linspace(0, len(common) - 1, MAX_SCORED_STEPS).round().astype(int))
            common = [common[i] for i in pick]
        scores = data.scores
        if data.problem == REGRESSION:
            bins = label_bins(data.labels)
            scores.columns = [
                f"labels in [{a:.3g}, {b:.3g}{']' if i == len(bins) - 2 else ')'}"
                for i, (a, b) in enumerate(zip(bins[:-1], bins[1:]))
            ]
            kw: dict[str, Any] = {"bins": bins}
        else:
            n = max(int(class_ids(data.labels).max(initial=0)), int(class_ids(data.predictions).max(initial=0))) + 1
            scores.columns = [f"class {i}" for i in range(n)]
            kw = {"n_classes": n}
        size = np.size if data.problem == REGRESSION else (lambda v: class_ids(v).size)
        for s in common:
            y, p = trial.tensor(label_name).value(s), trial.tensor(pred_name).value(s)
            if np.size(y) and size(p) == size(y):
                scores.steps.append(s)
                scores.rows.append(step_scores(data.problem, y, p, **kw))


def _first(names: list, preferred: str) -> str | None:
    """The tensor named ``preferred`` if among ``names``, else the first of them."""
    if preferred in names:
        return preferred
    return names[0] if names else None
