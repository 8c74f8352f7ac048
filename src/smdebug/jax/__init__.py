"""JAX support (Flax NNX, optax): ``import smdebug.jax as smd; hook = smd.Hook(out_dir=...)``.

In a training loop (guide: docs/guide/jax.md)::

    save = hook.begin_step()                      # a new step; whether it saves anything
    loss, grads = train_step(model, opt, x, y, save=save)   # jitted, ``save`` static
    hook.record(loss=loss, grads=grads, params=model)
"""

from smdebug import modes
from smdebug.core.config.collection import CollectionKeys
from smdebug.core.config.reduction_config import ReductionConfig
from smdebug.core.config.save_config import SaveConfig, SaveConfigMode
from smdebug.core.engine.active_hook import bind
from smdebug.jax.collection import Collection, CollectionManager
from smdebug.jax.hook import Hook
from smdebug.jax.reductions import Reduced, reductions
from smdebug.trials import create_trial

_slot = bind(Hook)
get_hook, set_hook, del_hook = _slot.get_hook, _slot.set_hook, _slot.del_hook

__all__ = [
    "Hook",
    "reductions",
    "Reduced",
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
