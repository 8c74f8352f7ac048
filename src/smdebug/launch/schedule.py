"""How often ``smdebug run`` saves what the rules read, where the user did not say.

A hook with no save schedule saves every 500th step (SageMaker's default, kept for hooks made in
code), and SageMaker's rule configurations ask for the same: a rule beside a 64-step job then
judges one step. Under ``smdebug run`` a collection whose schedule nobody gave (no
``save_interval`` / ``save_steps`` in its parameters, none in the hook's parameters; a rule's own
default entry counts as not given) is saved:

- every step when it holds scalars (losses, metrics, sm_metrics: a few bytes a step);
- every ``RULE_INTERVAL`` steps when a debugger rule reads it (its collection, a ``collection_names``
  parameter, or every collection for a rule selecting by regex, with no selection, or a custom rule);
- on the hook's default schedule otherwise.

With no collection named at all, ``losses`` is saved every step. :func:`choose_intervals` says
what it chose, one line a collection, which the launcher prints before the job starts. Whatever
the schedule, the hook's non-finite watch saves the first NaN/inf step and the next few in full
(core.engine.nonfinite).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["choose_intervals", "RULE_INTERVAL", "SCALAR_COLLECTIONS"]

RULE_INTERVAL = 10
SCALAR_COLLECTIONS = frozenset({"losses", "metrics", "sm_metrics"})
_SCHEDULE_KEYS = ("save_interval", "save_steps", "start_step", "end_step")


def _has_schedule(params: dict) -> bool:
    return any(k == key or k.endswith("." + key) for k in params for key in _SCHEDULE_KEYS[:2])


@dataclass
class RuleReads:
    """The collections the debugger rules read; ``every``: one reads every collection saved."""

    names: set[str] = field(default_factory=set)
    every: bool = False

    def reads(self, collection: str) -> bool:
        return self.every or collection in self.names


def _read_by_rules(rules: Iterable) -> RuleReads:
    from smdebug.rules.builtin import get_rule_class
    from smdebug.rules.builtin.base import BuiltinRule

    out = RuleReads()
    names = out.names
    for r in rules:
        p = r.parameters
        if r.source is not None:
            out.every = True  # a custom rule: what it reads is its own business
            continue
        try:
            cls = get_rule_class(r.rule_to_invoke.strip())
        except Exception:  # checked elsewhere, with a message naming the rule
            continue
        if not issubclass(cls, BuiltinRule) or not cls.evaluates_tensors:
            continue
        names.update(c.name for c in cls.hook_collections)
        declared = {q.name for q in cls.params}
        given = [c.strip() for c in str(p.get("collection_names", "")).split(",") if c.strip()]
        names.update(given)
        if "tensor_regex" in declared and (str(p.get("tensor_regex", "")).strip() or not given):
            out.every = True
    return out


def choose_intervals(collections: list, rule_entries: set[str], rules: list, hook_parameters: dict) -> list[str]:
    """Give each collection nobody scheduled its interval (module docstring), in place; the lines
    that say what was chosen. ``rule_entries``: collection names whose entry a rule added."""
    if _has_schedule(hook_parameters):
        return []  # the user's schedule for every collection
    notes: list[str] = []
    if not collections:
        collections.append({"CollectionName": "losses"})
        rule_entries = set(rule_entries) | {"losses"}
    read = _read_by_rules(rules)
    rule_names = ", ".join(sorted({r.name for r in rules})) or ""
    for entry in collections:
        name = entry["CollectionName"]
        params = dict(entry.get("CollectionParameters") or {})
        if name in rule_entries:  # a rule's default (SageMaker's 500): not the user's choice
            params = {k: v for k, v in params.items() if k != "save_interval"}
        if _has_schedule(params):
            continue
        if name in SCALAR_COLLECTIONS:
            interval, why = 1, "scalars"
        elif rules and read.reads(name):
            interval, why = RULE_INTERVAL, f"read by {rule_names}"
        else:
            continue
        entry["CollectionParameters"] = {**params, "save_interval": str(interval)}
        step = "every step" if interval == 1 else f"every {interval} steps"
        notes.append(f"saving {name} {step} ({why}; give {name}:save_interval=N to choose)")
    return notes
