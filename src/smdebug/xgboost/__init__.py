"""XGBoost support: ``import smdebug.xgboost as smd; xgboost.train(..., callbacks=[smd.Hook(out_dir=...)])``."""

from smdebug._public import *  # noqa: F403 (SaveConfig, ReductionConfig, modes, create_trial...)
from smdebug._public import __all__
from smdebug.core.engine.active_hook import bind
from smdebug.xgboost.collection import Collection, CollectionManager
from smdebug.xgboost.hook import Hook

_slot = bind(Hook)
get_hook, set_hook, del_hook = _slot.get_hook, _slot.set_hook, _slot.del_hook

__all__ = ["Hook", "Collection", "CollectionManager", "get_hook", "set_hook", "del_hook", *__all__]
