"""TensorFlow 2 / Keras 3 support: ``import smdebug.tensorflow as smd; hook = smd.KerasHook(out_dir=...)``.

The hook works on each of Keras 3's backends (``KERAS_BACKEND`` = tensorflow, jax, torch).
Importing this package imports Keras, and TensorFlow only when Keras runs on it; ``import
smdebug`` alone imports neither.
"""

from smdebug import modes
from smdebug.core.config.collection import CollectionKeys
from smdebug.core.config.reduction_config import ReductionConfig
from smdebug.core.config.save_config import SaveConfig, SaveConfigMode
from smdebug.core.engine.active_hook import bind
from smdebug.tensorflow.collection import Collection, CollectionManager
from smdebug.tensorflow.keras import KerasHook
from smdebug.trials import create_trial

_slot = bind(KerasHook)
get_hook, set_hook, del_hook = _slot.get_hook, _slot.set_hook, _slot.del_hook

__all__ = [
    "KerasHook",
    "Collection",
    "CollectionManager",
    "CollectionKeys",
    "SaveConfig",
    "SaveConfigMode",
    "ReductionConfig",
    "modes",
    "create_trial",
    "get_hook",
    "set_hook",
    "del_hook",
]
