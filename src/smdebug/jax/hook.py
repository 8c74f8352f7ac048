"""smdebug.jax.Hook: a training loop's pytrees, handed over by the loop, glued onto BaseHook."""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from smdebug.core.config.collection import CollectionKeys
from smdebug.core.engine.arguments import check_mode
from smdebug.core.engine.guard import guarded
from smdebug.core.engine.hook import BaseHook
from smdebug.core.engine.nonfinite import LateChecks
from smdebug.core.modes import ModeKeys
from smdebug.core.output.locations import CHIEF_WORKER, worker_name
from smdebug.core.output.ranks import env_rank
from smdebug.core.output.records import ReductionTarget, SavePlan
from smdebug.core.tensors.reductions import get_reduction_tensor_name
from smdebug.exceptions import SMDebugRuntimeError, SMDebugTypeError, TrainingStopRequested
from smdebug.jax.adapter import JaxAdapter, ReducedLeaf, can_fetch, host_value, is_array
from smdebug.jax.collection import JAX_COLLECTIONS
from smdebug.jax.names import KINDS, Kind, named_leaves
from smdebug.jax.reductions import Reduced

__all__ = ["Hook", "CollectionKeys"]

logger = logging.getLogger("smdebug")
_LATE_MAX = 16  # losses whose finiteness waits for the device at once, at most (the device may run that far behind)


@dataclass
class LateLoss:
    """A loss not computed yet when it was recorded: checked at a later step boundary, once ready."""

    name: str
    step: int
    value: Any

    def ready(self) -> bool:
        return bool(self.value.is_ready())

    def finite(self) -> bool:
        return _all_finite(self.value)


def _distributed() -> bool:
    """Whether ``jax.distributed.initialize`` ran (asked without starting a backend, which would
    make a later ``initialize`` fail)."""
    probe = getattr(jax.distributed, "is_initialized", None)
    return bool(probe()) if probe is not None else False


def _check_record(hook: Hook, **trees: Any) -> None:
    """record's arguments: a caller's error is raised at once (cheap checks: record runs every step)."""
    if any(isinstance(t, jax.core.Tracer) for t in trees.values()):
        raise SMDebugRuntimeError(
            "record: called inside a traced (jax.jit-compiled) function; return the values "
            "from the step and record them after it"
        )
    if not hook.disabled and hook.step < 0:
        raise SMDebugRuntimeError("record: no step has begun; call hook.begin_step() before the training step")
    metrics = trees.get("metrics")
    if metrics is not None and (is_array(metrics) or isinstance(metrics, (int, float, np.ndarray, np.generic))):
        raise SMDebugTypeError(
            f"record: metrics must be a dict (or another pytree) of named values, e.g. "
            f"{{'accuracy': acc}}, not a bare {type(metrics).__name__}"
        )


