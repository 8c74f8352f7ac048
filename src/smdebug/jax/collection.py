"""JAX's default collections, as data (core makes the collections from them).

Tensors are put into collections by what they are (the argument of ``Hook.record`` that carried
them: params, grads, updates, opt_state, loss, metrics), not by regex: the names come from the
pytrees' paths (:mod:`smdebug.jax.names`), which no regex can tell apart. A collection's
``include_regex`` given by the user still adds tensors to it.
"""

from __future__ import annotations

from smdebug.core.config.collection import Collection, CollectionKeys
from smdebug.core.config.collection_defaults import CollectionDefaults

__all__ = ["Collection", "CollectionManager", "CollectionKeys", "JAX_COLLECTIONS"]

JAX_COLLECTIONS = CollectionDefaults(
    created={
        CollectionKeys.ALL: None,
        CollectionKeys.DEFAULT: None,
        CollectionKeys.WEIGHTS: None,
        CollectionKeys.BIASES: None,
        CollectionKeys.GRADIENTS: None,
        CollectionKeys.OPTIMIZER_VARIABLES: None,
        CollectionKeys.LOSSES: None,
        CollectionKeys.METRICS: None,
    },
    # saved when include_collections names none of them, as the Keras hook does
    include=(CollectionKeys.LOSSES, CollectionKeys.METRICS),
)
CollectionManager = JAX_COLLECTIONS.manager_class()
CollectionManager.__module__ = __name__
