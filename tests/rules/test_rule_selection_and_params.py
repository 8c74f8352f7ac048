"""A rule that looked at nothing says so; parameters that are regexes, huge numbers or deep JSON.

Trials are written by hand with FileWriter: tensor names, collections and values are chosen so
that each test knows what a rule must see.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest

from rule_trials import write_trial
from smdebug.cli import main
from smdebug.exceptions import RuleConfigurationError
from smdebug.rules import invoke_rule
from smdebug.rules.builtin import ExplodingTensor, LossNotDecreasing, get_rule_class
from smdebug.rules.params import as_regex_list, as_str_list
from smdebug.trials import create_trial


@pytest.fixture
def nan_gradients(tmp_path):
    """Every gradient is NaN at every step; the collection is ``gradients``."""
    names = ["gradient/fc.weight", "gradient/fc.bias"]
    series = {n: {s: [np.nan, 1.0] for s in range(4)} for n in names}
    series["loss"] = {s: 1.0 for s in range(4)}
    return write_trial(tmp_path / "nan", series, {"gradients": names, "losses": ["loss"]})


# ------------------------------------------------------------------ 1. a rule that looked at nothing
def test_a_misspelt_collection_is_reported_not_passed(nan_gradients, caplog):
    """collection_names=gradient (for gradients): the rule judged no tensor at any step; the run
    says so (RuleRun.tensors_evaluated == 0) and one warning names the selection."""
    rule = ExplodingTensor(create_trial(nan_gradients), collection_names="gradient")
    with caplog.at_level(logging.WARNING, logger="smdebug"):
        run = invoke_rule(rule)
        again = invoke_rule(rule)  # the same rule object: warned once
    assert run.fired == [] and len(run.evaluated) == 4
    assert run.tensors_evaluated == 0 and run.looked_at_nothing
    assert again.tensors_evaluated == 0
    warnings = [r.getMessage() for r in caplog.records if "evaluated no tensor" in r.getMessage()]
    assert len(warnings) == 1 and "collection_names=['gradient']" in warnings[0]


def test_the_right_collection_fires_and_counts_what_it_read(nan_gradients):
    run = invoke_rule(ExplodingTensor(create_trial(nan_gradients), collection_names="gradients"))
    assert run.fired == [0, 1, 2, 3]
    clean = invoke_rule(ExplodingTensor(create_trial(nan_gradients), tensor_regex="loss"))
    assert clean.fired == [] and clean.tensors_evaluated == 4  # one loss value at each of 4 steps
    assert not clean.looked_at_nothing


def test_a_rule_that_only_selects_but_cannot_judge_counts_nothing(tmp_path):
    """LossNotDecreasing selected the loss at every step but never had a value num_steps earlier
    to compare with: it evaluated nothing (what it selected is not what it judged)."""
    path = write_trial(tmp_path / "short", {"loss": {0: 1.0, 1: 0.9}}, {"losses": ["loss"]})
    run = invoke_rule(LossNotDecreasing(create_trial(path), num_steps="10"))
    assert run.fired == [] and run.tensors_evaluated == 0


def test_cli_rules_exits_2_when_a_rule_looked_at_nothing(nan_gradients, capsys):
    code = main(["rules", nan_gradients, "--rule", "ExplodingTensor", "--param", "collection_names=gradient"])
    out = capsys.readouterr().out
    assert code == 2
    assert "ExplodingTensor: evaluated no tensor" in out and "collection_names=['gradient']" in out
    assert "no issue found" not in out


def test_cli_rules_a_firing_wins_over_a_rule_that_looked_at_nothing(nan_gradients, capsys):
    code = main(
        [
            "rules",
            nan_gradients,
            "--rule",
            "ExplodingTensor",
            "--param",
            "collection_names=gradient",
            "--rule",
            "ExplodingTensor",
            "--param",
            "collection_names=gradients",
            "--json",
        ]
    )
    import json

    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    summaries = [e for e in events if e["event"] == "summary"]
    assert code == 1
    assert [(s["fired"], s["evaluated_nothing"], s["tensors_evaluated"]) for s in summaries] == [
        (False, True, 0),
        (True, False, 2),
    ]


def test_cli_watch_exits_2_when_a_rule_looked_at_nothing(nan_gradients, capsys):
    code = main(["watch", nan_gradients, "--rule", "ExplodingTensor", "--param", "collection_names=gradient"])
    assert code == 2 and "ExplodingTensor: evaluated no tensor" in capsys.readouterr().out


def test_cli_rules_counts_tensor_values_when_nothing_fired(nan_gradients, capsys):
    assert main(["rules", nan_gradients, "--rule", "ExplodingTensor", "--param", "tensor_regex=loss"]) == 0
    assert "ExplodingTensor: no issue found (4 step evaluations, 4 tensor values)" in capsys.readouterr().out


# ------------------------------------------------------------------ 4. a flat loss
def test_a_flat_loss_fires_with_diff_percent_0(tmp_path):
    """Learning rate 0: the loss never changes; it did not decrease, whatever diff_percent is."""
    path = write_trial(tmp_path / "flat", {"loss": {s: 0.75 for s in range(8)}}, {"losses": ["loss"]})
    for diff in ("0", "0.0", "5"):
        run = invoke_rule(LossNotDecreasing(create_trial(path), num_steps="3", diff_percent=diff))
        assert run.fired and run.fired[0] == 3, diff
    zero = write_trial(tmp_path / "zero", {"loss": {s: 0.0 for s in range(8)}}, {"losses": ["loss"]})
    assert invoke_rule(LossNotDecreasing(create_trial(zero), num_steps="3", diff_percent="0")).fired[0] == 3
    falling = write_trial(tmp_path / "falling", {"loss": {s: 1.0 - 0.01 * s for s in range(8)}}, {"losses": ["loss"]})
    assert invoke_rule(LossNotDecreasing(create_trial(falling), num_steps="3", diff_percent="0")).fired == []


# ------------------------------------------------------------------ 5. regexes with commas
@pytest.mark.parametrize(
    "text, want",
    [
        ("Seq.{1,3}", ["Seq.{1,3}"]),
        ("Seq.{1,3}, .*loss", ["Seq.{1,3}", ".*loss"]),
        ("a{2,}b,c", ["a{2,}b", "c"]),
        ("[0-9]+_weight", ["[0-9]+_weight"]),
        ("(relu|tanh)_input", ["(relu|tanh)_input"]),
        ("[,]x", ["[,]x"]),
        (r"a\,b", [r"a\,b"]),
        ("['.*relu', 'b{1,2}']", [".*relu", "b{1,2}"]),
        ("loss, losses", ["loss", "losses"]),
    ],
)
def test_regex_lists_split_only_at_top_level_commas(text, want):
    assert [p.pattern for p in as_regex_list(text)] == want


def test_other_lists_keep_their_syntax():
    assert as_str_list("gradients,weights") == ["gradients", "weights"]
    assert as_str_list("[a, b]") == ["a", "b"]


def test_a_regex_with_a_repetition_selects_what_it_says(tmp_path):
    names = {"Seq1": 1.0, "Seq12": 2.0, "Seq1234": 3.0, "other": 4.0}
    path = write_trial(tmp_path / "seq", {n: {0: [v]} for n, v in names.items()})
    rule = ExplodingTensor(create_trial(path), tensor_regex="^Seq.{1,3}$")
    assert [p.pattern for p in rule.tensor_regex] == ["^Seq.{1,3}$"]
    assert invoke_rule(rule).tensors_evaluated == 2  # Seq1 and Seq12


# ------------------------------------------------------------------ 6. documented errors, not raw ones
@pytest.mark.parametrize(
    "rule, params, name",
    [
        ("VanishingGradient", {"threshold": 10**400}, "threshold"),
        ("LossNotDecreasing", {"num_steps": 10**400}, "num_steps"),
        ("LossNotDecreasing", {"num_steps": "1e400"}, "num_steps"),
        ("FeatureImportanceOverweight", {"nfeatures": 2**70}, "nfeatures"),
    ],
)
def test_parameters_out_of_range_are_configuration_errors(nan_gradients, rule, params, name):
    with pytest.raises(RuleConfigurationError) as info:
        get_rule_class(rule)(create_trial(nan_gradients), **params)
    assert info.value.parameter == name and name in str(info.value)


@pytest.mark.parametrize("depth", [10_000, 200_000])
def test_deeply_nested_action_json_is_a_configuration_error(nan_gradients, depth):
    deep = "[" * depth + "]" * depth
    with pytest.raises(RuleConfigurationError) as info:
        ExplodingTensor(create_trial(nan_gradients), action_str=deep)
    assert info.value.parameter == "action_str"
    assert len(str(info.value)) < 500  # the message does not repeat the whole input


# ------------------------------------------------------------------ 2. the rules' reader checks the payload CRC
def _flip_to_nan(trial_dir, value: float) -> None:
    """Overwrite the one float32 ``value`` in the trial's event files with a NaN, leaving the
    framing (length, its CRC, the footer) intact: only the index's payload CRC32C can tell."""
    import struct

    hits = []
    for f in trial_dir.rglob("*.tfevents"):
        data = bytearray(f.read_bytes())
        at = data.find(struct.pack("<f", value))
        if at >= 0:
            hits.append(f)
            data[at : at + 4] = struct.pack("<f", float("nan"))
            f.write_bytes(bytes(data))
    assert len(hits) == 1