class Hook(BaseHook):
    """Saves what a JAX training loop computes: the pytrees of parameters, gradients, optimizer
    updates and state, the loss and metrics, which the loop hands over at each step.

    ``begin_step()`` starts a step and says whether it saves anything: pass that to a
    ``jax.jit``-compiled step as a static argument, so that steps that save nothing compute and
    transfer nothing for the hook. ``record(loss=..., grads=..., ...)`` after the step saves the
    values its collections save at this step; arrays are fetched to the host (in one transfer)
    when the next step begins, their reductions computed on the writer thread, or on the device
    inside the step with :func:`smdebug.jax.reductions`. Names are the trees' paths
    (:mod:`smdebug.jax.names`: ``linear1/kernel``, ``gradient/linear1/kernel``, ``loss``).

    The loss is watched every step: once its first NaN or infinite value is seen, that step and
    the next few are saved in full. The check reads the scalar once the device has computed it
    (at once, or at a later step boundary), never waiting for it. Workers: ``jax.process_index()`` names this
    process ``worker_<index>`` (after ``jax.distributed.initialize``), else the launcher's rank.
    """

    collection_defaults = JAX_COLLECTIONS
    make_adapter = JaxAdapter

    def _configure(self, options: Any) -> None:
        super()._configure(options)
        self._late_losses = LateChecks(self.nonfinite, _LATE_MAX)
        self._assigned: set[str] = set()  # names put into their collection
        self._reduced_plans: dict = {}  # (name, ops, save_shape) -> SavePlan of reductions from the device
        self._warned: set[str] = set()
        self._processes = 1  # jax.process_count(), read at the first step

    # ---------------------------------------------------------------- workers
    def _get_worker_name(self) -> str:
        if _distributed():
            return worker_name(jax.process_index())
        launched = env_rank()
        return worker_name(launched.rank) if launched is not None else CHIEF_WORKER

    def _get_num_workers(self) -> int:
        if self._processes > 1 or _distributed():
            return jax.process_count()
        launched = env_rank()
        return launched.world_size if launched is not None else 1

    def _is_tensor(self, value: Any) -> bool:
        return is_array(value) or isinstance(value, np.ndarray)

    # ---------------------------------------------------------------- steps
    def begin_step(self, mode: ModeKeys | None = None) -> bool:
        """Start the next step (in ``mode`` when given: ``modes.TRAIN``, ``modes.EVAL``...); whether
        it saves anything. Raises TrainingStopRequested when a rule asked training to stop."""
        if mode is not None:
            check_mode(mode)
        req = self.stop_requested()  # outside the guard: it must reach the training loop
        if req is not None:
            raise TrainingStopRequested(req.rule, req.step, req.reason)
        return self._start_step(mode)

    @guarded(default=False)
    def _start_step(self, mode: ModeKeys | None) -> bool:
        if mode is not None and mode != self.mode:
            self.set_mode(mode)
        if self.step == self.init_step:
            self._processes = jax.process_count()
            if self._processes > 1:
                self.worker = worker_name(jax.process_index())  # distributed since the hook was made
        if self._late_losses.pending:
            self._late_losses.report(self._seen_nonfinite)
        self._begin_step()
        return self.saves()

    @guarded(default=False)
    def saves(self, *collections: str) -> bool:
        """Whether this step saves any of ``collections`` (any collection when none is named).

        With several JAX processes, the answer is the save config's alone (the same in every
        process: a jitted step given it as a static argument compiles to the same program
        everywhere); the steps the non-finite watch saves in full, which each process decides
        on its own, then save what ``record`` is given anyway."""
        if self.disabled or self.step < 0:
            return False
        due = self._collections_for_step()
        if self._processes > 1 and self.planner.force:
            ms = self.mode_steps[self.mode]
            due = {c for c in due if c.save_config.should_save_step(self.mode, ms)}
        return bool(due) if not collections else any(c.name in collections for c in due)

    # ---------------------------------------------------------------- saving
    @guarded(check=_check_record)
    def record(
        self,
        *,
        loss: Any = None,
        metrics: Any = None,
        params: Any = None,
        grads: Any = None,
        updates: Any = None,
        opt_state: Any = None,
    ) -> None:
        """Hand the hook what the current step computed (each argument a pytree of arrays; a Flax
        NNX model for ``params``, an ``nnx.Optimizer`` for ``opt_state``; a tree of
        :func:`smdebug.jax.reductions` for reductions computed on the device). The loss is
        watched for NaN and infinity every step; the rest is looked at only when its collection
        saves this step."""
        if loss is not None:
            self._watch_losses(loss)
        if not self.saving_this_step():
            return
        given = (
            ("loss", loss),
            ("metrics", metrics),
            ("params", params),
            ("grads", grads),
            ("updates", updates),
            ("opt_state", opt_state),
        )
        for argument, tree in given:
            if tree is not None:
                self._save_tree(KINDS[argument], _plain_tree(argument, tree))

    def _save_tree(self, kind: Kind, tree: Any) -> None:
        for name, value in _leaves(kind, tree):
            self._assign(name, kind.collection_of(name))
            if is_array(value) and not self._fetchable(name, value):
                continue
            if isinstance(value, ReducedLeaf):
                self._save_reduced(name, value)
            else:
                self._save_for_tensor(name, value)

    def _assign(self, name: str, collection: str) -> None:
        """Put ``name`` into its collection, once (whether it is saved is the plan's)."""
        if name not in self._assigned:
            self._assigned.add(name)
            self.collection_manager.get(collection).add_tensor_name(name)
            self.planner.forget(name)

    def _fetchable(self, name: str, value: Any) -> bool:
        if isinstance(value, jax.core.Tracer):
            raise SMDebugRuntimeError(
                f"record: {name} is a tracer (recorded inside a jax.jit-compiled function); "
                "return it from the step and record it after"
            )
        if value.is_deleted():
            self._warn(
                name,
                "%s was not saved: its buffer was deleted (donated to a jitted call) before it was "
                "recorded; record the step's outputs, before the next step donates them",
            )
            return False
        if not can_fetch(value):
            self._warn(
                name,
                "%s was not saved: it is sharded over several processes and not replicated; gather "
                "it (jax.experimental.multihost_utils.process_allgather) or record its reductions",
            )
            return False
        return True

    def _warn(self, name: str, message: str) -> None:
        if name not in self._warned:
            self._warned.add(name)
            logger.warning("smdebug: " + message, name)

    def _save_reduced(self, name: str, leaf: ReducedLeaf) -> None:
        """Save a leaf's reductions computed on the device, as its collections' schedule says (the
        reductions are the ones computed: raw values are not at hand)."""
        self._check_open(name)
        planner = self.planner
        plan = planner.known_plan(name)  # (a dict lookup once worked out)
        if plan is planner.UNKNOWN:
            plan = planner.plan_at_step(name, self.mode, self.mode_steps[self.mode])
        if plan is None:
            return
        key = (name, leaf.ops, plan.save_shape)
        own = self._reduced_plans.get(key)
        if own is None:
            targets = tuple(ReductionTarget(get_reduction_tensor_name(name, op, a), op, a) for op, a in leaf.ops)
            own = self._reduced_plans[key] = SavePlan(
                save_shape=plan.save_shape,
                reductions=targets,
                save_raw=False,
                histogram_tag=None,
                tensorboard_scalar=False,
            )
        if self.dry_run:
            logger.debug("smdebug dry run: would save the reductions of %s at step %s", name, self.step)
        elif self.writes:
            self.buffer.add(name, leaf, own)

    # ---------------------------------------------------------------- the non-finite watch
    def _watch_losses(self, loss: Any) -> None:
        watch = self.nonfinite
        if watch.first_step is not None or not watch.on or self.step < 0:
            return
        if is_array(loss) or isinstance(loss, (float, np.ndarray)):
            self._watch_value("loss", loss)
        else:
            for name, value in named_leaves(loss, KINDS["loss"]):
                self._watch_value(name, value)

    def _finite(self, name: str, value: Any) -> bool | None:
        """Read now when the device has computed it (a scalar: no wait); otherwise checked at a later
        step boundary, when it is (core.engine.nonfinite.LateChecks)."""
        if not is_array(value):
            return super()._finite(name, value)
        if not _inexact(value.dtype):
            return True
        if value.is_ready():
            return _all_finite(value)
        self._late_losses.add(LateLoss(name, self.step, value))
        return None

    def close(self) -> None:
        self._late_losses.pending = []
        super().close()


