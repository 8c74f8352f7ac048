"""Zero-code-change attach for MXNet Gluon, installed by the bootstrap right after ``import mxnet``.

``gluon.Block.__call__`` is wrapped once (what AWS's MXNet build did in ``gluon/block.py``): the
first block called from outside any block that has parameters and is no loss becomes the model
(``hook.register_block``), loss blocks (``gluon.loss.Loss``) are registered when first called.
The hook comes from the job's debughookconfig.json; a script that made its own hook keeps it.
One line on stderr says what was attached.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
import threading

import mxnet as mx

__all__ = ["install"]

logger = logging.getLogger("smdebug")
_installed = None


class _Attach:
    def __init__(self):
        self.hook = None
        self.done = False
        self.local = threading.local()  # call depth, per thread
        self.losses: set = set()

    def before_call(self, block) -> None:
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
        interval = os.environ.get("SMDEBUG_STOP_CHECK_INTERVAL")
        if interval and getattr(hook, "stop_watcher", None) is not None:
            hook.stop_watcher.interval = min(hook.stop_watcher.interval, float(interval))
        self.hook = hook
        sys.stderr.write(
            f"smdebug: attached to {type(block).__name__} {block.name!r} via zero-code-change; "
            f"saving to {hook.out_dir}\n"
        )


def install():
    global _installed
    if _installed is not None:
        return _installed
    state = _installed = _Attach()
    original = mx.gluon.Block.__call__

    @functools.wraps(original)
    def call(self, *args, **kwargs):
        try:
            state.before_call(self)
        except Exception as exc:  # never breaks training
            state.done = True
            logger.error("smdebug: zero-code-change attach to MXNet failed: %s", exc)
        local = state.local
        local.depth = getattr(local, "depth", 0) + 1
        try:
            return original(self, *args, **kwargs)
        finally:
            local.depth -= 1

    call.__smdebug_zcc__ = True
    mx.gluon.Block.__call__ = call
    return state
