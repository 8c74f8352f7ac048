"""Which Keras variables the hook reads at a step's end, under which name and in which collection.

A variable's collection follows what it is, not its name: a model's own variables go to
``weights`` or ``biases`` (1.0.34's rule on the name tells those two apart), an optimizer's
variables (``iteration``, ``learning_rate``, ...) to ``optimizer_variables``. An optimizer's
per-weight slots (Adam's ``..._momentum``/``..._velocity``, SGD's ``..._momentum``) are left out,
as 1.0.34 left them out. Any other collection (a custom one with a regex) may match any of them.

Keras builds a model's variables when it first sees data (a ``Sequential`` without an ``Input``
inside ``fit``, a subclassed model at its first call), so :class:`ModelVariables` looks again
whenever the number of variables changed.
"""

from __future__ import annotations

from dataclasses import dataclass

from smdebug.core.config.collection import CollectionKeys
from smdebug.tensorflow import names

__all__ = ["Watched", "ModelVariables", "optimizer_variables", "slot_variable_ids"]


@dataclass(frozen=True)
class Watched:
    """A variable the hook reads: its tensor name and the collection it belongs to."""

    name: str
    var: object
    collection: str


class ModelVariables:
    """The variables of one registered model, found again once Keras has built more of them."""

    def __init__(self, model):
        self.model = model
        self._seen = -1
        self.watched: list[Watched] = []

    def refresh(self) -> list[Watched]:
        """The variables new since the last call (all of them at the first)."""
        weights = self.model.weights
        if len(weights) == self._seen:
            return []
        self._seen = len(weights)
        known = {id(w.var) for w in self.watched}
        top = self.model.name
        new = []
        for layer in self.model.layers:
            for v in layer.weights:
                if id(v) in known:
                    continue
                known.add(id(v))
                name = names.callback_weight_name(layer.name, v, top)
                new.append(Watched(name, v, CollectionKeys.BIASES if names.is_bias(name) else CollectionKeys.WEIGHTS))
        self.watched.extend(new)
        return new


def slot_variable_ids(optimizer) -> set:
    """The ids of ``optimizer``'s per-weight slots: Keras 3 makes each with
    ``add_variable_from_reference``, named ``<model variable path with _>_<slot>`` and shaped
    as that model variable."""
    refs = {}
    for v in getattr(optimizer, "_trainable_variables", ()):
        refs.setdefault(v.path.replace("/", "_") + "_", []).append(tuple(v.shape))
    out = set()
    for v in optimizer.variables:
        name = getattr(v, "name", "")
        for prefix, shapes in refs.items():
            if name.startswith(prefix) and tuple(v.shape) in shapes:
                out.add(id(v))
                break
    return out


def optimizer_variables(optimizer) -> list[Watched]:
    """``optimizer``'s own variables (not the model's, not the per-weight slots); [] until built."""
    if optimizer is None or not getattr(optimizer, "built", True):
        return []
    model_vars = {id(v) for v in getattr(optimizer, "_trainable_variables", ())}
    slots = slot_variable_ids(optimizer)
    return [
        Watched(names.optimizer_variable_name(v), v, CollectionKeys.OPTIMIZER_VARIABLES)
        for v in optimizer.variables
        if id(v) not in model_vars and id(v) not in slots
    ]