@pytest.mark.parametrize(
    "rule, params", [("ExplodingTensor", {}), ("AllZero", {"threshold": "50"}), ("VanishingGradient", {})]
)
@pytest.mark.parametrize("index", ["per-step", "consolidated"])
def test_rules_refuse_a_record_whose_payload_crc_does_not_match(tmp_path, rule, params, index):
    """One flipped float: Tensor.value refuses the record as corrupt; so do the rules, with the
    same error, instead of firing (or not) on it; with per-step index files and consolidated ones."""
    from smdebug.core.output.consolidate import consolidate
    from smdebug.exceptions import EventFileCorrupt

    names = ["gradient/w", "gradient/b"]
    series = {n: {s: [1.0 + s, 2.0, 0.5] for s in range(3)} for n in names}
    series["gradient/w"][1] = [1234.5, 2.0, 0.5]
    path = write_trial(tmp_path / "t", series, {"gradients": names})
    _flip_to_nan(tmp_path / "t", 1234.5)
    if index == "consolidated":
        consolidate(path)
    trial = create_trial(path)
    if index == "consolidated":
        trial.steps()
        assert type(trial._index.by_step.get(1)["worker_0"]).__name__ == "ChunkFile"
    with pytest.raises(EventFileCorrupt) as by_value:
        trial.tensor("gradient/w").value(1)
    assert "payload CRC32C" in str(by_value.value)
    with pytest.raises(EventFileCorrupt) as by_rule:
        invoke_rule(get_rule_class(rule)(create_trial(path), **params))
    assert str(by_rule.value) == str(by_value.value)


