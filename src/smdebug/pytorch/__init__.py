"""PyTorch support: ``import smdebug.pytorch as smd; hook = smd.Hook(out_dir=...)``."""

from smdebug import modes
from smdebug.core.collection import CollectionKeys
from smdebug.core.reduction_config import ReductionConfig
from smdebug.core.save_config import SaveConfig, SaveConfigMode
from smdebug.pytorch.collection import Collection, CollectionManager
from smdebug.pytorch.hook import Hook
from smdebug.trials import create_trial


def get_hook(json_config_path=None, create_if_not_exists: bool = False):
    """The active PyTorch hook; with ``create_if_not_exists``, made from SageMaker's hook JSON."""
    from smdebug.core import active_hook

    return active_hook.get_hook(json_config_path=json_config_path, hook_class=Hook,
                                create_if_not_exists=create_if_not_exists)


def set_hook(hook) -> None:
    from smdebug.core import active_hook

    active_hook.set_hook(hook)


def del_hook() -> None:
    from smdebug.core import active_hook

    active_hook.del_hook()


__all__ = [
    "Hook", "Collection", "CollectionManager", "CollectionKeys", "SaveConfig", "SaveConfigMode",
    "ReductionConfig", "modes", "create_trial", "get_hook", "set_hook", "del_hook",
]
