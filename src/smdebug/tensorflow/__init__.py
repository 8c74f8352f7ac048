"""TensorFlow 2 / Keras 3 support: ``import smdebug.tensorflow as smd; hook = smd.KerasHook(out_dir=...)``.

The hook works on each of Keras 3's backends (``KERAS_BACKEND`` = tensorflow, jax, torch).
Importing this package imports Keras, and TensorFlow only when Keras runs on it; ``import
smdebug`` alone imports neither.
"""

from smdebug._public import *  # noqa: F403 (SaveConfig, ReductionConfig, modes, create_trial...)
from smdebug._public import __all__
from smdebug.core.engine.active_hook import bind
from smdebug.tensorflow.collection import Collection, CollectionManager
from smdebug.tensorflow.keras import KerasHook

_slot = bind(KerasHook)
get_hook, set_hook, del_hook = _slot.get_hook, _slot.set_hook, _slot.del_hook

__all__ = ["KerasHook", "Collection", "CollectionManager", "get_hook", "set_hook", "del_hook", *__all__]
