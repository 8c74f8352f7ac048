"""Every rule parameter is declared to type checkers: a class annotation next to ``params`` (the rules
have no ``__getattr__`` that would answer any name as Any)."""

from __future__ import annotations

import pytest

from smdebug.rules.builtin import get_rule_class, rule_names
from smdebug.rules.builtin.base import BuiltinRule


def _annotated(cls: type) -> set[str]:
    return {name for klass in cls.__mro__ for name in vars(klass).get("__annotations__", {})}


@pytest.mark.parametrize("name", rule_names())
def test_each_parameter_is_annotated(name):
    cls = get_rule_class(name)
    missing = [p.name for p in cls.params if p.name not in _annotated(cls)]
    assert not missing, f"{name}: parameters without a class annotation: {missing}"


def test_no_attribute_hatch():
    assert "__getattr__" not in vars(BuiltinRule)
    for name in rule_names():
        assert not any("__getattr__" in vars(k) for k in get_rule_class(name).__mro__[:-1]), name
