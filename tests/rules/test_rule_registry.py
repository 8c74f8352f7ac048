"""Every registered built-in rule, one conformance test: it builds with its defaults, refuses a bad
parameter by name, fires on a small generated trial and stays silent on another. The registry is
the one list of rules: ``smdebug rules --help`` and ``smdebug report`` read it, and a new rule is
one class."""

from __future__ import annotations

import numpy as np
import pytest

from rule_trials import write_trial
from smdebug.exceptions import RuleConfigurationError
from smdebug.rules import invoke_rule
from smdebug.rules.builtin import rule_classes, rule_names
from smdebug.rules.builtin.base import BuiltinRule, Param, ReadingRule, SelectingRule
from smdebug.rules.params import as_float
from smdebug.trials import create_trial
from smdtest import FakeClock

STEPS = range(6)
_RNG = np.random.default_rng(0)


def every(value):
    """The same value at every step (a function of the step when callable)."""
    return {s: (value(s) if callable(value) else value) for s in STEPS}


_LABELS = np.tile([0, 1], 10)
# rule -> {"fire": case, "quiet": case}; a case is the trial's series and collections, the
# rule's parameters, an optional other trial (rules over several trials) and, for a rule that
# never fires (CreateXgboostReport), "fire": None. A rule missing here fails test_every_rule_has_a_case.
CASES = {
    "AllZero": {
        "fire": ({"w": every(np.zeros(8))}, {}, {"tensor_regex": "^w$"}),
        "quiet": ({"w": every(np.ones(8))}, {}, {"tensor_regex": "^w$"}),
    },
    "CheckInputImages": {
        "fire": (
            {"img_input_0": every(np.full((2, 3, 4, 4), 5.0))},
            {},
            {"regex": "^img_input_0$", "threshold_samples": "2"},
        ),
        "quiet": (
            {"img_input_0": every(np.resize([1.0, -1.0], (2, 3, 4, 4)))},
            {},
            {"regex": "^img_input_0$", "threshold_samples": "2"},
        ),
    },
    "ClassImbalance": {
        "fire": (
            {"labels": every(np.r_[np.zeros(20), 1]), "predictions": every(np.r_[np.zeros(20), 1])},
            {},
            {"samples": "10"},
        ),
        "quiet": ({"labels": every(_LABELS), "predictions": every(_LABELS)}, {}, {"samples": "10"}),
    },
    "Confusion": {
        "fire": ({"labels": every(_LABELS), "predictions": every(np.zeros(20))}, {}, {}),
        "quiet": ({"labels": every(_LABELS), "predictions": every(_LABELS)}, {}, {}),
    },
    "CreateXgboostReport": {
        "fire": None,  # never fires: it writes a report
        "quiet": ({"train-rmse": every(lambda s: 1.0 - 0.1 * s)}, {"metrics": ["train-rmse"]}, {}),
    },
    "DeadRelu": {
        "fire": ({"l1/relu_output": every(np.zeros((4, 8)))}, {}, {}),
        "quiet": ({"l1/relu_output": every(np.ones((4, 8)))}, {}, {}),
    },
    "ExplodingTensor": {
        "fire": ({"w": every([1.0, np.nan])}, {}, {"tensor_regex": "^w$"}),
        "quiet": ({"w": every([1.0, 2.0])}, {}, {"tensor_regex": "^w$"}),
    },
    "FeatureImportanceOverweight": {
        "fire": (
            {f"feature_importance/weight/f{i}": every(0.9 if i == 0 else 0.025) for i in range(5)},
            {},
            {"nfeatures": "1"},
        ),
        "quiet": ({f"feature_importance/weight/f{i}": every(0.2) for i in range(5)}, {}, {"nfeatures": "1"}),
    },
    "LossNotDecreasing": {
        "fire": ({"loss": every(1.0)}, {"losses": ["loss"]}, {"num_steps": "2"}),
        "quiet": ({"loss": every(lambda s: 0.5**s)}, {"losses": ["loss"]}, {"num_steps": "2"}),
    },
    "NLPSequenceRatio": {
        "fire": ({"embedding0_input_0": every(np.zeros((2, 6)))}, {}, {}),
        "quiet": ({"embedding0_input_0": every(np.arange(1, 13).reshape(2, 6))}, {}, {}),
    },
    "Overfit": {
        "fire": ({"train-rmse": every(lambda s: 1.0 - 0.1 * s), "validation-rmse": every(1.0)}, {}, {}),
        "quiet": (
            {"train-rmse": every(lambda s: 1.0 - 0.1 * s), "validation-rmse": every(lambda s: 1.0 - 0.1 * s)},
            {},
            {},
        ),
    },
    "Overtraining": {
        "fire": ({"loss": every(1.0)}, {"losses": ["loss"]}, {"patience_train": "2"}),
        "quiet": ({"loss": every(lambda s: 0.5**s)}, {"losses": ["loss"]}, {"patience_train": "2"}),
    },
    "PoorWeightInitialization": {
        "fire": (
            {
                "l1/relu_input": every(_RNG.normal(size=(16, 8))),
                "l2/relu_input": every(100 * _RNG.normal(size=(16, 8))),
            },
            {},
            {},
        ),
        "quiet": (
            {
                "l1/relu_input": every(np.resize([1.0, -1.0], (16, 8))),
                "l2/relu_input": every(np.resize([1.0, -1.0], (16, 8))),
            },
            {},
            {},
        ),
    },
    "SaturatedActivation": {
        "fire": ({"l1/tanh_input": every(np.full((4, 8), 20.0))}, {}, {}),
        "quiet": ({"l1/tanh_input": every(np.full((4, 8), 0.1))}, {}, {}),
    },
    "SimilarAcrossRuns": {
        "fire": ({"w": every(np.ones(4))}, {}, {"tensor_regex": "^w$"}, {"w": every(np.full(4, 2.0))}),
        "quiet": ({"w": every(np.ones(4))}, {}, {"tensor_regex": "^w$"}, {"w": every(np.ones(4))}),
    },
    "StalledTrainingRule": {  # a job that stopped writing (no end marker) fires; a finished one never
        "fire": ({"loss": every(1.0)}, {}, {"threshold": "60"}, None, False),
        "quiet": ({"loss": every(1.0)}, {}, {"threshold": "60"}),
    },
    "TensorVariance": {
        "fire": ({"w": every(10 * _RNG.normal(size=64))}, {}, {"tensor_regex": "^w$", "max_threshold": "1"}),
        "quiet": ({"w": every(np.ones(64))}, {}, {"tensor_regex": "^w$", "max_threshold": "1"}),
    },
    "TreeDepth": {
        "fire": ({"trees/Node": every(np.arange(64))}, {}, {}),
        "quiet": ({"trees/Node": every(np.arange(7))}, {}, {}),
    },
    "UnchangedTensor": {
        "fire": ({"w": every(np.ones(4))}, {}, {"tensor_regex": "^w$"}),
        "quiet": ({"w": every(lambda s: np.full(4, 1.0 + s))}, {}, {"tensor_regex": "^w$"}),
    },
    "VanishingGradient": {
        "fire": ({"gradient/w": every(np.full(4, 1e-9))}, {"gradients": ["gradient/w"]}, {}),
        "quiet": ({"gradient/w": every(np.ones(4))}, {"gradients": ["gradient/w"]}, {}),
    },
    "WeightUpdateRatio": {
        "fire": ({"w": every(lambda s: np.full(4, 100.0**s))}, {"weights": ["w"]}, {}),
        "quiet": ({"w": every(lambda s: np.full(4, 1.0 + 0.01 * s))}, {"weights": ["w"]}, {}),
    },
}

