"""XGBoost support: ``import smdebug.xgboost as smd; xgboost.train(..., callbacks=[smd.Hook(out_dir=...)])``."""

from smdebug import modes
from smdebug.core.config.collection import CollectionKeys
from smdebug.core.config.reduction_config import ReductionConfig
from smdebug.core.config.save_config import SaveConfig, SaveConfigMode
from smdebug.core.engine.active_hook import bind
from smdebug.trials import create_trial
from smdebug.xgboost.collection import Collection, CollectionManager
from smdebug.xgboost.hook import Hook

_slot = bind(Hook)
get_hook, set_hook, del_hook = _slot.get_hook, _slot.set_hook, _slot.del_hook

__all__ = [
    "Hook",
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
