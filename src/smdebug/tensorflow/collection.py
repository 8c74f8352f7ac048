"""TensorFlow/Keras default collections, as data (core makes the collections from them)."""

from __future__ import annotations

from smdebug.core.config.collection import Collection, CollectionKeys
from smdebug.core.config.collection import CollectionKeys as _K
from smdebug.core.config.collection_defaults import CollectionDefaults

__all__ = ["Collection", "CollectionManager", "CollectionKeys", "TF_COLLECTIONS"]

# the collections smdebug 1.0.34's TensorFlow hook creates; tensors are put into them by name
# (weights, biases, gradients, losses, metrics...) rather than by regex; 1.0.34's regex for biases
# also caught the optimizer's slots of biases (adam/..._bias_momentum)
TF_COLLECTIONS = CollectionDefaults(
    created=dict.fromkeys(
        [_K.ALL, _K.DEFAULT, _K.WEIGHTS, _K.BIASES, _K.GRADIENTS, _K.LOSSES, _K.METRICS, _K.INPUTS]
        + [_K.OUTPUTS, _K.LAYERS, _K.SM_METRICS, _K.OPTIMIZER_VARIABLES]
    ),  # no include regex: tensors go in by what they are
    # saved when include_collections names none of them, as 1.0.34's TF hooks do
    include=(_K.METRICS, _K.LOSSES, _K.SM_METRICS),
)
CollectionManager = TF_COLLECTIONS.manager_class()
CollectionManager.__module__ = __name__
