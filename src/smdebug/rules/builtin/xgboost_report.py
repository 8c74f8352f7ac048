"""The HTML report of CreateXgboostReport: numbers from numpy, plots from matplotlib, one file.

The page is self-contained: styles inline, every plot an inline base64 PNG, no script and no
address outside the page, so it opens offline and fetches nothing. matplotlib is imported only
when a report is rendered (the ``plot`` extra), through ``matplotlib.figure.Figure`` so that no
pyplot state or GUI backend is touched.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from smdebug.analysis.page_kit import document, png_img, section, table
from smdebug.rules.builtin.classification import class_ids, confusion_matrix

__all__ = [
    "MetricSeries",
    "StepScores",
    "ReportData",
    "problem_type",
    "step_scores",
    "classification_scores",
    "roc_curve",
    "render_report",
    "report_sections",
]

BINARY, MULTICLASS, REGRESSION = "binary classification", "multi-class classification", "regression"
IMPORTANCE_SHOWN = ("weight", "gain", "cover")  # as SageMaker's report; total_gain/total_cover are left out
TOP_FEATURES = 20
REGRESSION_BINS = 5


@dataclass
class MetricSeries:
    """One metric (``train-logloss``) over the steps where it was saved."""

    name: str
    steps: np.ndarray
    values: np.ndarray


@dataclass
class StepScores:
    """Per-step scores of the predictions: per-class accuracy, or absolute error per label bin."""

    steps: list = field(default_factory=list)
    rows: list = field(default_factory=list)  # one array per step, one value per column
    columns: list = field(default_factory=list)  # the names of the columns


@dataclass
class ReportData:
    """Everything the report shows, read from a trial by CreateXgboostReport."""

    trial_path: str
    steps: list
    metrics: list  # of MetricSeries
    importance: dict  # type -> {feature: normalised importance}, at importance_step
    importance_step: int | None
    hyperparameters: dict  # name -> text
    problem: str | None = None
    labels: np.ndarray | None = None  # validation labels at prediction_step
    predictions: np.ndarray | None = None
    prediction_step: int | None = None
    scores: StepScores = field(default_factory=StepScores)


def problem_type(objective: str | None, labels: np.ndarray, predictions: np.ndarray) -> str:
    """Binary, multi-class or regression: from XGBoost's objective when saved, else from the values."""
    if objective:
        kind = objective.split(":", 1)[0].lower()
        if kind == "binary":
            return BINARY
        if kind == "multi":
            return MULTICLASS
        return REGRESSION
    preds = np.asarray(predictions)
    if preds.ndim >= 2 and preds.shape[-1] > 1:
        return MULTICLASS
    lab = np.asarray(labels, dtype=np.float64).reshape(-1)
    if lab.size == 0 or not np.all(lab == np.rint(lab)):
        return REGRESSION
    if set(np.unique(lab)) <= {0.0, 1.0} and np.nanmin(preds) >= 0 and np.nanmax(preds) <= 1:
        return BINARY
    p = preds.reshape(-1)
    return MULTICLASS if np.all(p == np.rint(p)) and np.unique(lab).size <= 100 else REGRESSION


def step_scores(problem: str, labels: Any, predictions: Any, *, n_classes: int = 0, bins: Any = None) -> np.ndarray:
    """Per-class accuracy (classification, ``n_classes`` values) or mean absolute error per label bin
    (regression, one value per bin between the edges ``bins``); NaN where a class or bin is empty."""
    if problem == REGRESSION:
        y = np.asarray(labels, dtype=np.float64).reshape(-1)
        err = np.abs(np.asarray(predictions, dtype=np.float64).reshape(-1) - y)
        which = np.clip(np.searchsorted(bins, y, side="right") - 1, 0, len(bins) - 2)
        return np.array([err[which == b].mean() if np.any(which == b) else np.nan for b in range(len(bins) - 1)])
    c = confusion_matrix(class_ids(labels), class_ids(predictions), n_classes)
    rows = c.sum(axis=1)
    return np.divide(np.diag(c), rows, out=np.full(n_classes, np.nan), where=rows > 0)


