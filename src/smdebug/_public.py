"""The names every framework package (``smdebug.pytorch``, ``.tensorflow``, ``.xgboost``, ``.mxnet``,
``.jax``) shares, as 1.0.34's do: ``smd.SaveConfig``, ``smd.ReductionConfig``, ``smd.modes``,
``smd.create_trial``...

A framework package takes them with ``from smdebug._public import *`` and ``from smdebug._public
import __all__`` (the form by which mypy counts them among its exports too), then writes its own
``__all__ = ["Hook", ..., *__all__]``: a new list, this one stays as it is.
"""

from smdebug import modes
from smdebug.core.config.collection import CollectionKeys
from smdebug.core.config.reduction_config import ReductionConfig
from smdebug.core.config.save_config import SaveConfig, SaveConfigMode
from smdebug.trials import create_trial

__all__ = ["CollectionKeys", "SaveConfig", "SaveConfigMode", "ReductionConfig", "modes", "create_trial"]
