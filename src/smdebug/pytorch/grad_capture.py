"""Whether the copy thread's captures (copies, reductions) of parameters and gradients are of the
tensors as they were handed over.

The copy thread captures parameters while forward runs and gradients while backward runs; the
hook waits for it at the end of backward and before an optimizer step, before code after backward
(``clip_grad_norm_``, ``GradScaler.unscale_``, ``zero_grad(set_to_none=False)``, the next micro-batch's
accumulation) or the optimizer can change them. What runs meanwhile may still change a tensor in
place while it is being captured: a gradient hook registered after the hook's own, a collective. At
each wait the hook compares each capture's tensor's version counter (``tensor._version``, bumped by
every in-place op torch counts) with the one it had when it was handed over: a capture of a tensor
changed meanwhile may mix values from before and after the change, and is not saved (its
records are dropped and the log names the step and the tensors). Writes that torch does not count
(``GradScaler.unscale_``'s kernel, writes through ``.data``) are not seen; as far as we found, torch's
own code runs none of them during backward.

Not waiting at the end of backward (checking the gradients' version counters at the next step's
start instead) was built and measured: no faster on a 2-core VM (BENCHMARKS.md, "Async gradient
captures").
"""

from __future__ import annotations

import logging
import operator
import weakref
from typing import Any

__all__ = ["CaptureCheck"]

logger = logging.getLogger("smdebug")


class CaptureCheck:
    """Checks one hook's captures each time its adapter has waited for them (``on_sync``)."""

    def __init__(self, hook: Any):
        self._hook = weakref.ref(hook)
        self.adapter = hook.adapter
        self.adapter.capture_version = operator.attrgetter("_version")
        self.adapter.on_sync = self.on_sync
        self.affected: list[int] = []  # steps whose records of a changed tensor were dropped

    def on_sync(self) -> None:
        captures, self.adapter.captures = self.adapter.captures, []
        stale = {id(c.deferred) for c in captures if c.tensor._version != c.version}
        if stale:
            self._drop(stale)

    def _drop(self, ids: set) -> None:
        hook = self._hook()
        if hook is None:
            return
        names = hook.buffer.drop_captures(ids)
        self.affected.append(hook.step)
        log = logger.warning if len(self.affected) == 1 else logger.info
        log(
            "smdebug: step %s: %s changed in place while the hook captured %s (torch's version counter); "
            "not saved at that step",
            hook.step,
            ", ".join(names) or "tensors",
            "it" if len(names) == 1 else "them",
        )
