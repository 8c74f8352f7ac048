"""A griffe extension for the documentation site (mkdocs.yml): a hook's ``__init__`` is written
``@hook_init(SomeHookOptions) def __init__(self, *args, **kwargs)`` (smdebug.core.config.hook_options:
the options are declared once, as a dataclass). Its page shows the fields of that declaration (names,
annotations, defaults; every hook's HookOptions fields positional or keyword, the hook's own
keyword-only: what ``inspect.signature`` gives at run time) instead of ``*args, **kwargs``, read from
the source without importing the framework, and each parameter the class's docstring does not
describe gets its meaning from smdebug.core.config.hook_options.OPTION_DOCS (written once for every
hook)."""

from __future__ import annotations

from typing import Any

from griffe import Class, Extension, Kind, Parameter, ParameterKind, Parameters


def _fields(options: Class) -> list[Parameter]:
    """The dataclass fields of ``options``, its bases' first (a subclass's are keyword-only)."""
    out: list[Parameter] = []
    for base in options.bases:
        path = getattr(base, "canonical_path", "")
        if path.startswith("smdebug."):
            out += _fields(options.modules_collection[path])
    kind = ParameterKind.keyword_only if out else ParameterKind.positional_or_keyword
    for member in options.members.values():
        if member.is_attribute and member.annotation is not None and "ClassVar" not in str(member.annotation):
            out.append(Parameter(member.name, annotation=member.annotation, kind=kind, default=member.value))
    return out


class TypedInit(Extension):
    def on_package(self, *, pkg: Any, **kwargs: Any) -> None:
        """Once every module is loaded (the options classes live in other modules than the hooks)."""
        for cls in _classes(pkg):
            init = cls.members.get("__init__")
            if init is None or init.is_alias:
                continue
            call = next((d.value for d in init.decorators if str(d.value).startswith("hook_init(")), None)
            if call is None:
                continue
            options = pkg.modules_collection[call.arguments[0].canonical_path]
            init.parameters = Parameters(Parameter("self", kind=ParameterKind.positional_or_keyword), *_fields(options))
            _describe_options(cls, [p.name for p in init.parameters if p.name != "self"])

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


def _classes(obj: Any) -> list[Any]:
    """Every class defined in ``obj`` (a package or module) and its submodules."""
    out = []
    for member in obj.members.values():
        if member.is_alias:
            continue
        if member.kind is Kind.CLASS:
            out.append(member)
        elif member.kind is Kind.MODULE:
            out += _classes(member)
    return out
