"""A griffe extension for the documentation site (mkdocs.yml): a hook's ``__init__`` is written
``@hook_init(SomeHookOptions) def __init__(self, *args, **kwargs)`` (smdebug.core.config.hook_options:
the options are declared once, as a dataclass). Its page shows the parameters of that declaration
(names, kinds, annotations, defaults: what ``inspect.signature`` gives at run time) instead of
``*args, **kwargs``, and each parameter the class's docstring does not describe gets its meaning from
smdebug.core.config.hook_options.OPTION_DOCS (written once for every hook)."""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from griffe import Extension, Function, Kind, Parameter, ParameterKind, Parameters

_KINDS = {
    inspect.Parameter.POSITIONAL_ONLY: ParameterKind.positional_only,
    inspect.Parameter.POSITIONAL_OR_KEYWORD: ParameterKind.positional_or_keyword,
    inspect.Parameter.VAR_POSITIONAL: ParameterKind.var_positional,
    inspect.Parameter.KEYWORD_ONLY: ParameterKind.keyword_only,
    inspect.Parameter.VAR_KEYWORD: ParameterKind.var_keyword,
}


class TypedInit(Extension):
    def on_function_instance(self, *, func: Function, **kwargs: Any) -> None:
        parent = func.parent
        if func.name != "__init__" or parent is None or parent.kind is not Kind.CLASS:
            return
        if not any(str(d.value).startswith("hook_init(") for d in func.decorators):
            return
        cls = getattr(importlib.import_module(parent.module.path), parent.name)
        signature = inspect.signature(cls.__init__)  # hook_init's: the options dataclass's fields
        func.parameters = Parameters(*(
            Parameter(p.name, kind=_KINDS[p.kind],
                      annotation=None if p.annotation is inspect.Parameter.empty else str(p.annotation),
                      default=None if p.default is inspect.Parameter.empty else repr(p.default))
            for p in signature.parameters.values()
        ))
        _describe_options(parent, [n for n in signature.parameters if n != "self"])

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
