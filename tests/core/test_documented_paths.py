"""Every documented import path of smdebug.core keeps working after core/ moved into rooms (this
file keeps the old paths on purpose: tools/core_rooms.py leaves it alone)."""

from __future__ import annotations

import importlib

import pytest

DOCUMENTED = [
    ("smdebug.core.modes", "ModeKeys"),
    ("smdebug.core.writer", "FileWriter"),
    ("smdebug.core.collection_manager", "CollectionManager"),
    ("smdebug.core.collection", "CollectionKeys"),
    ("smdebug.core.collection", "Collection"),
    ("smdebug.core.save_config", "SaveConfig"),
    ("smdebug.core.save_config", "SaveConfigMode"),
    ("smdebug.core.reduction_config", "ReductionConfig"),
    ("smdebug.core.stop_request", "write_stop_request"),
    ("smdebug.core.tensor", "StepState"),
    ("smdebug.core.tensor", "Tensor"),
    ("smdebug.core.hook", "BaseHook"),
    ("smdebug.core.locations", "event_key"),
    ("smdebug.core.reductions", "get_numpy_reduction"),
]


@pytest.mark.parametrize(("module", "name"), DOCUMENTED)
def test_documented_path(module, name):
    mod = importlib.import_module(module)
    assert getattr(mod, name) is not None
    ns: dict = {}
    exec(f"from {module} import {name}", ns)  # the form the documentation shows
    assert ns[name] is getattr(mod, name)


def test_an_old_path_is_the_moved_module_itself():
    """Patching through a documented path patches what the code runs (one module, two names)."""
    import smdebug.core.output.writer as moved
    import smdebug.core.writer as documented

    assert documented is moved
    assert importlib.import_module("smdebug.core.collection_manager") is importlib.import_module(
        "smdebug.core.config.collection_manager"
    )
