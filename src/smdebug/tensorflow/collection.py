"""TensorFlow/Keras default collections, as data (core makes the collections from them)."""

from __future__ import annotations

from smdebug.core.config.collection import Collection, CollectionKeys
from smdebug.core.config.collection_defaults import CollectionDefaults

__all__ = ["Collection", "CollectionManager", "CollectionKeys", "TF_COLLECTIONS"]

# the collections smdebug 1.0.34's TensorFlow hook creates; tensors are put into them by name
# (weights, biases, gradients, losses, metrics...) rather than by regex; 1.0.34's regex for biases
# also caught the optimizer's slots of biases (adam/..._bias_momentum)
TF_COLLECTIONS = CollectionDefaults(
    created={
        CollectionKeys.ALL: None,
        CollectionKeys.DEFAULT: None,
        CollectionKeys.WEIGHTS: None,
        CollectionKeys.BIASES: None,  # by what a variable is (tensorflow.variables), not by regex
        CollectionKeys.GRADIENTS: None,
        CollectionKeys.LOSSES: None,
        CollectionKeys.METRICS: None,
        CollectionKeys.INPUTS: None,
        CollectionKeys.OUTPUTS: None,
        CollectionKeys.LAYERS: None,
        CollectionKeys.SM_METRICS: None,
        CollectionKeys.OPTIMIZER_VARIABLES: None,
    },
    # saved when include_collections names none of them, as 1.0.34's TF hooks do
    include=(CollectionKeys.METRICS, CollectionKeys.LOSSES, CollectionKeys.SM_METRICS),
)
CollectionManager = TF_COLLECTIONS.manager_class()
CollectionManager.__module__ = __name__
