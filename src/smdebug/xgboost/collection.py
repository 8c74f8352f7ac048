"""XGBoost's default collections and the regexes smdebug 1.0.34 gives them, as data (core makes the collections)."""

from __future__ import annotations

from smdebug.core.config.collection import Collection, CollectionKeys
from smdebug.core.config.collection_defaults import CollectionDefaults
from smdebug.core.metric_names import LOSS_REGEX, METRIC_REGEX, is_loss_metric

__all__ = [
    "Collection",
    "CollectionManager",
    "CollectionKeys",
    "XGBOOST_COLLECTIONS",
    "DEFAULT_XGBOOST_COLLECTIONS",
    "DEFAULT_REGEXES",
    "is_loss_metric",
]

# 1.0.34's regexes, except where they drop what the collection's name promises:
# - metrics / losses: 1.0.34's `^[a-zA-z]+-[a-zA-z0-9]+$` misses every data set or metric name with
#   a digit, "@" or "." before / after the "-" (scikit-learn's "validation_0-logloss", "ndcg@5",
#   "error@0.7"); here a metric is any name "<data set>-<metric>" without "/". Losses leave out the
#   metrics that grow as the model improves: auc and map as in 1.0.34, and aucpr, ndcg and pre
#   (core/metric_names.py: one definition, which the rules Overfit and Overtraining use too).
# - average_shap / full_shap: 1.0.34's `^average_shap/.*[^/bias]$` is a character class that
#   leaves out every feature whose name ends in a, b, i, s or "/" (e.g. "mean radius"); here
#   only the bias term is left out, as intended.
DEFAULT_REGEXES = {
    CollectionKeys.HYPERPARAMETERS: "^hyperparameters/.*$",
    CollectionKeys.METRICS: METRIC_REGEX,
    CollectionKeys.LOSSES: LOSS_REGEX,
    CollectionKeys.PREDICTIONS: "^predictions$",
    CollectionKeys.LABELS: "^labels$",
    CollectionKeys.FEATURE_IMPORTANCE: "^feature_importance/.*",
    CollectionKeys.AVERAGE_SHAP: "^average_shap/(?!bias$).+$",
    CollectionKeys.FULL_SHAP: "^full_shap/(?!bias$).+$",
    CollectionKeys.TREES: "^trees/.*",
}

# every collection exists from the start, as in 1.0.34's collections file; metrics saved by default
XGBOOST_COLLECTIONS = CollectionDefaults(
    created={CollectionKeys.ALL: None, CollectionKeys.DEFAULT: None, **DEFAULT_REGEXES},
    include=(CollectionKeys.METRICS,),
)
DEFAULT_XGBOOST_COLLECTIONS = set(XGBOOST_COLLECTIONS.created)
CollectionManager = XGBOOST_COLLECTIONS.manager_class()
CollectionManager.__module__ = __name__