def label_bins(labels: np.ndarray) -> np.ndarray:
    """Edges of up to REGRESSION_BINS label bins of about equal counts (regression)."""
    edges = np.unique(np.quantile(np.asarray(labels, dtype=np.float64), np.linspace(0, 1, REGRESSION_BINS + 1)))
    return edges if edges.size >= 2 else np.array([edges[0], edges[0] + 1.0])


def classification_scores(c: np.ndarray) -> dict:
    """Per-class precision, recall, F1 and support, and their micro, macro and weighted averages.

    Classes present in the labels or the predictions count in the macro average; an undefined
    ratio (nothing predicted, or no sample) is 0, as scikit-learn reports it.
    """
    tp = np.diag(c).astype(np.float64)
    support, predicted = c.sum(axis=1), c.sum(axis=0)
    precision = np.divide(tp, predicted, out=np.zeros_like(tp), where=predicted > 0)
    recall = np.divide(tp, support, out=np.zeros_like(tp), where=support > 0)
    denom = precision + recall
    f1 = np.divide(2 * precision * recall, denom, out=np.zeros_like(tp), where=denom > 0)
    present = (support > 0) | (predicted > 0)
    total = max(int(support.sum()), 1)
    accuracy = float(tp.sum() / total)
    out = {"classes": np.flatnonzero(present), "precision": precision, "recall": recall, "f1": f1, "support": support}
    out["micro"] = (accuracy, accuracy, accuracy)
    out["macro"] = tuple(float(v[present].mean()) if present.any() else 0.0 for v in (precision, recall, f1))
    out["weighted"] = tuple(float((v * support).sum() / total) for v in (precision, recall, f1))
    out["accuracy"] = accuracy
    return out


def roc_curve(labels: np.ndarray, scores: np.ndarray) -> Any:
    """False and true positive rates over every threshold, and the area under the curve."""
    y = class_ids(labels).astype(bool)
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    order = np.argsort(-s, kind="mergesort")
    s, y = s[order], y[order]
    last = np.r_[np.flatnonzero(np.diff(s)), s.size - 1]  # the last index of each distinct score
    tp, fp = np.cumsum(y)[last], np.cumsum(~y)[last]
    tpr = np.r_[0.0, tp / max(int(y.sum()), 1)]
    fpr = np.r_[0.0, fp / max(int((~y).sum()), 1)]
    return fpr, tpr, float(np.trapezoid(tpr, fpr) if hasattr(np, "trapezoid") else np.trapz(tpr, fpr))  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------------------- plots
def _figure(width: Any = 6.4, height: Any = 3.6) -> Any:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=90, layout="constrained")
    return fig, fig.subplots()


def _img(fig: Any, alt: str) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return png_img(buf.getvalue(), alt, "plot")


def _plot_labels(data: ReportData) -> str:
    fig, ax = _figure()
    if data.problem == REGRESSION:
        ax.hist(np.asarray(data.labels, dtype=np.float64).reshape(-1), bins=30, color="#4878a8")
        ax.set_xlabel("label")
    else:
        ids = class_ids(data.labels)
        counts = np.bincount(ids[ids >= 0])
        ax.bar(np.arange(counts.size), counts, color="#4878a8")
        ax.set_xticks(np.arange(counts.size))
        ax.set_xlabel("class")
    ax.set_ylabel("samples")
    ax.set_title(f"True labels of the validation set (step {data.prediction_step})")
    return _img(fig, "distribution of true labels")


def _plot_metric(metric: str, series: list) -> str:
    fig, ax = _figure()
    for s in series:
        ax.plot(s.steps, s.values, marker="o", markersize=3, label=s.name)
    ax.set_xlabel("step (boosting round)")
    ax.set_ylabel(metric)
    ax.set_title(metric)
    ax.legend()
    return _img(fig, f"{metric} per step")


