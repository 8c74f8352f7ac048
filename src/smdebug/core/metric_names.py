"""Which XGBoost metrics are losses: written once, for the XGBoost ``losses`` collection and the
rules that compare losses (Overfit, Overtraining).

An XGBoost metric is saved as ``<data set>-<metric>`` (``train-logloss``, ``validation_0-ndcg@5``).
A loss is a metric that falls as the model improves. The metrics that grow instead are left out:
``auc`` and ``map`` (as smdebug 1.0.34's regex does), and ``aucpr``, ``ndcg`` and ``pre`` (area
under the PR curve, NDCG and precision, higher is better, which 1.0.34's regex missed), each
optionally with its ``@`` cut-off (``ndcg@5``, ``pre@10``, ``map@3-``).
"""

from __future__ import annotations

from smdebug.patterns import compile as compile_pattern

__all__ = ["INCREASING_METRICS", "METRIC_REGEX", "LOSS_REGEX", "is_increasing_metric", "is_loss_metric"]

# metric names (after "<data set>-") that grow as the model improves, each optionally "@<cut-off>"
INCREASING_METRICS = ("auc", "aucpr", "map", "ndcg", "pre")
# any "<data set>-<metric>" without "/"
METRIC_REGEX = "^[^/]+-[^/]+$"
# a metric whose name after a "-" is not one of those that grow (this exact text is a key of
# smdebug.patterns.KNOWN_DEFAULTS, which matches it with RE2, its lookahead unrolled)
LOSS_REGEX = f"^[^/]+-(?!({'|'.join(INCREASING_METRICS)})(@[^/]*)?$)[^/]+$"


def _compiled(pattern: str):
    return compile_pattern(pattern, arg="the XGBoost metric regex")


def is_loss_metric(name: str) -> bool:
    """Whether ``name`` is an XGBoost metric (``<data set>-<metric>``) that is a loss: the XGBoost
    ``losses`` collection's own regex, so the two cannot disagree."""
    return bool(_compiled(LOSS_REGEX).search(name))


def is_increasing_metric(name: str) -> bool:
    """Whether ``name`` is an XGBoost metric that grows as the model improves (``validation-auc``,
    ``train-ndcg@5``): a metric that is not a loss. False for any other name, ``loss`` included."""
    return bool(_compiled(METRIC_REGEX).search(name)) and not is_loss_metric(name)
