"""PyTorch's default collections, as data (core makes the collections from them)."""

from __future__ import annotations

from smdebug.core.collection import Collection, CollectionKeys
from smdebug.core.collection_defaults import CollectionDefaults

__all__ = ["Collection", "CollectionManager", "CollectionKeys", "DEFAULT_PYTORCH_COLLECTIONS", "PYTORCH_COLLECTIONS"]

# the regexes smdebug 1.0.34 gives them, so that existing analysis code and rules keep working
PYTORCH_COLLECTIONS = CollectionDefaults(
    created={
        CollectionKeys.ALL: None,
        CollectionKeys.DEFAULT: None,
        CollectionKeys.WEIGHTS: "^(?!gradient).*weight",
        CollectionKeys.BIASES: "^(?!gradient).*bias",
        CollectionKeys.GRADIENTS: "^gradient",
        CollectionKeys.LOSSES: "[Ll]oss_(?!input).*output",
    },
    include=(CollectionKeys.LOSSES,),
    # created when asked for (include_collections or get_collection), so that a trial that does
    # not use them has the same collections file as one written by 1.0.34
    on_demand={CollectionKeys.INPUTS: "_input_", CollectionKeys.OUTPUTS: "_output_"},
)
DEFAULT_PYTORCH_COLLECTIONS = set(PYTORCH_COLLECTIONS.created)
CollectionManager = PYTORCH_COLLECTIONS.manager_class()
CollectionManager.__module__ = __name__
