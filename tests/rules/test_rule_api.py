"""The Rule API of smdebug 1.0.34: the seed's example rule and 1.0.34-style custom rules using
req_tensors, on trials written by real PyTorch runs and on the 1.0.34 fixtures, checked against
numpy and against smdebug 1.0.34 running the same rule file."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from smdebug.analysis.utils import no_refresh
from smdebug.exceptions import (
    RuleEvaluationConditionMet,
    SMDebugValueError,
    TensorUnavailable,
    TensorUnavailableForStep,
)
from smdebug.rules import RequiredTensors, Rule, invoke_rule
from smdebug.trials import create_trial
from smdtest import FIXTURES

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "invoke_script.py"


# ---------------------------------------------------------------- the seed's example, verbatim
class VanishingGradientRule(Rule):
    def __init__(self, base_trial, threshold=0.0000001):
        super().__init__(base_trial, other_trials=None)
        self.threshold = float(threshold)

    def invoke_at_step(self, step):
        for tensorname in self.base_trial.tensors(collection="gradients"):
            tensor = self.base_trial.tensor(tensorname)
            abs_mean = tensor.reduction_value(step, "mean", abs=True)
            if abs_mean < self.threshold:
                return True
            else:
                return False


def _expected_vanishing(run, threshold):
    """What the seed's rule decides, from the gradients the training loop itself kept."""
    out = []
    for step, rec in enumerate(run.steps):
        first = sorted(rec.grads)[0]  # the rule looks at the first gradient only (the docs' code)
        if np.mean(np.abs(rec.grads[first].astype(np.float64))) < threshold:
            out.append(step)
    return out


@pytest.mark.parametrize("run_name, threshold", [("vanishing", 1e-7), ("a", 1e-7), ("a", 0.05)])
def test_seed_vanishing_gradient_rule_runs_unchanged(pt_runs, run_name, threshold):
    run = pt_runs[run_name]
    expected = _expected_vanishing(run, threshold)
    rule = VanishingGradientRule(create_trial(run.path), threshold=threshold)
    got = invoke_rule(rule, start_step=0, end_step=None)
    assert got.fired == expected
    assert got.evaluated == list(range(len(run.steps)))
    assert got.ended == "no_more_data"
    if run_name == "vanishing":
        assert expected == list(range(5))  # tiny sigmoid weights: vanishes from the first step
    if threshold == 1e-7 and run_name == "a":
        assert expected == []


def test_seed_rule_raise_eval_cond_stops_at_first_fire(pt_runs):
    rule = VanishingGradientRule(create_trial(pt_runs["vanishing"].path))
    with pytest.raises(RuleEvaluationConditionMet) as exc:
        invoke_rule(rule, start_step=2, end_step=None, raise_eval_cond=True)
    assert (exc.value.rule_name, exc.value.step) == ("VanishingGradientRule", 2)
    assert str(exc.value) == (
        "Evaluation of the rule VanishingGradientRule at step 2 resulted in the condition being met"
    )


