"""``smdebug run`` end to end on an unmodified PyTorch script: the hook attached without code change,
rule jobs beside training, their statuses, the StopTraining action, the end of training."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import smdebug
from smdebug.trials import create_trial
from smdtest import run_json

pytest.importorskip("torch")

SCRIPTS = Path(__file__).parent / "scripts"
MLP = str(SCRIPTS / "mlp.py")
EVERY_STEP = ["weights:save_interval=1", "gradients:save_interval=1", "losses:save_interval=1"]


def _launch(tmp_path, args, *, name="run", rules=(), actions=(), collections=EVERY_STEP, zcc=True, **kw):
    lines = []
    result = smdebug.launch(
        [sys.executable, MLP, *args],
        run_dir=str(tmp_path / name),
        rules=rules,
        actions=actions,
        collection_configs=collections,
        zcc=zcc,
        name=name,
        echo=lines.append,
        **kw,
    )
    return result, lines


def _status(result) -> dict:
    return json.loads(Path(result.run_dir, "status.json").read_text())


def _rule(result, name) -> dict:
    (r,) = [r for r in result.rules if r["RuleConfigurationName"] == name]
    return r


def test_unmodified_script_leaves_the_names_of_the_explicitly_hooked_one(tmp_path):
    zcc, _ = _launch(tmp_path, ["--steps", "4"], name="zcc")
    explicit, _ = _launch(tmp_path, ["--steps", "4", "--explicit"], name="explicit", zcc=False)
    assert zcc.exit_code == explicit.exit_code == 0
    a, b = create_trial(zcc.out_dir), create_trial(explicit.out_dir)
    assert a.tensor_names() == b.tensor_names()
    assert "Net_fc1.weight" in a.tensor_names() and "loss_output_0" in a.tensor_names(collection="losses")
    assert a.steps() == b.steps() == [0, 1, 2, 3]
    assert a.tensor("loss_output_0").value(2) == pytest.approx(b.tensor("loss_output_0").value(2), rel=1e-5)


def test_the_zero_code_change_trial_is_read_by_smdebug_1034(tmp_path, peer):
    result, _ = _launch(tmp_path, ["--steps", "3"])
    got = run_json(peer, SCRIPTS / "peer_read.py", result.out_dir)
    ours = create_trial(result.out_dir)
    assert got["steps"] == ours.steps() == [0, 1, 2]
    assert got["names"] == sorted(ours.tensor_names())
    assert got["loss"] == pytest.approx(float(ours.tensor("loss_output_0").value(2)), rel=1e-6)


def test_the_script_that_makes_its_own_hook_keeps_it(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "smdebug.cli",
            "run",
            "--run-dir",
            str(tmp_path / "r"),
            *[f"--collection={c}" for c in EVERY_STEP],
            "--",
            sys.executable,
            MLP,
            "--steps",
            "3",
            "--explicit",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "attached to" not in proc.stderr  # no second hook, and the run says so
    assert "smdebug: the script made its own hook, saving to " in proc.stderr
    assert "attached none\n" in proc.stderr  # it saves where the rules read: nothing more to say
    trial = create_trial(str(tmp_path / "r" / "debug-output"))
    assert trial.steps() == [0, 1, 2] and trial.workers() == ["worker_0"]


def test_nan_at_step_k_stops_the_job_within_three_steps(tmp_path):
    k = 8
    result, lines = _launch(
        tmp_path,
        ["--steps", "300", "--nan-at", str(k), "--step-time", "0.05"],
        rules=["exploding_tensor"],
        actions=["stop"],
        stop_grace=60,
    )
    rule = _rule(result, "ExplodingTensor")
    assert rule["RuleEvaluationStatus"] == "IssuesFound"
    details = rule["StatusDetails"]
    assert details.startswith(
        "RuleEvaluationConditionMet: Evaluation of the rule ExplodingTensor at step "
        f"{k} resulted in the condition being met: "
    )  # then what it found, and where
    assert details.rstrip().endswith(f", at step {k} (TRAIN step {k}, worker_0)")
    assert rule["Finding"]["step"] == k and rule["Finding"]["tensors"] and rule["Finding"]["worker"] == "worker_0"
    assert result.status == "Stopped" and result.stop_step == k
    assert result.issues == ["ExplodingTensor"]
    trial = create_trial(result.out_dir)
    steps = trial.steps()
    assert steps == list(range(steps[-1] + 1))  # every step up to the stop is there
    assert k <= steps[-1] <= k + 3
    for s in steps:  # and readable
        trial.tensor("gradient/Net_fc1.weight").value(s)
    status = _status(result)
    assert status["TrainingJobStatus"] == "Stopped" and status["StopRequest"] == {"Rule": "ExplodingTensor", "Step": k}
    events = [json.loads(line) for line in Path(result.run_dir, "events.jsonl").read_text().splitlines()]
    assert [e["detail"]["TrainingJobStatus"] for e in events][-1] == "Stopped"
    assert any(e["detail"]["TrainingJobStatus"] == "Stopping" for e in events)
    report = json.loads(Path(result.run_dir, "rule-output", "ExplodingTensor", "report.json").read_text())
    assert report["FiredAtStep"] == k


@pytest.mark.parametrize("ignore, signal_number", [(["--ignore-stop"], 15), (["--ignore-stop", "--ignore-sigterm"], 9)])
def test_a_job_that_does_not_stop_gets_sigterm_then_sigkill(tmp_path, ignore, signal_number):
    result, lines = _launch(
        tmp_path,
        ["--steps", "3000", "--nan-at", "2", "--step-time", "0.02", *ignore],
        rules=["exploding_tensor"],
        actions=["stop"],
        stop_grace=0.5,
        term_grace=0.5,
    )
    assert result.status == "Stopped" and result.stop_step == 2
    assert result.exit_code == 128 + signal_number
    assert any("sending SIGTERM" in line for line in lines)
    assert any("sending SIGKILL" in line for line in lines) == (signal_number == 9)


def test_healthy_run_ends_no_issues_found(tmp_path):
    result, lines = _launch(tmp_path, ["--steps", "5"], rules=["exploding_tensor"], actions=["stop"])
    assert result.exit_code == 0 and result.status == "Completed"
    rule = _rule(result, "ExplodingTensor")
    assert rule["RuleEvaluationStatus"] == "NoIssuesFound"
    assert rule["StatusDetails"].startswith("Evaluated 5 steps (0..4)")
    assert Path(result.out_dir, "training_job_end.ts").exists()


def test_a_rule_that_judged_no_tensor_ends_error_not_no_issues_found(tmp_path):
    # the selection matches nothing (a misspelt collection): "NoIssuesFound" would be a silent wrong answer
    result, _ = _launch(tmp_path, ["--steps", "4"], rules=["exploding_tensor:collection_names=gradient"])
    assert result.exit_code == 0
    rule = _rule(result, "ExplodingTensor")
    assert rule["RuleEvaluationStatus"] == "Error"
    assert rule["StatusDetails"].startswith("ClientError: ExplodingTensor: evaluated no tensor in 4 steps")


def test_a_rule_that_raises_ends_error_and_training_goes_on(tmp_path):
    rule_file = f"{SCRIPTS / 'raising_rule.py'}:Broken:threshold=2"
    lines = []
    spec_result = smdebug.launch(
        [sys.executable, MLP, "--steps", "6"],
        run_dir=str(tmp_path / "r"),
        collection_configs=EVERY_STEP,
        echo=lines.append,
        rules=[
            {
                "RuleConfigurationName": "Broken",
                "RuleEvaluatorImage": "x/sagemaker-debugger-rule-evaluator:latest",
                "RuleParameters": {
                    "source_s3_uri": rule_file.split(":")[0],
                    "rule_to_invoke": "Broken",
                    "threshold": "2",
                },
            }
        ],
    )
    assert spec_result.exit_code == 0 and spec_result.status == "Completed"
    rule = _rule(spec_result, "Broken")
    assert rule["RuleEvaluationStatus"] == "Error"
    assert rule["StatusDetails"].startswith("ClientError: ZeroDivisionError: broken at step 0\nTraceback")
    assert len(rule["StatusDetails"]) <= 1024
    assert create_trial(spec_result.out_dir).steps() == list(range(6))


def test_kill_9_still_ends_every_rule_job(tmp_path):
    result, _ = _launch(tmp_path, ["--steps", "50", "--kill-at", "3"], rules=["exploding_tensor", "all_zero"])
    assert result.exit_code == 128 + 9 and result.status == "Failed"
    assert {r["RuleEvaluationStatus"] for r in result.rules} <= {"NoIssuesFound", "Error"}
    assert all(r["RuleEvaluationStatus"] != "InProgress" for r in _status(result)["DebugRuleEvaluationStatuses"])


def test_use_smdebug_0_wins(tmp_path, monkeypatch):
    monkeypatch.setenv("USE_SMDEBUG", "0")
    result, _ = _launch(tmp_path, ["--steps", "2"], rules=["exploding_tensor"])
    assert result.exit_code == 0
    assert os.listdir(result.out_dir) == ["training_job_end.ts"]  # no hook wrote anything
    rule = _rule(result, "ExplodingTensor")
    assert rule["RuleEvaluationStatus"] == "Error" and "No debugging data was saved" in rule["StatusDetails"]


def test_bad_configuration_fails_before_the_job_starts(tmp_path):
    marker = tmp_path / "started"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "smdebug.cli",
            "run",
            "--run-dir",
            str(tmp_path / "r"),
            "--rule",
            "exploding_tensor:only_nan=maybe",
            "--",
            sys.executable,
            "-c",
            f"open({str(marker)!r}, 'w')",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "ExplodingTensor" in proc.stderr and "only_nan" in proc.stderr
    assert not marker.exists()


def test_interrupting_the_launcher_stops_job_and_rules(tmp_path):
    import signal

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "smdebug.cli",
            "run",
            "--run-dir",
            str(tmp_path / "r"),
            "--rule",
            "exploding_tensor",
            *[f"--collection={c}" for c in EVERY_STEP],
            "--",
            sys.executable,
            MLP,
            "--steps",
            "3000",
            "--step-time",
            "0.02",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    for line in proc.stdout:  # the job's own output: it is training
        if line.startswith("last step 3"):
            break
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    status = json.loads(Path(tmp_path, "r", "status.json").read_text())
    assert status["TrainingJobStatus"] == "Stopped", err[-2000:]
    assert [r["RuleEvaluationStatus"] for r in status["DebugRuleEvaluationStatuses"]] == ["Stopped"]
    assert proc.returncode != 0
    assert 3 <= create_trial(str(tmp_path / "r" / "debug-output")).steps()[-1] < 3000 - 1


class _SdkRule:
    """Shaped like Rule.sagemaker(rule_configs.exploding_tensor(), rule_parameters={"tensor_regex": ".*"})."""

    collection_configs = None
    actions = None

    def to_debugger_rule_config_dict(self):
        return {
            "RuleConfigurationName": "ExplodingTensor",
            "RuleEvaluatorImage": "DEFAULT_RULE_EVALUATOR_IMAGE",
            "RuleParameters": {"rule_to_invoke": "ExplodingTensor", "tensor_regex": ".*"},
        }


_RULE_FORMS = {
    "flag": {"rules": ["exploding_tensor:tensor_regex=.*"]},
    "rule_configs": {
        "rules": [
            {
                "DebugRuleConfiguration": {
                    "RuleConfigurationName": "ExplodingTensor",
                    "RuleParameters": {"rule_to_invoke": "ExplodingTensor", "tensor_regex": ".*"},
                }
            }
        ]
    },
    "sdk": {"rules": [_SdkRule()]},
    "job": {
        "job": {
            "DebugRuleConfigurations": [
                {
                    "RuleConfigurationName": "ExplodingTensor",
                    "RuleEvaluatorImage": "503895931360.dkr.ecr.us-east-1.amazonaws.com/sagemaker-debugger-rules:latest",
                    "RuleParameters": {"rule_to_invoke": "ExplodingTensor", "tensor_regex": ".*"},
                }
            ]
        }
    },
}


@pytest.mark.parametrize("form", sorted(_RULE_FORMS))
def test_the_same_rule_four_ways_gives_the_same_result(tmp_path, form):
    lines = []
    result = smdebug.launch(
        [sys.executable, MLP, "--steps", "300", "--nan-at", "3", "--step-time", "0.03"],
        run_dir=str(tmp_path / form),
        collection_configs=EVERY_STEP,
        actions=["stop"],
        echo=lines.append,
        **_RULE_FORMS[form],
    )
    config = json.loads(Path(result.run_dir, "config", "debughookconfig.json").read_text())
    assert config["CollectionConfigurations"] == [
        {"CollectionName": c.split(":")[0], "CollectionParameters": {"save_interval": "1"}} for c in EVERY_STEP
    ]
    assert result.status == "Stopped" and result.stop_step == 3
    assert _rule(result, "ExplodingTensor")["StatusDetails"].startswith(
        "RuleEvaluationConditionMet: Evaluation of the rule ExplodingTensor at step 3 resulted"
    )


def test_a_script_hook_saving_elsewhere_is_told_the_rules_read_another_folder(tmp_path):
    script = (
        "import torch, smdebug.pytorch as smd\n"
        f"h = smd.Hook(out_dir={str(tmp_path / 'mine')!r})\n"
        "m = torch.nn.Linear(2, 2)\nh.register_module(m)\nm(torch.ones(1, 2))\nh.close()\n"
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "smdebug.cli",
            "run",
            "--run-dir",
            str(tmp_path / "r"),
            "--",
            sys.executable,
            "-c",
            script,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (
        f"the script made its own hook, saving to {tmp_path / 'mine'}: smdebug run attached none; the run's "
        f"rules read {tmp_path / 'r' / 'debug-output'}, not that folder" in proc.stderr
    ), proc.stderr[-3000:]
