"""JAX's default collections, as data (core makes the collections from them).

Tensors are put into collections by what they are (the argument of ``Hook.record`` that carried
them: params, grads, updates, opt_state, loss, metrics), not by regex: the names come from the
pytrees' paths (:mod:`smdebug.jax.names`), which no regex can tell apart. A collection's
``include_regex`` given by the user still adds tensors to it.
"""

from __future__ import annotations

from smdebug.core.config.collection import Collection, CollectionKeys
from smdebug.core.config.collection import CollectionKeys as _K
from smdebug.core.config.collection_defaults import CollectionDefaults

__all__ = ["Collection", "CollectionManager", "CollectionKeys", "JAX_COLLECTIONS"]

JAX_COLLECTIONS = CollectionDefaults(
    created=dict.fromkeys(
        [_K.ALL, _K.DEFAULT, _K.WEIGHTS, _K.BIASES, _K.GRADIENTS, _K.OPTIMIZER_VARIABLES, _K.LOSSES, _K.METRICS]
    ),  # no include regex: tensors go in by what they are
    # saved when include_collections names none of them, as the Keras hook does
    include=(_K.LOSSES, _K.METRICS),
)
CollectionManager = JAX_COLLECTIONS.manager_class()
CollectionManager.__module__ = __name__