RULES = rule_names()  # the debugger rules (profiler rules: tests/rules/profiler/)


def _run(tmp_path, name, case):
    series, colls, params, other, *rest = (*case, None)[:4] + (case[4:] or (True,))
    cls = rule_classes()[name]
    base = create_trial(write_trial(tmp_path / "base", series, colls, end=rest[0]))
    kwargs = dict(params)
    if other is not None:
        kwargs["other_trials"] = [create_trial(write_trial(tmp_path / "other", other, colls))]
    if name == "StalledTrainingRule":
        clock = FakeClock()
        kwargs.update(clock=clock, sleep=clock.sleep)
    if name == "CreateXgboostReport":
        kwargs["output_path"] = str(tmp_path / "out")
    return invoke_rule(cls(base, **kwargs))


def test_every_rule_has_a_case():
    assert len(RULES) == 21 and not any(rule_classes()[n].profiler_rule for n in RULES)
    assert sorted(CASES) == RULES, "a registered rule without a conformance case (add it to CASES)"


@pytest.mark.parametrize("name", RULES)
def test_builds_with_its_defaults(tmp_path, name):
    cls = rule_classes()[name]
    assert issubclass(cls, BuiltinRule) and cls.__name__ == name
    series, colls, *_ = CASES[name]["quiet"]
    trial = create_trial(write_trial(tmp_path / "t", series, colls))
    kwargs = {"other_trials": [trial]} if cls.uses_other_trials else {}
    rule = cls(trial, **kwargs)
    for p in cls.params:
        want = p.parse(p.default)
        got = getattr(rule, p.name)
        if hasattr(want, "pattern") or (isinstance(want, list) and want and hasattr(want[0], "pattern")):
            want, got = repr(want), repr(got)
        assert got == want, (name, p.name)
    assert rule.summary() and all(c.name for c in cls.hook_collections)


