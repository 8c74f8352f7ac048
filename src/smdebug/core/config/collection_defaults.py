"""A framework's collections, as data: which exist from the start (with their regexes), which
are created only when asked for, which are saved when the user names none, and which
collections each mode never saves."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from smdebug.core.config.collection import MODE_SKIPS
from smdebug.core.config.collection_manager import CollectionManager
from smdebug.core.modes import ModeKeys

__all__ = ["CollectionDefaults"]


@dataclass(frozen=True)
class CollectionDefaults:
    """``created``: name -> include regex (None: none) of the collections a new hook has.
    ``on_demand``: name -> regex of collections created only when included or asked for (so
    that a trial that does not use them has the same collections file as 1.0.34's); the regex
    applies when the user gives the collection no tensors of its own.
    ``include``: saved when ``include_collections`` names none of them (always added).
    ``mode_skips``: mode -> collections never saved in that mode."""

    created: Mapping[str, str | None]
    include: tuple[str, ...] = ()
    on_demand: Mapping[str, str] = field(default_factory=dict)
    mode_skips: Mapping[ModeKeys, frozenset] = field(default_factory=lambda: dict(MODE_SKIPS))

    @property
    def known(self) -> frozenset:
        """Collections that may be empty without being a configuration error."""
        return frozenset(self.created) | frozenset(self.on_demand)

    def apply(self, manager: CollectionManager) -> CollectionManager:
        """Create the default collections in ``manager`` (sorted by name, as 1.0.34's file has them)."""
        for name in sorted(self.created):
            manager.create_collection(name)
        for name, regex in self.created.items():
            if regex:
                manager.get(name).include(regex)
        return manager

    def manager(self) -> CollectionManager:
        return self.apply(CollectionManager())

    def manager_class(self, name: str = "CollectionManager") -> type:
        """A CollectionManager class whose ``create_default=True`` (the default) creates these
        collections: the public ``smdebug.<framework>.CollectionManager``."""
        defaults = self

        def __init__(self, collections=None, create_default=True):
            CollectionManager.__init__(self, collections)
            if create_default:
                defaults.apply(self)

        return type(
            name,
            (CollectionManager,),
            {
                "__init__": __init__,
                "__doc__": "CollectionManager that starts with the framework's default collections.",
            },
        )

    def prepare_on_demand(self, manager: CollectionManager, include_collections) -> None:
        """Give each on-demand collection that is used its regex, unless it has tensors of its own."""
        existing = manager.get_collections()
        for name, regex in self.on_demand.items():
            if name in include_collections or name in existing:
                c = manager.get(name)
                if not c.include_regex and not c.tensor_names and not c.modules:
                    c.include(regex)


def module_collections(losses_regex: str) -> CollectionDefaults:
    """The collections of a framework whose hook names tensors after modules (PyTorch, MXNet):
    smdebug 1.0.34's regexes for weights, biases and gradients, the framework's for losses, and
    inputs/outputs created only when asked for (so that a trial that does not use them has the
    same collections file as 1.0.34's)."""
    from smdebug.core.config.collection import CollectionKeys as K

    return CollectionDefaults(
        created={
            K.ALL: None,
            K.DEFAULT: None,
            K.WEIGHTS: "^(?!gradient).*weight",
            K.BIASES: "^(?!gradient).*bias",
            K.GRADIENTS: "^gradient",
            K.LOSSES: losses_regex,
        },
        include=(K.LOSSES,),
        on_demand={K.INPUTS: "_input_", K.OUTPUTS: "_output_"},
    )
