"""XGBoost support: ``import smdebug.xgboost as smd; xgboost.train(..., callbacks=[smd.Hook(out_dir=...)])``."""

from smdebug import ReductionConfig, SaveConfig, SaveConfigMode, modes
from smdebug.core.collection import Collection, CollectionKeys
from smdebug.trials import create_trial
from smdebug.xgboost.collection import CollectionManager
from smdebug.xgboost.hook import Hook


def get_hook(json_config_path=None, create_if_not_exists: bool = False):
    """The active XGBoost hook; with ``create_if_not_exists``, made from SageMaker's hook JSON."""
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