_INEXACT: dict = {}  # dtype -> whether it holds floats or complex numbers (bfloat16 too)


def _inexact(dtype: Any) -> bool:
    known = _INEXACT.get(dtype)
    if known is None:
        known = _INEXACT[dtype] = bool(jax.dtypes.issubdtype(dtype, np.inexact))
    return known


def _all_finite(value: Any) -> bool:
    return bool(np.isfinite(host_value(value)).all())


def _plain_tree(argument: str, tree: Any) -> Any:
    """A Flax NNX object as the pytree of what it holds: a model's parameters, an optimizer's state."""
    nnx = sys.modules.get("flax.nnx")
    if nnx is None or not isinstance(tree, (nnx.Module, nnx.Optimizer)):
        return tree
    if argument == "opt_state" and isinstance(tree, nnx.Optimizer):
        return tree.opt_state
    if isinstance(tree, nnx.Module):
        return nnx.state(tree, nnx.Param) if argument in ("params", "grads", "updates") else nnx.state(tree)
    raise SMDebugTypeError(
        f"record: {argument} got a Flax {type(tree).__name__}: pass its state (nnx.state(...)) or the pytree of arrays"
    )


def _leaves(kind: Kind, tree: Any) -> list[tuple[str, Any]]:
    """``(name, value)`` of every leaf of ``tree``; a :class:`Reduced` inside it gives one
    :class:`ReducedLeaf` per leaf it reduced, named by its path under the Reduced's own."""
    if isinstance(tree, Reduced):
        return _reduced_leaves(kind.prefix, "", tree, kind)
    out: list[tuple[str, Any]] = []
    for name, leaf in named_leaves(tree, kind, is_leaf=lambda x: isinstance(x, Reduced)):
        if isinstance(leaf, Reduced):
            out.extend(_reduced_leaves("", name, leaf, kind))
        else:
            out.append((name, leaf))
    return out


def _reduced_leaves(prefix: str, base: str, reduced: Reduced, kind: Kind) -> list[tuple[str, Any]]:
    out = []
    tables = reduced.tables
    for inner, (table, row), shape in zip(reduced.names, reduced.where, reduced.shapes):
        name = "/".join(p for p in (base, inner) if p) or kind.bare_name or "value"
        out.append((prefix + name, ReducedLeaf(tables[table], row, reduced.ops, shape)))
    return out
