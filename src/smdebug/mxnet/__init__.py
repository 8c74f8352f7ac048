"""MXNet Gluon support: ``import smdebug.mxnet as smd; hook = smd.Hook(out_dir=...)``."""

from smdebug._public import *  # noqa: F403 (SaveConfig, ReductionConfig, modes, create_trial...)
from smdebug._public import __all__
from smdebug.core.engine.active_hook import bind
from smdebug.mxnet.collection import Collection, CollectionManager
from smdebug.mxnet.hook import Hook

_slot = bind(Hook)
set_hook, del_hook = _slot.set_hook, _slot.del_hook


def get_hook(json_config_path: str | None = None, create_if_not_exists: bool = True) -> Hook | None:
    """The active hook; if there is none, one made from SageMaker's hook JSON when a config file
    applies (1.0.34's MXNet get_hook always did), else None."""
    return _slot.get_hook(json_config_path=json_config_path, create_if_not_exists=create_if_not_exists)


__all__ = ["Hook", "Collection", "CollectionManager", "get_hook", "set_hook", "del_hook", *__all__]
