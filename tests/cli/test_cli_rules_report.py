"""`smdebug rules` and `smdebug report` on real PyTorch runs: firings, exit codes, the HTML page."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from chromium import needs_chromium
from smdebug.cli import main
from smdebug.exceptions import RuleEvaluationConditionMet
from smdebug.rules import invoke_rule
from smdebug.rules.builtin import get_rule_class
from smdebug.trials import create_trial
from smdtest import FIXTURES


def first_firing(path, name, **params):
    rule = get_rule_class(name)(create_trial(path), **params)
    try:
        invoke_rule(rule, raise_eval_cond=True)
    except RuleEvaluationConditionMet as exc:
        return exc.step
    return None


def test_rules_prints_firings_and_exits_1(capsys, flat_trial):
    want = first_firing(flat_trial, "LossNotDecreasing", num_steps="3", mode="TRAIN")
    assert want is not None
    code = main(
        [
            "rules",
            flat_trial,
            "--rule",
            "LossNotDecreasing",
            "--param",
            "num_steps=3",
            "--param",
            "mode=TRAIN",
            "--rule",
            "DeadRelu",
        ]
    )
    out = capsys.readouterr().out
    assert code == 1
    fired = [line for line in out.splitlines() if line.startswith("FIRED")]
    assert len(fired) == 1 and "LossNotDecreasing" in fired[0] and f"step {want} " in fired[0]
    assert f"LossNotDecreasing: fired at step {want}" in out
    # the trial saved no ReLU output: DeadRelu looked at nothing and says so; a firing wins the exit status
    assert "DeadRelu: evaluated no tensor" in out and "'.*relu_output'" in out
    assert "DeadRelu: no issue found" not in out


def test_rules_json_and_step_range(capsys, flat_trial):
    """Steps before the first firing: fewer than num_steps, so no loss was ever compared: the rule
    evaluated no tensor, which is exit 2, not a pass."""
    want = first_firing(flat_trial, "LossNotDecreasing", num_steps="3", mode="TRAIN")
    assert (
        main(
            [
                "rules",
                flat_trial,
                "--rule",
                "LossNotDecreasing",
                "--param",
                "num_steps=3",
                "--param",
                "mode=TRAIN",
                "--end-step",
                str(want),
                "--json",
            ]
        )
        == 2
    )
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    reason = events[0].pop("reason")
    assert reason.startswith("LossNotDecreasing: evaluated no tensor")
    assert events == [
        {
            "event": "summary",
            "rule": "LossNotDecreasing",
            "fired": False,
            "steps": [],
            "first": None,
            "evaluated": len([s for s in create_trial(flat_trial).steps() if s < want]),
            "tensors_evaluated": 0,
            "evaluated_nothing": True,
        }
    ]
    assert (
        main(
            [
                "rules",
                flat_trial,
                "--rule",
                "LossNotDecreasing",
                "--param",
                "num_steps=3",
                "--param",
                "mode=TRAIN",
                "--end-step",
                str(want + 1),
                "--json",
            ]
        )
        == 1
    )


def test_rules_none_fired_exits_0(capsys, digits_trial):
    assert (
        main(
            [
                "rules",
                digits_trial,
                "--rule",
                "ExplodingTensor",
                "--rule",
                "LossNotDecreasing",
                "--param",
                "mode=TRAIN",
                "--param",
                "num_steps=1",
                "--param",
                "diff_percent=0",
            ]
        )
        == 0
    )
    assert "ExplodingTensor: no issue found" in capsys.readouterr().out


def test_rules_that_could_compare_nothing_exits_2(capsys, digits_trial):
    """The default mode is EVAL; the run has 3 EVAL steps, so num_steps=3 never compares a loss."""
    assert main(["rules", digits_trial, "--rule", "LossNotDecreasing", "--param", "num_steps=3"]) == 2
    assert "LossNotDecreasing: evaluated no tensor in " in capsys.readouterr().out


@pytest.mark.parametrize(
    "extra, needle",
    [
        (["--rule", "NoSuchRule"], "no such built-in rule"),
        (["--rule", "LossNotDecreasing", "--param", "bogus=1"], "'bogus': unknown parameter"),
        (["--rule", "LossNotDecreasing", "--param", "num_steps=abc"], "'num_steps': expected a number"),
        (["--rule", "DeadRelu", "--param", "tensor_regex=(open"], "'tensor_regex'"),
    ],
)
def test_rules_bad_input_exits_2(digits_trial, extra, needle):
    proc = subprocess.run(
        [sys.executable, "-m", "smdebug", "rules", digits_trial, *extra], capture_output=True, text=True
    )
    assert proc.returncode == 2 and needle in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_param_before_rule_is_a_usage_error(digits_trial):
    proc = subprocess.run(
        [sys.executable, "-m", "smdebug", "rules", digits_trial, "--param", "a=1", "--rule", "DeadRelu"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "--param comes after the --rule" in proc.stderr


def test_report_lists_applicable_rules(tmp_path, flat_trial):
    out = tmp_path / "r.html"
    assert main(["report", flat_trial, "-o", str(out)]) == 0
    page = out.read_text()
    assert "http://" not in page and "https://" not in page and "<script src" not in page
    assert page.count("<script") == 1  # the tables' sorting and filtering, inline
    # losses, gradient norms, weight norms (each linear/log x raw/smoothed), then the histograms of
    # the weights and gradients saved whole
    assert page.count("data:image/png;base64,") == 3 * 4 + 2
    assert "<td>LossNotDecreasing</td><td class='fired'>fired</td>" in page


@needs_chromium
def test_report_opens_clean_in_chromium(tmp_path, chromium, flat_trial):
    out = tmp_path / "report.html"
    assert main(["report", flat_trial, "-o", str(out)]) == 0
    state = chromium.open(out.as_uri())
    assert chromium.problems() == []
    assert state["sections"] == [
        "summary",
        "nonfinite",
        "losses",
        "gradients",
        "weights",
        "histograms",
        "rules",
        "collections",
        "saved",
    ]
    shown = {(i["section"], i["alt"]) for i in state["images"] if i["complete"] and i["width"] > 300 and i["visible"]}
    assert shown == {
        ("losses", "losses"),
        ("gradients", "gradients"),
        ("weights", "weights"),
        ("histograms", "weights histograms"),
        ("histograms", "gradients histograms"),
    }
    want = first_firing(flat_trial, "LossNotDecreasing", mode="TRAIN")
    assert f"LossNotDecreasing\tfired\t{want}" in state["text"]
    assert "gradient/Sequential_0.weight" in state["text"]


def test_report_of_a_fixture_without_rules(tmp_path):
    out = tmp_path / "f.html"
    assert main(["report", str(FIXTURES / "reductions_only"), "-o", str(out), "--no-rules"]) == 0
    page = out.read_text()
    assert "id='rules'" not in page and "grad/x" in page


def test_report_unwritable_output(tmp_path, digits_trial):
    proc = subprocess.run(
        [sys.executable, "-m", "smdebug", "report", digits_trial, "-o", "/nonexistent-dir/r.html"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "does not exist" in proc.stderr and "Traceback" not in proc.stderr


def test_report_says_when_a_rule_evaluated_nothing(tmp_path, flat_trial, monkeypatch):
    # a rule whose selection matched nothing must not show as a clean "no issue" row
    from smdebug.cli import report

    monkeypatch.setattr(
        report,
        "applicable_rules",
        lambda trial: [
            ("ExplodingTensor", {"collection_names": "gradient"}),
            ("ExplodingTensor", {"collection_names": "gradients"}),
        ],
    )
    rows = report.run_applicable_rules(create_trial(flat_trial))
    assert [r["status"] for r in rows] == ["evaluated nothing", "no issue"]
    assert "evaluated no tensor" in rows[0]["message"]
    out = tmp_path / "r.html"
    assert main(["report", flat_trial, "-o", str(out)]) == 0
    assert "<td class='error'>evaluated nothing</td>" in out.read_text()
