"""smdebug: save tensors while a model trains, read them back, run rules on them.

A maintained, faster re-implementation of SageMaker Debugger's ``smdebug``, with its API and
on-disk format.
"""

from __future__ import annotations

from typing import Any

from smdebug import modes
from smdebug.core.config.collection import CollectionKeys
from smdebug.core.config.reduction_config import ReductionConfig
from smdebug.core.config.save_config import SaveConfig, SaveConfigMode
from smdebug.core.modes import ModeKeys

__version__ = "1.1.0.dev0"

__all__ = [
    "modes",
    "ModeKeys",
    "SaveConfig",
    "SaveConfigMode",
    "ReductionConfig",
    "CollectionKeys",
    "create_trial",
    "launch",
    "__version__",
]


def __getattr__(name: str) -> Any:
    if name == "create_trial":
        from smdebug.trials import create_trial

        return create_trial
    if name == "launch":  # smdebug run's Python form; nothing of it is imported with smdebug
        import smdebug.launch  # the package is callable: smdebug.launch(...) is smdebug.launch.launch(...)

        return smdebug.launch
    raise AttributeError(f"module 'smdebug' has no attribute {name!r}")
