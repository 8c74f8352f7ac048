"""A griffe extension for the documentation site (mkdocs.yml): a class whose ``__init__`` is written
twice, a typed one under ``if TYPE_CHECKING:`` for type checkers and a ``(*args, **kwargs)`` one
that runs (the hooks: their run-time ``__init__.__signature__`` is the typed one, which
tests/docs/test_types.py holds them to), is documented with the typed one's parameters, names,
kinds, annotations and defaults, instead of ``*args, **kwargs``."""

from __future__ import annotations

from typing import Any

from griffe import Extension, Function, Kind


class TypedInit(Extension):
    def __init__(self) -> None:
        super().__init__()
        self._typed: dict[str, Any] = {}  # class path -> the parameters of its TYPE_CHECKING __init__

    def on_function_instance(self, *, func: Function, **kwargs: Any) -> None:
        parent = func.parent
        if func.name != "__init__" or parent is None or parent.kind is not Kind.CLASS:
            return
        if not func.runtime:  # defined under `if TYPE_CHECKING:` (griffe's visitor marks it so)
            self._typed[parent.path] = func.parameters
        elif parent.path in self._typed:
            func.parameters = self._typed.pop(parent.path)
