"""PyTorch support: ``import smdebug.pytorch as smd; hook = smd.Hook(out_dir=...)``."""

from smdebug import modes
from smdebug.core.config.collection import CollectionKeys
from smdebug.core.config.reduction_config import ReductionConfig
from smdebug.core.config.save_config import SaveConfig, SaveConfigMode
from smdebug.core.engine.active_hook import bind
from smdebug.pytorch.collection import Collection, CollectionManager
from smdebug.pytorch.hook import Hook
from smdebug.trials import create_trial

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