@pytest.mark.parametrize("name", RULES)
def test_refuses_a_bad_parameter_by_name(tmp_path, name):
    cls = rule_classes()[name]
    series, colls, *_ = CASES[name]["quiet"]
    trial = create_trial(write_trial(tmp_path / "t", series, colls))
    kwargs = {"other_trials": [trial]} if cls.uses_other_trials else {}
    with pytest.raises(RuleConfigurationError) as exc:
        cls(trial, no_such_parameter="1", **kwargs)
    assert exc.value.parameter == "no_such_parameter" and name in str(exc.value)
    for p in cls.params:  # a value no parser takes
        with pytest.raises(RuleConfigurationError) as exc:
            cls(trial, **{p.name: object()}, **kwargs)
        assert exc.value.parameter == p.name, (name, p.name)


@pytest.mark.parametrize("name", RULES)
def test_fires_and_stays_silent(tmp_path, name):
    case = CASES[name]
    quiet = _run(tmp_path / "quiet", name, case["quiet"])
    assert quiet.fired == [], (name, quiet)
    if rule_classes()[name].evaluates_tensors:
        assert quiet.tensors_evaluated > 0, (name, quiet)
    if case["fire"] is None:
        assert name == "CreateXgboostReport" and (tmp_path / "quiet" / "out" / "rule-output").is_dir()
        return
    fired = _run(tmp_path / "fire", name, case["fire"])
    assert fired.fired, (name, fired)


# ------------------------------------------------------------------ the registry itself
@pytest.fixture
def registry(monkeypatch):
    """The registry, restored after the test (a rule class registered by a test leaves)."""
    from smdebug.rules.builtin import base

    saved = dict(base._REGISTRY)
    yield base._REGISTRY
    base._REGISTRY.clear()
    base._REGISTRY.update(saved)


def test_a_22nd_rule_is_one_class(registry, tmp_path, capsys):
    from smdebug.cli import main, report
    from smdebug.rules.builtin import get_rule_class

    class TwentySecond(BuiltinRule, register=True):
        """Fires on a loss above ``limit``."""

        params = (Param("limit", as_float, "2.0"),)
        report_needs = {"collection": "losses"}

        def invoke_at_step(self, step):
            v = self.base_trial.tensor("loss").value(step)
            self.evaluated()
            return float(v) > self.limit

    assert get_rule_class("TwentySecond") is TwentySecond and "TwentySecond" in rule_names()
    path = write_trial(tmp_path / "t", {"loss": every(lambda s: float(s))}, {"losses": ["loss"]})
    assert ("TwentySecond", {}) in report.applicable_rules(create_trial(path))
    assert main(["rules", path, "--rule", "TwentySecond"]) == 1
    assert "TwentySecond: fired at step 3" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["rules", "--help"])
    out = capsys.readouterr().out
    assert "TwentySecond: Fires on a loss above limit." in out and "parameters: limit=2.0" in out


def test_only_concrete_public_rules_register(registry):
    class Custom(BuiltinRule):  # a user's subclass (module outside smdebug): not a built-in rule
        def invoke_at_step(self, step):
            return False

    class _Private(BuiltinRule, register=True):
        def invoke_at_step(self, step):
            return False

    assert "Custom" not in rule_classes() and "ReadingRule" not in rule_classes()
    assert "SelectingRule" not in rule_classes() and "_Private" in rule_classes()
    with pytest.raises(TypeError, match="two built-in rules named 'AllZero'"):
        type("AllZero", (BuiltinRule,), {"invoke_at_step": lambda self, step: False}, register=True)


def test_the_bases_are_public_and_keep_their_old_names():
    from smdebug.rules.builtin import base, tensors

    assert base._ReadingRule is ReadingRule and base._SelectingRule is SelectingRule
    assert tensors._ReadingRule is ReadingRule and tensors._SelectingRule is SelectingRule
    assert issubclass(rule_classes()["ExplodingTensor"], SelectingRule)


def test_rules_help_lists_every_registered_rule(capsys):
    from smdebug.cli import main

    with pytest.raises(SystemExit):
        main(["rules", "--help"])
    out = capsys.readouterr().out
    for name in RULES:
        assert f"  {name}: " in out


def test_rule_summaries_are_whole_sentences_without_internal_references():
    """`smdebug rules --help` lists each rule by its summary: a whole sentence for users, without
    the maintainers' pointers into the specification ("spec 3.9", "register #12")."""
    from smdebug.rules.builtin.base import registered_rules

    for name, cls in registered_rules().items():
        s = cls.summary()
        assert s and s.endswith((".", ")")), (name, s)
        assert not s.endswith(("e.g.", "i.e.", ":")), (name, s)
        assert "spec " not in s and "register #" not in s and "reference choice" not in s, (name, s)
