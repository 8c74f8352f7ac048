"""XGBoost's default collections and the regexes smdebug 1.0.34 gives them (data only)."""

from __future__ import annotations

import re

from smdebug.core.collection import Collection, CollectionKeys
from smdebug.core.collection_manager import CollectionManager as BaseCollectionManager

__all__ = ["Collection", "CollectionManager", "DEFAULT_XGBOOST_COLLECTIONS", "DEFAULT_REGEXES", "is_loss_metric"]

DEFAULT_XGBOOST_COLLECTIONS = {
    CollectionKeys.ALL,
    CollectionKeys.DEFAULT,
    CollectionKeys.HYPERPARAMETERS,
    CollectionKeys.METRICS,
    CollectionKeys.LOSSES,
    CollectionKeys.PREDICTIONS,
    CollectionKeys.LABELS,
    CollectionKeys.FEATURE_IMPORTANCE,
    CollectionKeys.AVERAGE_SHAP,
    CollectionKeys.FULL_SHAP,
    CollectionKeys.TREES,
}

# 1.0.34's regexes, except average_shap and full_shap: 1.0.34 wrote `^average_shap/.*[^/bias]$`,
# a character class that leaves out every feature whose name ends in a, b, i, s or "/"
# (e.g. sklearn's "mean radius"); these leave out only the bias term, as intended.
DEFAULT_REGEXES = {
    CollectionKeys.HYPERPARAMETERS: "^hyperparameters/.*$",
    CollectionKeys.METRICS: "^[a-zA-z]+-[a-zA-z0-9]+$",
    CollectionKeys.LOSSES: "^[a-zA-z]+-.+(?<!(auc|map))$",  # metrics that decrease as the model improves
    CollectionKeys.PREDICTIONS: "^predictions$",
    CollectionKeys.LABELS: "^labels$",
    CollectionKeys.FEATURE_IMPORTANCE: "^feature_importance/.*",
    CollectionKeys.AVERAGE_SHAP: "^average_shap/(?!bias$).+$",
    CollectionKeys.FULL_SHAP: "^full_shap/(?!bias$).+$",
    CollectionKeys.TREES: "^trees/.*",
}

_INCREASING_METRIC = re.compile("^[a-zA-z]+-(auc|map)$")


def is_loss_metric(name: str) -> bool:
    """Whether a metric name ('<evals name>-<metric>') is a loss (not auc or map), as in 1.0.34."""
    return not _INCREASING_METRIC.match(name)


class CollectionManager(BaseCollectionManager):
    def __init__(self, create_default=True):
        super().__init__()
        if create_default:
            for name in sorted(DEFAULT_XGBOOST_COLLECTIONS):
                self.create_collection(name)
            for name, regex in DEFAULT_REGEXES.items():
                self.get(name).include(regex)
