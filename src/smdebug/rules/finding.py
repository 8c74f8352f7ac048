"""What a rule found when it fired: the tensor(s), their value(s), the condition, where.

A built-in rule returns ``self.found(...)`` (True) from ``invoke_at_step`` instead of a bare True;
:meth:`smdebug.rules.Rule.invoke` fills in the mode, the mode step and the rule, and hands the
:class:`Finding` to the actions, to :class:`~smdebug.exceptions.RuleEvaluationConditionMet` (whose
message ends with it), to ``smdebug rules --json``, to status.json and to the stop request. The
field names of :meth:`Finding.to_json` are stable: scripts and schedulers read them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = ["Finding", "FINDING_FIELDS", "show_value"]

# the members of Finding.to_json(), in this order (docs/builtin-rules.md, "What a firing names")
FINDING_FIELDS = ("rule", "step", "mode", "mode_step", "worker", "tensors", "values", "condition", "message")


def show_value(v: Any) -> str:
    """A number as a person reads it: 4 significant digits, NaN and inf by name."""
    if v is None:
        return "?"
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    if f == int(f) and abs(f) < 1e6:
        return str(int(f))
    return f"{f:.4g}"


def _json_number(v: Any) -> Any:
    """A value for JSON: a finite float, or the strings "NaN", "inf", "-inf" (JSON has no such numbers)."""
    if v is None or isinstance(v, str):
        return v
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    if math.isfinite(f):
        return int(f) if isinstance(v, (int,)) and not isinstance(v, bool) else f
    return "NaN" if math.isnan(f) else ("inf" if f > 0 else "-inf")


@dataclass(frozen=True)
class Finding:
    """One firing of a rule, named: ``message`` is the sentence people read.

    ``tensors`` and ``values`` go pair by pair where a rule has one value per tensor (a value may be
    None where the rule judged something other than a tensor's number, such as a time); ``condition``
    is the comparison that held (``"mean |x| < 1e-07"``); ``worker`` the worker whose values fired
    it (None: the rule reads no worker's tensor, or every worker's together).
    """

    rule: str
    step: int
    message: str
    tensors: tuple[str, ...] = ()
    values: tuple[Any, ...] = ()
    condition: str = ""
    worker: str | None = None
    mode: str | None = None
    mode_step: int | None = None
    extra: dict = field(default_factory=dict, compare=False)

    def placed(self, trial: Any) -> Finding:
        """This finding with its mode and mode step read off ``trial`` (left as they are when it
        cannot tell)."""
        if self.mode is not None and self.mode_step is not None:
            return self
        try:
            mode = trial.mode(self.step)
            mode_step = int(trial.mode_step(self.step))
        except Exception:  # a trial-like object without modes, or a step it does not list
            return self
        return replace(self, mode=getattr(mode, "name", str(mode)), mode_step=mode_step)

    def where(self) -> str:
        """``step 33 (TRAIN step 33, worker_0)``."""
        inside = []
        if self.mode is not None and self.mode_step is not None:
            inside.append(f"{self.mode} step {self.mode_step}")
        if self.worker:
            inside.append(self.worker)
        return f"step {self.step}" + (f" ({', '.join(inside)})" if inside else "")

    def text(self) -> str:
        """The message with where it was found: ``loss_output_0 = NaN ..., at step 33 (TRAIN step 33, worker_0)``."""
        return f"{self.message}, at {self.where()}"

    def to_json(self) -> dict:
        out = {
            "rule": self.rule,
            "step": self.step,
            "mode": self.mode,
            "mode_step": self.mode_step,
            "worker": self.worker,
            "tensors": list(self.tensors),
            "values": [_json_number(v) for v in self.values],
            "condition": self.condition,
            "message": self.message,
        }
        out.update({k: _json_number(v) if isinstance(v, float) else v for k, v in self.extra.items()})
        return out

    def __str__(self) -> str:
        return self.message
