"""What every built-in rule shares: declared parameters, their parsing, tensor selection, and the registry.

A concrete subclass of :class:`BuiltinRule` (public name, ``invoke_at_step`` defined, module under
``smdebug.``) registers itself when its class is created: :func:`registered_rules` is then the one
list of the built-in rules that ``smdebug.rules.builtin``, ``create_rule``, ``smdebug rules`` and
``smdebug report`` read. Adding a rule means writing one class (``register=False`` opts out;
``register=True`` registers a class defined elsewhere).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from smdebug.exceptions import RuleConfigurationError, TensorUnavailableForStep
from smdebug.rules.builtin.reading import StepReader
from smdebug.rules.rule import Rule

__all__ = [
    "Param",
    "HookCollection",
    "BuiltinRule",
    "ReadingRule",
    "SelectingRule",
    "registered_rules",
    "select_tensor_names",
]

logger = logging.getLogger("smdebug")


@dataclass(frozen=True)
class Param:
    """One documented rule parameter: its name, parser (from rules/params.py) and default string."""

    name: str
    parse: Callable[[Any], Any]
    default: Any = None
    doc: str = ""


@dataclass(frozen=True)
class HookCollection:
    """A collection a hook must save for a rule (SageMaker's CollectionConfigurations entry)."""

    name: str
    parameters: dict = field(default_factory=dict)


class BuiltinRule(Rule):
    """Base of the 21 built-in rules: ``RuleName(base_trial, action_str="", **params)``.

    Subclasses declare ``params`` (a tuple of :class:`Param`) and ``hook_collections``; every
    parameter is parsed when the rule is built and set as an attribute of the same name, so bad
    input fails at construction with a :class:`RuleConfigurationError` naming the parameter.
    Rules comparing trials set ``uses_other_trials = True`` and take ``other_trials=``.
    """

    params: ClassVar[tuple[Param, ...]] = ()
    hook_collections: ClassVar[tuple[HookCollection, ...]] = ()
    uses_other_trials: ClassVar[bool] = False
    evaluates_tensors: ClassVar[bool] = True  # False: judges no tensor (StalledTrainingRule watches time)
    profiler_rule: ClassVar[bool] = False  # True: judges a profiler trial window by window (smdebug.rules.profiler)
    # what ``smdebug report`` needs saved to run this rule (None: the report leaves it out):
    # {"collection": name that must hold tensors, "regex": ..., "regex2": ...}, each optional
    report_needs: ClassVar[dict | None] = None

    tensors_evaluated: Any  # tensor values judged so far (see evaluated()); None for a rule that judges none

    def __init_subclass__(cls, register: bool | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if register is None:
            register = (
                not cls.__name__.startswith("_")
                and cls.__module__.startswith("smdebug.")
                and not getattr(cls.invoke_at_step, "__isabstractmethod__", False)
            )
        if register:
            _register(cls)

    def __init__(self, base_trial: Any, action_str: Any = "", other_trials: Any = None, **kwargs: Any) -> None:
        name = type(self).__name__
        if other_trials and not self.uses_other_trials:
            raise RuleConfigurationError(name, "other_trials", "this rule reads only the base trial")
        known = {p.name for p in self.params}
        unknown = sorted(set(kwargs) - known)
        if unknown:
            accepted = ", ".join(sorted(known)) or "none"
            raise RuleConfigurationError(name, unknown[0], f"unknown parameter (accepted: {accepted})")
        super().__init__(base_trial, action_str=action_str, other_trials=other_trials)
        # tensor values judged so far (see evaluated()); None for a rule that judges no tensor
        self.tensors_evaluated = 0 if self.evaluates_tensors else None
        self.unjudged_reason: str | None = None  # why the last step gave nothing to judge (see unjudged())
        self._unjudged_passing = False  # ... said at a step that merely lacked the tensors
        for p in self.params:
            raw = kwargs.get(p.name, p.default)
            try:
                value = p.parse(raw)
            except (ValueError, TypeError, OverflowError, RecursionError) as exc:
                raise RuleConfigurationError(name, p.name, str(exc) or type(exc).__name__) from None
            setattr(self, p.name, value)

    @classmethod
    def param_defaults(cls) -> dict:
        return {p.name: p.default for p in cls.params}

    @classmethod
    def summary(cls) -> str:
        """The first sentence of the class docstring (for ``smdebug rules --help``), without the
        maintainers' references to the specification ("spec 3.9", "register #12")."""
        first = " ".join((cls.__doc__ or "").strip().split("\n\n")[0].split())
        first = _INTERNAL_REFERENCE.sub("", first)
        end = _SENTENCE_END.search(first)
        return (first[: end.start() + 1] if end else first).replace("``", "")

    @classmethod
    def report_params(cls, trial: Any) -> dict | None:
        """The parameters ``smdebug report`` runs this rule with on ``trial``; None when the trial
        holds none of what ``report_needs`` says the rule reads (or the report leaves it out)."""
        needs = cls.report_needs
        if needs is None:
            return None
        if "collection" in needs:
            c = needs["collection"]
            if c not in trial.collections() or not trial.tensor_names(collection=c):
                return None
        for key in ("regex", "regex2"):
            if key in needs and not trial.tensor_names(regex=needs[key]):
                return None
        return {}

    def unjudged(self, reason: str, *, passing: bool = False) -> None:
        """Say why this step gave the rule nothing to judge (too few steps for ``num_steps``, the saved
        reductions lack what it needs and which to add, ...): when the rule judged nothing at all, its
        "evaluated nothing" line and ``smdebug run``'s Error give the last reason said. ``passing``:
        the step merely lacked tensors that other steps saved (a schedule that skips it); such a
        reason never replaces one said at a step that had them."""
        if passing and self.unjudged_reason is not None and not self._unjudged_passing:
            return
        self.unjudged_reason, self._unjudged_passing = reason, passing

    def evaluated(self, n: int = 1) -> None:
        """Count ``n`` tensor values this rule judged (read and checked against its condition):
        ``invoke_rule`` and ``smdebug rules`` report a rule that judged none."""
        self.tensors_evaluated += n

    def selection(self) -> str:
        """What selects the tensors this rule reads, as ``name=value`` pairs (for messages)."""
        parts = [f"{p.name}={_show(getattr(self, p.name))}" for p in self.params if _SELECTING.search(p.name)]
        if not parts:  # a fixed collection (VanishingGradient: gradients)
            parts += [f"collection {c.name!r}" for c in self.hook_collections]
        return ", ".join(parts) or "no selection parameter"


# "(spec 3.10; unit = ..., register #12)", "(spec 3.13, reference choice)": for maintainers, not users
_INTERNAL_REFERENCE = re.compile(r"\s*\((?:[^()]*?\b(?:spec \d|register #|reference choice))[^()]*\)")
_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)\.(?=\s|$)")


class ReadingRule(BuiltinRule):
    """A built-in rule reading through :class:`StepReader` (the trial's one batched read, ``Trial.read``)."""

    @property
    def reader(self) -> StepReader:
        r = self.__dict__.get("_reader")
        if r is None:
            r = self._reader = StepReader()
        return r


class SelectingRule(ReadingRule):
    """A rule over ``collection_names`` ∪ ``tensor_regex``; neither given means every tensor."""

    warn_on_all = False  # AllZero etc. "must specify" a selection: say so once when none is given
    collection_names: list[str]  # parameters of the subclasses (their ``params``)
    tensor_regex: list[re.Pattern[str]]

    def _check_selection(self) -> Any:
        if self.warn_on_all and not self.collection_names and not self.tensor_regex:
            self.logger.warning(
                "%s: neither collection_names nor tensor_regex was given: inspecting every tensor", self.rule_name
            )

    def selected(self, step: Any, trial: Any = None) -> list[str]:
        return select_tensor_names(
            trial or self.base_trial, step, self.collection_names, self.tensor_regex, rule_name=self.rule_name
        )


# the names these bases had before they were public
_ReadingRule = ReadingRule
_SelectingRule = SelectingRule

# rule class name -> class, in the order the classes were created
_REGISTRY: dict[str, type[BuiltinRule]] = {}


def _register(cls: type[BuiltinRule]) -> None:
    old = _REGISTRY.get(cls.__name__)
    if old is not None and (old.__module__, old.__qualname__) != (cls.__module__, cls.__qualname__):
        raise TypeError(
            f"two built-in rules named {cls.__name__!r}: {old.__module__}.{old.__qualname__} and "
            f"{cls.__module__}.{cls.__qualname__}"
        )
    _REGISTRY[cls.__name__] = cls  # a module reloaded replaces its own class


def registered_rules() -> dict:
    """``{name: class}`` of the rules registered so far (``smdebug.rules.builtin.rule_classes()``
    first imports every module of the package, so that all have registered)."""
    return dict(_REGISTRY)


_SELECTING = re.compile(r"regex|collection|^labels$|^predictions$")


def _show(value: Any) -> str:
    if isinstance(value, re.Pattern) or type(value).__name__ == "_Regexp":  # re or RE2 (smdebug.patterns)
        return repr(value.pattern)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    return repr(value)


def select_tensor_names(
    trial: Any,
    step: Any,
    collection_names: Any = (),
    tensor_regex: Any = (),
    *,
    mode: Any = None,
    rule_name: Any = "rule",
) -> list:
    """Names in ``collection_names`` ∪ those matching any of ``tensor_regex`` that have data at ``step``.

    With neither given, every tensor of the trial (docs/builtin-rules.md §1.4, logged once by the
    caller if it wants). ``tensor_regex`` items are compiled patterns or strings (``re.search``).
    """
    from smdebug.modes import ModeKeys

    mode = ModeKeys.GLOBAL if mode is None else mode
    names: set = set()
    if not collection_names and not tensor_regex:
        return sorted(trial.tensor_names(step=step, mode=mode))
    for c in collection_names:
        names.update(trial.tensor_names(step=step, mode=mode, collection=c))
    for r in tensor_regex:
        pattern = r.pattern if hasattr(r, "pattern") else r
        names.update(trial.tensor_names(step=step, mode=mode, regex=pattern))
    return sorted(names)


def value_or_none(trial: Any, name: Any, step: Any, mode: Any = None) -> Any:
    """The tensor's value at ``step``, or None when it was not saved there."""
    from smdebug.modes import ModeKeys

    try:
        return trial.tensor(name).value(step, mode=ModeKeys.GLOBAL if mode is None else mode)
    except TensorUnavailableForStep:
        return None
