"""What is saved at a step: the collections to save, those due at the current step, the
collections of each tensor and each tensor's :class:`~smdebug.core.output.records.SavePlan`.

Everything here is worked out once and cached; :meth:`Planner.forget` (collections changed)
and :meth:`Planner.new_step` (the step or mode changed) are the only places caches are reset.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from typing import Any

from smdebug.core.config.collection import (
    NON_HISTOGRAM_COLLECTIONS,
    NON_REDUCTION_COLLECTIONS,
    SCALAR_COLLECTIONS,
    Collection,
    CollectionKeys,
)
from smdebug.core.config.collection_defaults import CollectionDefaults
from smdebug.core.config.collection_manager import CollectionManager
from smdebug.core.config.reduction_config import ReductionConfig
from smdebug.core.config.save_config import SaveConfig
from smdebug.core.modes import ModeKeys
from smdebug.core.output.records import ReductionTarget, SavePlan
from smdebug.core.tensors.reductions import get_reduction_tensor_name
from smdebug.exceptions import InvalidCollectionConfiguration

__all__ = ["Planner", "included_collections"]

logger = logging.getLogger("smdebug")
_NO_PLAN = object()


def included_collections(
    cm: CollectionManager, defaults: CollectionDefaults, include_collections, include_regex, save_all: bool
) -> list[str]:
    """The collections a hook saves: those named, the framework's, 'default' with
    ``include_regex`` added to it, 'all' (every tensor) with ``save_all``."""
    names = [include_collections] if isinstance(include_collections, str) else list(include_collections or [])
    out = list(dict.fromkeys([*names, *defaults.include]))
    if include_regex:
        cm.get(CollectionKeys.DEFAULT).include(include_regex)
        if CollectionKeys.DEFAULT not in out:
            out.append(CollectionKeys.DEFAULT)
    if save_all:
        cm.get(CollectionKeys.ALL).include(".*")
        if CollectionKeys.ALL not in out:
            out.append(CollectionKeys.ALL)
    return out


class Planner:
    def __init__(
        self,
        manager: CollectionManager,
        defaults: CollectionDefaults,
        include_collections: list,
        save_config: SaveConfig,
        reduction_config: ReductionConfig,
        tensorboard: bool,
    ):
        self.manager = manager
        self.defaults = defaults
        self.include_collections = include_collections
        self.save_config = save_config
        self.reduction_config = reduction_config
        self.tensorboard = tensorboard
        self.prepared = False
        self.to_save: set = set()  # the collections this hook saves
        self.due_now: set | None = None  # those the current step saves (None: not worked out yet)
        self._tensor_colls: dict[str, frozenset] = {}
        self._plans: dict = {}  # (name, collections) -> SavePlan
        self._step_plans: dict = {}  # name -> SavePlan or None, for the collections of this step
        self._step_plans_for: AbstractSet | None = None  # ... which are these
        self.epoch = 0  # counts the times the step plans were dropped: a plan seen in an epoch holds in it
        self.force = False  # this step saves every collection, whatever its schedule (core.engine.nonfinite)

    def forget(self, tensor_name: str | None = None) -> None:
        """Collections changed (or, given ``tensor_name``, the collections of that tensor):
        work the plans out again."""
        if tensor_name is None:
            self._tensor_colls.clear()
        else:
            self._tensor_colls.pop(tensor_name, None)
        self._plans.clear()
        self._step_plans.clear()
        self.epoch += 1
        self.due_now = None

    def new_step(self) -> None:
        """The step or the mode changed: which collections are due is worked out again."""
        self.due_now = None

    # ---------------------------------------------------------------- collections
    def prepare(self, module_name: Callable[[object], str], strict: bool = True) -> None:
        """Settle the collections when the first step starts: on-demand regexes, module tensors
        (``module_name`` names a module), the hook's save and reduction configs as defaults.
        A collection that nothing fills (not the framework's, no tensor names, no regex) raises
        InvalidCollectionConfiguration when ``strict``; otherwise it is logged and not saved, and
        the other collections are."""
        cm = self.manager
        self.defaults.prepare_on_demand(cm, self.include_collections)
        for coll in cm.get_collections().values():
            for m, (inputs, outputs) in coll.modules.items():
                name = module_name(m)
                if inputs:
                    coll.include(name + "_input_")
                if outputs:
                    coll.include(name + "_output_")
        known = self.defaults.known
        colls = cm.get_collections()
        empty = [n for n, c in colls.items() if n not in known and not c.include_regex and not c.tensor_names]
        empty += [n for n in self.include_collections if n not in colls]  # included, never made
        if empty and strict:
            raise InvalidCollectionConfiguration(empty[0])
        if empty:
            logger.error(
                "smdebug: %s: not saved (the other collections are; set SMDEBUG_PROPAGATE_ERRORS=1 to raise instead)",
                "; ".join(str(InvalidCollectionConfiguration(n)) for n in empty),
            )
        for name, c in cm.get_collections().items():
            if name in empty:
                continue
            if CollectionKeys.ALL in self.include_collections or name in self.include_collections:
                self.to_save.add(c)
        self.save_config.merge_default_save_config(SaveConfig())  # modes left out: the default schedule
        for name, c in cm.get_collections().items():
            if name in NON_HISTOGRAM_COLLECTIONS:
                c.save_histogram = False
            if c.save_config is None:
                c.save_config = self.save_config
            else:
                c.save_config.merge_default_save_config(self.save_config)
            if name in NON_REDUCTION_COLLECTIONS:
                c.reduction_config = ReductionConfig(save_raw_tensor=True)
            elif c.reduction_config is None:
                c.reduction_config = self.reduction_config
        self.prepared = True
        self.forget()
        logger.info("smdebug: saving collections %s", ", ".join(sorted(c.name for c in self.to_save)))

    def add_tensor(self, tensor_name: str, colls: list[Collection]) -> None:
        """``save_tensor`` put a tensor into collections (created if new, saved from now on)."""
        for c in colls:
            c.add_tensor_name(tensor_name)
            if self.prepared and c not in self.to_save:
                c.save_config = c.save_config or self.save_config
                c.reduction_config = c.reduction_config or self.reduction_config
                self.to_save.add(c)
        self.forget(tensor_name)

    def due(self, mode: ModeKeys, mode_step: int) -> set:
        """The collections saved at this step (``new_step`` says when the step changes)."""
        if self.due_now is None:
            skip = self.defaults.mode_skips.get(mode, ())
            out = {
                c
                for c in self.to_save
                if c.name not in skip and (self.force or c.save_config.should_save_step(mode, mode_step))
            }
            self.due_now = out
            if out != self._step_plans_for:
                self._step_plans.clear()
                self.epoch += 1
                self._step_plans_for = frozenset(out)
        return self.due_now

    def collections_with(self, name: str) -> frozenset:
        colls = self._tensor_colls.get(name)
        if colls is None:
            matched = set()
            for c in self.to_save:
                if c.matches(name):
                    c.add_tensor_name(name)
                    matched.add(c)
            colls = self._tensor_colls[name] = frozenset(matched)
        return colls

    # ---------------------------------------------------------------- plans
    UNKNOWN = _NO_PLAN  # what known_plan returns for a plan not worked out yet

    def known_plan(self, name: str) -> Any:  # SavePlan | None | UNKNOWN
        """The plan of a tensor at this step if it was worked out already, else UNKNOWN (then
        ``plan_at_step`` works it out): the hook's hot path, a dict lookup."""
        return self._step_plans.get(name, _NO_PLAN) if self.due_now is not None else _NO_PLAN

    def plan_at_step(self, name: str, mode: ModeKeys, mode_step: int) -> SavePlan | None:
        """The plan of a tensor at this step; None when no collection due now holds it."""
        due = self.due(mode, mode_step)  # (re)sets the step plans when the due collections change
        plan = self._step_plans.get(name, _NO_PLAN)
        if plan is _NO_PLAN:  # worked out once while the step's collections stay the same
            colls = self.collections_with(name) & due
            plan = self._step_plans[name] = self.plan(name, frozenset(colls)) if colls else None
        return plan

    def plan(self, name: str, colls: frozenset) -> SavePlan:
        key = (name, colls)
        plan = self._plans.get(key)
        if plan is None:
            ops: list = []
            for c in colls:
                if c.name not in SCALAR_COLLECTIONS:
                    ops.extend(r for r in c.reduction_config.all_reductions() if r not in ops)
            tb = self.tensorboard
            hist = next((c.name for c in colls if c.save_histogram and c.name not in NON_HISTOGRAM_COLLECTIONS), None)
            plan = self._plans[key] = SavePlan(
                save_shape=any(c.reduction_config.save_shape for c in colls),
                reductions=tuple(ReductionTarget(get_reduction_tensor_name(name, op, ab), op, ab) for op, ab in ops),
                save_raw=any(c.reduction_config.save_raw_tensor for c in colls),
                histogram_tag=f"{hist}/{name}" if tb and hist else None,
                tensorboard_scalar=tb and any(c.name in SCALAR_COLLECTIONS for c in colls),
            )
        return plan
