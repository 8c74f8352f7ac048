"""Zero-code-change attach for MXNet Gluon, installed by the bootstrap right after ``import mxnet``.

``gluon.Block.__call__`` is wrapped once (what AWS's MXNet build did in ``gluon/block.py``): the
first block called from outside any block that has parameters and is no loss becomes the model
(``hook.register_block``), loss blocks (``gluon.loss.Loss``) are registered when first called.
The hook comes from the job's debughookconfig.json; a script that made its own hook keeps it.
One line on stderr says what was attached.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

import mxnet as mx

from smdebug.launch.zcc_common import Attach, marked, never_raises

__all__ = ["install"]


class _Attach(Attach):
    def __init__(self) -> None:
        super().__init__()
        self.local = threading.local()  # call depth, per thread
        self.losses: set[int] = set()

    def before_call(self, block: Any) -> None:
        if self.done:
            return
        is_loss = isinstance(block, mx.gluon.loss.Loss)
        if self.hook is not None:
            if is_loss and id(block) not in self.losses:
                self.losses.add(id(block))
                self.hook.register_block(block)
            return
        if is_loss or getattr(self.local, "depth", 0) > 0 or not block.collect_params():
            return
        import smdebug.mxnet as smd

        if smd.get_hook(create_if_not_exists=False) is not None:  # the script made its own hook
            self.done = True
            return
        hook = smd.get_hook(create_if_not_exists=True)
        if hook is None:
            self.done = True
            return
        hook.register_block(block)
        self.attached(hook, f"{type(block).__name__} {block.name!r}")

    def give_up(self) -> None:
        self.done = True


@functools.cache
def install() -> _Attach:
    """Wrap ``gluon.Block.__call__`` (once per process)."""
    state = _Attach()
    original = mx.gluon.Block.__call__

    @functools.wraps(original)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        never_raises(
            "smdebug: zero-code-change attach to MXNet failed: %s", lambda: state.before_call(self), state.give_up
        )
        local = state.local
        local.depth = getattr(local, "depth", 0) + 1
        try:
            return original(self, *args, **kwargs)
        finally:
            local.depth -= 1

    mx.gluon.Block.__call__ = marked(call)
    return state
