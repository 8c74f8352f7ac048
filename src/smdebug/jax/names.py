"""Tensor names for the leaves of JAX pytrees, and the collection of each.

A leaf's name is its path in the pytree, the keys joined by ``/``: a dict key or a Flax NNX
attribute as it is (``linear1/kernel``), a list or tuple index as a number (``layers/0/kernel``),
a named tuple's field by its name (optax's ``0/mu/linear1/kernel``). A Flax ``Variable``'s own
``value`` attribute is left out (``linear1/kernel``, not ``linear1/kernel/value``). What kind of
tree it is (the argument of :meth:`smdebug.jax.Hook.record` that carried it) adds a prefix and
chooses the collection:

========== ================= ===================================== =====================
argument    prefix            example                               collection
========== ================= ===================================== =====================
params      (none)            ``linear1/kernel``, ``linear1/bias``  weights; biases when the last key is ``bias``
grads       ``gradient/``     ``gradient/linear1/kernel``           gradients
updates     ``update/``       ``update/linear1/kernel``             optimizer_variables
opt_state   ``optimizer/``    ``optimizer/0/mu/linear1/kernel``     optimizer_variables
loss        (none)            ``loss`` (a tree: its paths)          losses
metrics     (none)            ``accuracy``                          metrics
========== ================= ===================================== =====================

``gradient/`` is the prefix every smdebug hook gives gradients (``BaseHook.GRADIENT_PREFIX``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax

from smdebug.core.config.collection import CollectionKeys
from smdebug.exceptions import SMDebugTypeError

__all__ = ["Kind", "KINDS", "key_name", "path_name", "named_leaves"]

_VARIABLE_VALUE = ("value", "raw_value")  # a Flax Variable's own attribute, left out of names


@dataclass(frozen=True)
class Kind:
    """What ``Hook.record``'s argument ``argument`` holds: its names' prefix, its collection (None:
    weights, or biases for a leaf whose last key is ``bias``) and the name of a tree that is one
    bare array (``""``: refused)."""

    argument: str
    prefix: str
    collection: str | None
    bare_name: str = ""

    def collection_of(self, name: str) -> str:
        if self.collection is not None:
            return self.collection
        return CollectionKeys.BIASES if name.rsplit("/", 1)[-1] == "bias" else CollectionKeys.WEIGHTS


KINDS = {
    k.argument: k
    for k in (
        Kind("params", "", None, "param"),
        Kind("grads", "gradient/", CollectionKeys.GRADIENTS, "param"),
        Kind("updates", "update/", CollectionKeys.OPTIMIZER_VARIABLES, "param"),
        Kind("opt_state", "optimizer/", CollectionKeys.OPTIMIZER_VARIABLES, "state"),
        Kind("loss", "", CollectionKeys.LOSSES, "loss"),
        Kind("metrics", "", CollectionKeys.METRICS),
    )
}


def key_name(entry: Any) -> str:
    """One key of a pytree path as text: a dict key, an index, an attribute or field name."""
    for attr in ("key", "name", "idx"):  # DictKey / FlattenedIndexKey, GetAttrKey, SequenceKey
        if hasattr(entry, attr):
            return str(getattr(entry, attr))
    return str(entry)


def path_name(path: tuple) -> str:
    """A leaf's path as a name (see the module's doc); ``""`` for the root."""
    parts = [key_name(e) for e in path]
    if len(parts) > 1 and parts[-1] in _VARIABLE_VALUE and type(path[-1]).__name__ == "GetAttrKey":
        parts.pop()
    return "/".join(parts)


def named_leaves(tree: Any, kind: Kind, is_leaf: Any = None) -> list[tuple[str, Any]]:
    """``(name, leaf)`` for every leaf of ``tree`` (``is_leaf`` stops the walk at a subtree), each
    name with ``kind``'s prefix. A tree that is one bare array is named ``kind.bare_name``, and
    refused (SMDebugTypeError) where the kind has none (metrics need names)."""
    leaves, _ = jax.tree_util.tree_flatten_with_path(tree, is_leaf=is_leaf)
    out = []
    for path, leaf in leaves:
        name = path_name(path)
        if not name:
            if not kind.bare_name:
                raise SMDebugTypeError(
                    f"record: {kind.argument} must be a dict (or another pytree) of named values, "
                    f"not a bare {type(leaf).__name__}: e.g. {{'accuracy': acc}}"
                )
            name = kind.bare_name
        out.append((kind.prefix + name, leaf))
    return out
