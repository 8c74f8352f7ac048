"""MXNet's default collections, as data (core makes the collections from them)."""

from __future__ import annotations

from smdebug.core.config.collection import Collection, CollectionKeys
from smdebug.core.config.collection_defaults import module_collections

__all__ = ["Collection", "CollectionManager", "CollectionKeys", "DEFAULT_MXNET_COLLECTIONS", "MXNET_COLLECTIONS"]

# smdebug 1.0.34's regexes, so that existing analysis code and rules keep working
MXNET_COLLECTIONS = module_collections(losses_regex=".*loss._(?!input).*output")
DEFAULT_MXNET_COLLECTIONS = set(MXNET_COLLECTIONS.created)
CollectionManager = MXNET_COLLECTIONS.manager_class()
CollectionManager.__module__ = __name__
