"""A griffe extension for the documentation site (mkdocs.yml): a class whose ``__init__`` is written
twice, a typed one under ``if TYPE_CHECKING:`` for type checkers and a ``(*args, **kwargs)`` one
that runs (the hooks: their run-time ``__init__.__signature__`` is the typed one, which
tests/docs/test_types.py holds them to), is documented with the typed one's parameters, names,
kinds, annotations and defaults, instead of ``*args, **kwargs``; each of those parameters that the
class's docstring does not describe gets its meaning from smdebug.core.config.hook_options.OPTION_DOCS
(written once for every hook)."""

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
            _describe_options(parent, [p.name for p in func.parameters if p.name != "self"])


    def on_class_members(self, *, cls: Any, **kwargs: Any) -> None:
        """A hook that takes BaseHook's ``__init__`` as it is (the MXNet hook): its options too."""
        if "__init__" not in cls.members and any(str(b).rpartition(".")[2] == "BaseHook" for b in cls.bases):
            from dataclasses import fields

            from smdebug.core.config.hook_options import HookOptions

            _describe_options(cls, [f.name for f in fields(HookOptions)])


def _describe_options(cls: Any, names: list[str]) -> None:
    """Append ``:param name: meaning`` to ``cls``'s docstring for the hook options it does not describe."""
    from smdebug.core.config.hook_options import OPTION_DOCS

    doc = cls.docstring
    if doc is None:
        return
    missing = [n for n in names if n in OPTION_DOCS and f":param {n}:" not in doc.value]
    if missing:
        doc.value = doc.value.rstrip() + "\n\n" + "\n".join(f":param {n}: {OPTION_DOCS[n]}" for n in missing)