def test_cli_rules_refuse_a_corrupt_record(tmp_path, capsys):
    names = ["gradient/w"]
    path = write_trial(tmp_path / "t", {"gradient/w": {0: [1.0], 1: [4321.5], 2: [1.0]}}, {"gradients": names})
    _flip_to_nan(tmp_path / "t", 4321.5)
    code = main(["rules", path, "--rule", "ExplodingTensor"])
    captured = capsys.readouterr()
    assert code != 1 and "FIRED" not in captured.out
    assert "payload CRC32C" in captured.err


def test_req_tensors_refuse_a_corrupt_record(tmp_path):
    """A custom Rule declaring its tensors through req_tensors: the batched read checks the
    payload CRC too, and no unchecked value is left in the tensor's cache."""
    from smdebug.exceptions import EventFileCorrupt
    from smdebug.rules import Rule

    class Reads(Rule):
        def set_required_tensors(self, step):
            self.req_tensors.add("gradient/w", [step])

        def invoke_at_step(self, step):
            return not np.isfinite(self.base_trial.tensor("gradient/w").value(step)).all()

    path = write_trial(tmp_path / "t", {"gradient/w": {0: [1.0], 1: [8765.5]}}, {"gradients": ["gradient/w"]})
    _flip_to_nan(tmp_path / "t", 8765.5)
    with pytest.raises(EventFileCorrupt, match="payload CRC32C"):
        invoke_rule(Reads(create_trial(path)))


