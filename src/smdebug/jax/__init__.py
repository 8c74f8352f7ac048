"""JAX support (Flax NNX, optax): ``import smdebug.jax as smd; hook = smd.Hook(out_dir=...)``.

In a training loop (guide: docs/guide/jax.md)::

    save = hook.begin_step()                      # a new step; whether it saves anything
    loss, grads = train_step(model, opt, x, y, save=save)   # jitted, ``save`` static
    hook.record(loss=loss, grads=grads, params=model)
"""

from smdebug._public import *  # noqa: F403 (SaveConfig, ReductionConfig, modes, create_trial...)
from smdebug._public import __all__
from smdebug.core.engine.active_hook import bind
from smdebug.jax.collection import Collection, CollectionManager
from smdebug.jax.hook import Hook
from smdebug.jax.reductions import Reduced, reductions

_slot = bind(Hook)
get_hook, set_hook, del_hook = _slot.get_hook, _slot.set_hook, _slot.del_hook

__all__ = [
    "Hook",
    "reductions",
    "Reduced",
    "Collection",
    "CollectionManager",
    "get_hook",
    "set_hook",
    "del_hook",
    *__all__,
]
