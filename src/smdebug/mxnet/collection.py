"""MXNet's default collections, as data (core makes the collections from them)."""

from __future__ import annotations

from smdebug.core.collection import Collection, CollectionKeys
from smdebug.core.collection_defaults import CollectionDefaults

__all__ = ["Collection", "CollectionManager", "CollectionKeys", "DEFAULT_MXNET_COLLECTIONS", "MXNET_COLLECTIONS"]

# the regexes smdebug 1.0.34 gives MXNet's collections, so that existing analysis code and rules keep working
MXNET_COLLECTIONS = CollectionDefaults(
    created={
        CollectionKeys.ALL: None,
        CollectionKeys.DEFAULT: None,
        CollectionKeys.WEIGHTS: "^(?!gradient).*weight",
        CollectionKeys.BIASES: "^(?!gradient).*bias",
        CollectionKeys.GRADIENTS: "^gradient",
        CollectionKeys.LOSSES: ".*loss._(?!input).*output",
    },
    include=(CollectionKeys.LOSSES,),
    # created when asked for, so that a trial that does not use them has 1.0.34's collections file
    on_demand={CollectionKeys.INPUTS: "_input_", CollectionKeys.OUTPUTS: "_output_"},
)
DEFAULT_MXNET_COLLECTIONS = set(MXNET_COLLECTIONS.created)
CollectionManager = MXNET_COLLECTIONS.manager_class()
CollectionManager.__module__ = __name__
