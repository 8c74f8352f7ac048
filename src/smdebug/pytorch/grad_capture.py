"""When the PyTorch hook waits for its captures (copies, reductions) of gradients and parameters.

The copy thread captures parameters while forward runs and gradients while backward runs. A
capture must be of the tensor as it was handed over: code after backward may change a gradient in
place (``clip_grad_norm_``, ``GradScaler.unscale_``, ``zero_grad(set_to_none=False)``) and the
optimizer changes the parameters. Three modes:

- ``probe`` (the first :data:`PROBE_PASSES` backward passes that capture gradients): the hook waits
  at the end of backward, as in ``safe`` mode, and watches whether a captured gradient changes
  between then and the next step's start: its version counter (``tensor._version``, bumped by
  every in-place op torch counts) or its norm (for the changes torch does not count:
  ``GradScaler.unscale_``, writes through ``.data``). A change: ``safe`` from then on; none:
  ``async``.
- ``safe``: the hook waits at the end of backward for every capture (also under torch.distributed,
  whose collectives change gradients in place without counting it).
- ``async``: at the end of backward the hook waits only for the parameters' captures (complete long
  before: they were handed over when forward began); the gradients' captures finish while the
  optimizer and the next step's start run, and are complete at the next step's start, where each
  gradient's version counter is checked against the one it had when it was handed over. A
  gradient changed meanwhile (a capture that may mix values before and after the change) is not
  saved at that step: its records are dropped, a warning names the step and the tensors, and the
  hook is ``safe`` from then on. Before any optimizer step the parameters' captures are complete.

Not seen in ``async`` mode: a change torch does not count (``GradScaler.unscale_``, ``.data``)
that began only after the probe; the probe sees those that happen at every step.
"""

from __future__ import annotations

import logging
import math
import operator
import weakref
from typing import Any

import torch

__all__ = ["CaptureGuard", "PROBE_PASSES"]

logger = logging.getLogger("smdebug")

PROBE_PASSES = 3  # backward passes with gradients captured, watched before the async mode
PROBE, SAFE, ASYNC = "probe", "safe", "async"

_version = operator.attrgetter("_version")


def _norm(t: Any) -> float:
    if not (t.is_floating_point() or t.is_complex()):
        return float("nan")
    return float(torch.linalg.vector_norm(t.detach()))


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


class CaptureGuard:
    """The waits and checks of one hook's captures (see the module's docstring)."""

    def __init__(self, hook: Any, distributed: Any):
        self._hook = weakref.ref(hook)
        self._distributed = distributed  # () -> torch.distributed when it runs, else None
        self.adapter = hook.adapter
        self.adapter.capture_version = _version
        self.adapter.on_sync = self.on_sync
        self.mode = PROBE
        self.passes = 0  # probe passes without a change
        self.affected: list[int] = []  # steps whose gradients were dropped (async mode)
        self._start = 0  # captures[_start:] were made during the current backward pass
        self._fence: Any = None  # async: the copy thread's batch with the parameters' captures
        self._grads: list = []  # async: gradients' captures, checked at the next full sync
        self._probe: list = []  # probe: (gradient, version, norm) at the end of backward

    # ---------------------------------------------------------------- training thread
    def backward_begins(self) -> None:
        """The first gradient of a backward pass is about to be captured."""
        if self.mode == PROBE and self._distributed() is not None:
            self.mode = SAFE
        self._start = len(self.adapter.captures)
        if self.mode == ASYNC:
            self._fence = self.adapter.fence()

    def end_of_backward(self) -> None:
        ad = self.adapter
        if self.mode == ASYNC:
            if self._fence is not None:
                self._fence.exception()  # (an error is raised where the writer needs the capture)
                self._fence = None
            grads = ad.captures[self._start:]
            del ad.captures[self._start:]
            self._check(len(ad.captures))
            self._grads += grads
            self._start = 0
            return
        ad.wait()
        start, self._start = self._start, 0
        checked = self._check(len(ad.captures))
        if self.mode == PROBE:
            self._probe += [(t, v, _norm(t)) for _, t, v in checked[start:]]

    def before_optimizer(self) -> None:
        """The parameters' captures are complete and checked (the optimizer changes them)."""
        if self.mode == ASYNC and not self.adapter.captures:
            return  # the gradients' may still run: checked at the next step's start
        self.adapter.wait()
        self._check(len(self.adapter.captures))
        self._compare_probe(done=False)

    def on_sync(self) -> None:
        """After a full sync (a step's start, its records handed to the writer, close)."""
        grads, self._grads, self._start = self._grads, [], 0
        self.adapter.captures[:0] = grads
        self._check(len(self.adapter.captures))
        self._compare_probe(done=True)

    # ---------------------------------------------------------------- checks
    def _check(self, n: int) -> list:
        """Check the first ``n`` captures (complete now) and forget them; those unchanged."""
        ad = self.adapter
        head = ad.captures[:n]
        del ad.captures[:n]
        stale = [d for d, t, v in head if t._version != v]
        if stale:
            self._stale({id(d) for d in stale})
            return [c for c in head if c[1]._version == c[2]]
        return head

    def _stale(self, ids: set) -> None:
        hook = self._hook()
        names = hook.buffer.drop_captures(ids) if hook is not None else []
        step = hook.step if hook is not None else -1
        self.affected.append(step)
        logger.warning("smdebug: step %s: %s changed in place before the hook had captured %s (torch's "
                       "version counter); not saved at that step. From now on the hook waits at the end "
                       "of backward for its captures", step, ", ".join(names) or "tensors",
                       "them" if len(names) != 1 else "it")
        self.mode = SAFE

    def _compare_probe(self, done: bool) -> None:
        if not self._probe:
            return
        changed = [t for t, v, n in self._probe if t._version != v or not _same(_norm(t), n)]
        if changed:
            self._probe = []
            self.mode = SAFE
            logger.info("smdebug: gradients are changed in place after backward (e.g. clip_grad_norm_, "
                        "GradScaler.unscale_, zero_grad(set_to_none=False)): the hook captures them "
                        "at the end of backward")
        elif done:
            self._probe = []
            self.passes += 1
            if self.passes >= PROBE_PASSES and self.mode == PROBE:
                self.mode = ASYNC