# one trial holding something every built-in rule can judge (GLOBAL steps 0..5), and per rule the
# parameters that point it there; every rule must count what it judged, and a selection that
# matches nothing must count 0
_RNG = np.random.default_rng(0)
_SERIES = {
    "gradient/w": {s: _RNG.normal(size=8) for s in range(6)},
    "w": {s: _RNG.normal(size=8) * (1 + s) for s in range(6)},
    "loss": {s: 1.0 + 0.1 * s for s in range(6)},
    "train-rmse": {s: 1.0 - 0.1 * s for s in range(6)},
    "validation-rmse": {s: 1.0 for s in range(6)},
    "l1/relu_input": {s: _RNG.normal(size=(4, 8)) for s in range(6)},
    "l1/relu_output": {s: np.maximum(_RNG.normal(size=(4, 8)), 0) for s in range(6)},
    "l1/tanh_input": {s: _RNG.normal(size=(4, 8)) for s in range(6)},
    "Net_input_0": {s: _RNG.normal(size=(2, 3, 4, 4)) for s in range(6)},
    "embedding0_input_0": {s: _RNG.integers(0, 5, size=(2, 6)) for s in range(6)},
    "labels": {s: _RNG.integers(0, 3, size=10) for s in range(6)},
    "predictions": {s: _RNG.integers(0, 3, size=10) for s in range(6)},
    "trees/Node": {s: np.arange(7) for s in range(6)},
    "feature_importance/weight/f0": {s: 0.5 for s in range(6)},
    "feature_importance/weight/f1": {s: 0.5 for s in range(6)},
}
_COLLS = {
    "gradients": ["gradient/w"],
    "weights": ["w"],
    "losses": ["loss"],
    "labels": ["labels"],
    "predictions": ["predictions"],
}
_HITS = {
    "VanishingGradient": ({}, None),
    "ExplodingTensor": ({"tensor_regex": "^w$"}, {"tensor_regex": "^nope$"}),
    "AllZero": ({"tensor_regex": "^w$"}, {"collection_names": "nope"}),
    "TensorVariance": ({"tensor_regex": "^w$", "max_threshold": "1e9"}, {"tensor_regex": "nope", "max_threshold": "1"}),
    "WeightUpdateRatio": ({}, None),
    "UnchangedTensor": ({"tensor_regex": "^w$"}, {"tensor_regex": "^nope$"}),
    "PoorWeightInitialization": ({}, None),
    "LossNotDecreasing": ({"num_steps": "2"}, {"tensor_regex": "nope", "use_losses_collection": "False"}),
    "Overfit": ({"tensor_regex": "rmse"}, {"tensor_regex": "nope"}),
    "Overtraining": ({}, None),
    "DeadRelu": ({}, {"tensor_regex": "nope"}),
    "SaturatedActivation": ({}, {"tensor_regex": "nope"}),
    "CheckInputImages": ({"regex": "^Net_input_0$", "threshold_samples": "10"}, {"regex": "^nope$"}),
    "NLPSequenceRatio": ({"token_thresholds_percent": "100"}, {"tensor_regex": "nope"}),
    "Confusion": ({"min_diag": "0", "max_off_diag": "1"}, {"labels": "nope", "labels_collection": "nope"}),
    "ClassImbalance": ({"samples": "10"}, {"labels_regex": "^nope$"}),
    "TreeDepth": ({"depth": "10"}, None),
    "FeatureImportanceOverweight": ({"threshold": "1"}, {"tensor_regex": "nope"}),
}


@pytest.fixture(scope="module")
def every_kind(tmp_path_factory):
    return write_trial(tmp_path_factory.mktemp("kinds") / "t", _SERIES, _COLLS)


@pytest.mark.parametrize("name", sorted(_HITS))
def test_every_builtin_rule_counts_what_it_judged(every_kind, name):
    hit, miss = _HITS[name]
    run = invoke_rule(get_rule_class(name)(create_trial(every_kind), **hit))
    assert run.tensors_evaluated > 0, run
    if miss is not None:
        run = invoke_rule(get_rule_class(name)(create_trial(every_kind), **miss))
        assert run.fired == [] and run.tensors_evaluated == 0, run