def _plot_importance(kind: str, scores: dict, step: Any) -> str:
    top = sorted(scores.items(), key=lambda kv: kv[1], reverse=True)[:TOP_FEATURES][::-1]
    fig, ax = _figure(6.4, 0.6 + 0.25 * len(top))
    ax.barh([k for k, _ in top], [v for _, v in top], color="#59a14f")
    ax.set_xlabel(f"normalised {kind}")
    ax.set_title(f"Feature importance: {kind} (step {step})")
    return _img(fig, f"feature importance {kind}")


def _plot_confusion(c: np.ndarray) -> str:
    n = c.shape[0]
    fig, ax = _figure(1.5 + 0.45 * max(n, 4), 1.2 + 0.45 * max(n, 4))
    ax.imshow(c, cmap="Blues")
    if n <= 20:
        top = c.max() if c.size else 0
        for (i, j), v in np.ndenumerate(c):
            ax.text(j, i, str(v), ha="center", va="center", fontsize=8, color="white" if v > top / 2 else "black")
    ax.set_xticks(np.arange(n))
    ax.set_yticks(np.arange(n))
    ax.set_xlabel("predicted")
    ax.set_ylabel("true label")
    ax.set_title("Confusion matrix")
    return _img(fig, "confusion matrix")


def _plot_scores(scores: StepScores, title: str, ylabel: str) -> str:
    fig, ax = _figure()
    rows = np.array(scores.rows, dtype=np.float64)
    for k, name in enumerate(scores.columns):
        ax.plot(scores.steps, rows[:, k], marker="o", markersize=3, label=name)
    ax.set_xlabel("step (boosting round)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if len(scores.columns) <= 12:
        ax.legend(fontsize=7, ncols=2)
    return _img(fig, title)


def _plot_roc(fpr: Any, tpr: Any, auc: Any) -> str:
    fig, ax = _figure(4.8, 4.2)
    ax.plot(fpr, tpr, color="#e15759", label=f"AUC = {auc:.4f}")
    ax.plot([0, 1], [0, 1], color="grey", linestyle="--", linewidth=0.8)
    ax.set_xlabel("false positive rate")
    ax.set_ylabel("true positive rate")
    ax.set_title("ROC curve")
    ax.legend(loc="lower right")
    return _img(fig, "ROC curve")


def _plot_residuals(labels: Any, predictions: Any) -> str:
    fig, ax = _figure()
    res = np.asarray(predictions, dtype=np.float64).reshape(-1) - np.asarray(labels, dtype=np.float64).reshape(-1)
    ax.hist(res, bins=30, color="#f28e2b")
    ax.set_xlabel("prediction - label")
    ax.set_ylabel("samples")
    ax.set_title("Distribution of residuals")
    return _img(fig, "distribution of residuals")


# ----------------------------------------------------------------------------------------- html
_CSS = """body{font-family:sans-serif;margin:2em;max-width:70em;color:#222}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:.6em 0}td,th{border:1px solid #ccc;padding:.2em .6em;text-align:right}
th{background:#f2f2f2}td.l,th.l{text-align:left}img.plot{display:block;margin:.6em 0;max-width:100%}
p.note{color:#666}"""


def _table(header: list | None, rows: list) -> str:
    return table(header, rows, first_cls="l")


def _classification(data: ReportData) -> list:
    y, p = class_ids(data.labels), class_ids(data.predictions)
    n = max(int(y.max(initial=0)), int(p.max(initial=0))) + 1
    c = confusion_matrix(y, p, n)
    s = classification_scores(c)
    rows = [
        [f"class {i}", f"{s['precision'][i]:.4f}", f"{s['recall'][i]:.4f}", f"{s['f1'][i]:.4f}", int(s["support"][i])]
        for i in s["classes"]
    ]
    total = int(s["support"].sum())
    rows += [[avg, *(f"{v:.4f}" for v in s[avg]), total] for avg in ("micro", "macro", "weighted")]
    out = [
        section("confusion-matrix", f"Confusion matrix (step {data.prediction_step})", _plot_confusion(c)),
        section(
            "classification-scores",
            "Precision, recall and F1",
            f"<p>Accuracy {s['accuracy']:.4f} on {total} validation samples.</p>"
            + _table(["", "precision", "recall", "F1", "support"], rows),
        ),
    ]
    if len(data.scores.steps) > 0:
        plot = _plot_scores(data.scores, "Accuracy per class over steps", "accuracy (diagonal of the confusion matrix)")
        out.append(section("accuracy-per-class", "Accuracy per class over steps", plot))
    preds = np.asarray(data.predictions)
    if data.problem == BINARY and preds.ndim == 1 and preds.min() >= 0 and preds.max() <= 1:
        fpr, tpr, auc = roc_curve(data.labels, preds)  # type: ignore[arg-type]  # labels saved with predictions
        out.append(
            section("roc", "ROC curve", f"<p>Area under the ROC curve: {auc:.4f}</p>" + _plot_roc(fpr, tpr, auc))
        )
    return out


def _regression(data: ReportData) -> list:
    res = np.asarray(data.predictions, dtype=np.float64).reshape(-1) - np.asarray(data.labels, dtype=np.float64)
    summary = _table(
        None,
        [
            ["mean absolute error", f"{np.abs(res).mean():.6g}"],
            ["root mean squared error", f"{np.sqrt((res**2).mean()):.6g}"],
            ["mean residual", f"{res.mean():.6g}"],
        ],
    )
    out = [
        section(
            "residuals",
            f"Residuals (step {data.prediction_step})",
            summary + _plot_residuals(data.labels, data.predictions),
        )
    ]
    if len(data.scores.steps) > 0:
        plot = _plot_scores(data.scores, "Absolute validation error per label bin", "mean absolute error")
        out.append(section("error-per-label-bin", "Absolute validation error per label bin over steps", plot))
    return out


def render_report(data: ReportData) -> str:
    """The report as one HTML document."""
    steps = f"{data.steps[0]} to {data.steps[-1]} ({len(data.steps)} saved)" if data.steps else "none"
    summary = [["trial", data.trial_path], ["steps", steps], ["problem", data.problem or "unknown (no predictions)"]]
    parts = [section("summary", "Summary", _table(None, summary)), *report_sections(data)]
    body = "\n".join(parts)
    return document("XGBoost training report", f"<h1>XGBoost training report</h1>\n{body}\n", _CSS)


def report_sections(data: ReportData) -> list:
    """The report's sections after its summary (each a ``<section>``): ``smdebug report`` puts them
    in its page for an XGBoost trial."""
    parts: list = []
    if data.hyperparameters:
        parts.append(
            section(
                "hyperparameters", "Hyperparameters", _table(["name", "value"], sorted(data.hyperparameters.items()))
            )
        )
    if data.labels is not None:
        parts.append(section("labels-distribution", "Distribution of true labels", _plot_labels(data)))
    by_metric: dict = {}
    for s in data.metrics:
        by_metric.setdefault(s.name.split("-", 1)[-1], []).append(s)
    if by_metric:
        plots = "".join(_plot_metric(m, sorted(ss, key=lambda s: s.name)) for m, ss in sorted(by_metric.items()))
        parts.append(section("metrics", "Loss and metrics per step (train and validation)", plots))
    if any(k in data.importance for k in IMPORTANCE_SHOWN):
        kinds = [k for k in IMPORTANCE_SHOWN if k in data.importance]
        plots = "".join(_plot_importance(k, data.importance[k], data.importance_step) for k in kinds)
        parts.append(section("feature-importance", "Feature importance", plots))
    if data.labels is not None and data.predictions is not None:
        parts += _regression(data) if data.problem == REGRESSION else _classification(data)
    else:
        parts.append(
            '<p class="note">No predictions and labels were saved: save the collections '
            "<code>predictions</code> and <code>labels</code> for the model's scores.</p>"
        )
    return parts