# ---------------------------------------------------------------- 1.0.34-style rules, ours vs 1.0.34
def _run(python, rule, base, **kwargs):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # 1.0.34's own smdebug, not ours
    proc = subprocess.run(
        [python, str(SCRIPT), rule, str(base), json.dumps(kwargs)], capture_output=True, text=True, timeout=300, env=env
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT ") :])


def _ours(rule, base, **kwargs):
    import legacy_rules

    if "other_trial" in kwargs:
        kwargs["other_trial"] = create_trial(kwargs["other_trial"])
    r = getattr(legacy_rules, rule)(create_trial(str(base)), **kwargs)
    invoke_rule(r)
    return json.loads(json.dumps(r.calls))


def test_similar_runs_with_req_tensors_matches_1034(pt_runs, peer):
    same = _ours("SimilarRuns", pt_runs["a"].path, other_trial=pt_runs["a2"].path)
    differ = _ours("SimilarRuns", pt_runs["a"].path, other_trial=pt_runs["b"].path, include_regex="weight")
    assert [c[:2] for c in same] == [[s, False] for s in range(6)]  # one seed twice: identical
    assert [c[:2] for c in differ] == [[s, True] for s in range(6)]  # two seeds
    assert differ[0][2] == [
        "Sequential_0.weight",
        "Sequential_2.weight",
        "gradient/Sequential_0.weight",
        "gradient/Sequential_2.weight",
    ]
    assert differ == _run(peer, "SimilarRuns", pt_runs["a"].path, other_trial=pt_runs["b"].path, include_regex="weight")
    assert same == _run(peer, "SimilarRuns", pt_runs["a"].path, other_trial=pt_runs["a2"].path)


@pytest.mark.parametrize(
    "trial, regex, threshold",
    [
        ("pytorch_mlp", "Sequential_.*weight", "0.02"),
        ("multi_worker_modes", ".*", "1.0"),
        ("reductions_only", ".*", "0.5"),  # only reductions: fetch raises TensorUnavailableForStep, no call
    ],
)
def test_small_change_on_fixtures_matches_1034(peer, trial, regex, threshold):
    ours = _ours("SmallChange", FIXTURES / trial, regex=regex, threshold=threshold)
    theirs = _run(peer, "SmallChange", FIXTURES / trial, regex=regex, threshold=threshold)
    assert ours == theirs
    if trial == "reductions_only":
        assert ours == []
    else:  # steps where a matching tensor is missing (EVAL steps have no gradients) are skipped by both
        assert len(ours) >= 4
        assert any(c[1] for c in ours) or trial != "pytorch_mlp"


def test_small_change_on_real_run_matches_numpy_and_1034(pt_runs, peer):
    run = pt_runs["a"]
    ours = _ours("SmallChange", run.path, regex="^Sequential_0.weight$", threshold="0.01")
    expected = []
    for s in range(len(run.steps)):
        ratios = {}
        if s:
            now = run.steps[s].params["Sequential_0.weight"].astype(np.float64)
            before = run.steps[s - 1].params["Sequential_0.weight"].astype(np.float64)
            ratios["Sequential_0.weight"] = round(
                float(np.linalg.norm(now - before) / (np.linalg.norm(before) + 1e-12)), 9
            )
        expected.append([s, any(r < 0.01 for r in ratios.values()), ratios])
    assert ours == expected
    assert ours == _run(peer, "SmallChange", run.path, regex="^Sequential_0.weight$", threshold="0.01")


# ---------------------------------------------------------------- RequiredTensors itself
class _Spy(Rule):
    """Requires the given names at (step, step - 1) and reads them back in invoke_at_step."""

    def __init__(self, base_trial, names, other_trials=None):
        super().__init__(base_trial, other_trials=other_trials)
        self.names = names
        self.seen = {}
        self.refresh_inside = None

    def set_required_tensors(self, step):
        for n in self.names:
            self.req_tensors.add(n, steps=[step, step - 1] if step else [step])
            for t in self.other_trials or ():
                self.req_tensors.add(n, steps=[step], trial=t)

    def invoke_at_step(self, step):
        self.refresh_inside = self.base_trial.dynamic_refresh
        reads = _count_reads(self.base_trial)
        self.seen[step] = {n: self.base_trial.tensor(n).value(step) for n in self.names}
        self.reads_in_invoke = reads() if self.names else 0
        return False


def _count_reads(trial):
    calls = []
    inner = trial.store.read_ranges_many

    def counting(wanted):
        calls.append(len(wanted))
        return inner(wanted)

    trial.store.read_ranges_many = counting
    return lambda: len(calls)


def test_fetch_reads_everything_in_one_batched_read_per_trial(pt_runs):
    trial, other = create_trial(pt_runs["a"].path), create_trial(pt_runs["b"].path)
    names = trial.tensor_names(collection="gradients") + trial.tensor_names(collection="weights")
    rule = _Spy(trial, names, other_trials=[other])
    base_reads, other_reads = _count_reads(trial), _count_reads(other)
    rule.invoke(3)
    assert base_reads() == 1 and other_reads() == 1  # 4 + 4 tensors at steps 3 and 2: one read each
    assert rule.reads_in_invoke == 0  # invoke_at_step's value() calls were answered from memory
    assert rule.refresh_inside is False and trial.dynamic_refresh is True
    for n in names:
        expect = pt_runs["a"].steps[3].grads.get(n, pt_runs["a"].steps[3].params.get(n))
        np.testing.assert_array_equal(rule.seen[3][n], expect)
    # released after the step: later reads go to storage again
    assert not trial.tensor(names[0]).cache and trial.tensor(names[0])._values == {}


def test_required_tensors_api(pt_runs):
    trial, other = create_trial(pt_runs["a"].path), create_trial(pt_runs["b"].path)
    req = RequiredTensors(trial, [other])
    req.add("Sequential_0.weight", steps=[1])
    req.add("Sequential_0.weight", steps=[0])
    req.add("gradient/.*bias", steps=[2], should_match_regex=True)
    req.add("Sequential_2.bias", steps=3, trial=other)
    assert req.get_tensor_steps("Sequential_0.weight") == [1, 0]
    assert req.get_names() == ["Sequential_0.weight", "gradient/Sequential_0.bias", "gradient/Sequential_2.bias"]
    assert [t.name for t in req.get()] == req.get_names()
    assert req.get_names(trial=other) == ["Sequential_2.bias"]
    with pytest.raises(TensorUnavailable):
        req.add("no_such_tensor", steps=[0])
    with pytest.raises(SMDebugValueError, match="neither the rule's base trial"):
        req.add("Sequential_0.weight", steps=[0], trial=create_trial(pt_runs["a2"].path))
    with no_refresh([trial, other]):
        req.fetch()
    req.clear()
    assert req.get_names() == [] and req.get_names(trial=other) == []


def test_fetch_raises_like_value_when_only_reductions_were_saved():
    trial = create_trial(str(FIXTURES / "reductions_only"))
    rule = _Spy(trial, ["grad/x"])
    with pytest.raises(TensorUnavailableForStep, match="grad/x"):
        rule.invoke(0)
    run = invoke_rule(rule)
    assert run.evaluated == [] and run.skipped >= 4 and run.ended == "no_more_data"


# ---------------------------------------------------------------- invoke_rule
class _Every(Rule):
    def __init__(self, base_trial, fire_at=(), end_of_rule_at=None, action_str=""):
        super().__init__(base_trial, action_str=action_str)
        self.fire_at, self.end_at, self.calls = set(fire_at), end_of_rule_at, []

    def invoke_at_step(self, step):
        self.calls.append(step)
        if step == self.end_at:
            raise RuleEvaluationConditionMet(self.rule_name, step, end_of_rule=True)
        return step in self.fire_at


def test_invoke_rule_bounds_fires_and_end_of_rule(pt_runs):
    trial = create_trial(pt_runs["a"].path)
    rule = _Every(trial, fire_at={1, 3})
    run = invoke_rule(rule, start_step=1, end_step=5)
    assert rule.calls == [1, 2, 3, 4] and run.fired == [1, 3] and run.ended == "end_step" and run.next_step == 5
    rule = _Every(trial, end_of_rule_at=2)
    run = invoke_rule(rule)
    assert rule.calls == [0, 1, 2] and run.ended == "end_of_rule"


def test_invoke_rule_jumps_over_unsaved_steps(pt_runs):
    trial = create_trial(pt_runs["sparse"].path)
    assert trial.steps() == list(range(0, 100, 10))
    calls = []
    inner = trial.wait_for_steps

    def counting(steps, *a, **k):
        calls.append(list(steps))
        return inner(steps, *a, **k)

    trial.wait_for_steps = counting
    rule = _Every(trial)
    run = invoke_rule(rule)
    assert rule.calls == list(range(0, 100, 10)) == run.evaluated
    assert run.skipped == 9 + 1 - 1  # steps 1, 11, ..., 81: one wait each, then a jump to the next saved step
    assert len(calls) == 10 + 9 + 1  # saved steps, the 9 gaps, and step 91 (NoMoreData)
    assert run.ended == "no_more_data"


@pytest.mark.parametrize(
    "trial, threshold, fired",
    [
        ("pytorch_mlp", "0.03", [2, 8, 14]),  # saved abs-mean reductions; EVAL steps have no gradients
        ("multi_worker_modes", "2.0", [0, 1, 3]),  # computed from raw values, first worker
        ("reductions_only", "3.0", [0, 5]),  # saved reductions only
    ],
)
def test_seed_rule_on_fixtures_matches_1034(peer, trial, threshold, fired):
    ours = _ours("SeedVanishing", FIXTURES / trial, threshold=threshold)
    assert [c[0] for c in ours if c[2] < float(threshold)] == fired
    assert ours == _run(peer, "SeedVanishing", FIXTURES / trial, threshold=threshold)
