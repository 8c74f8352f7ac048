"""`smdebug profile info|timeline|rules` and `smdebug report --profile` on a profile written by
part 1's writers: output, --json, exit codes, one-line errors, the HTML page in Chromium."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chromium import needs_chromium
from smdebug.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "profiler" / "view"))
from synth import STALL_STEP, write_profile  # noqa: E402
from trace_check import trace_problems  # noqa: E402


@pytest.fixture
def profile(tmp_path):
    root = tmp_path / "profile"
    write_profile(root)
    return str(root)


def test_info_text_and_json(capsys, profile):
    assert main(["profile", "info", profile]) == 0
    out = capsys.readouterr().out
    assert "node algo-1: 6 system metrics, 192 samples (2 CPUs, 1 GPU)" in out
    assert (
        "process algo-1-0: 60 framework events (Backward 12, DataLoaderIter 12, Forward 12, Optimizer 12, "
        "Step:ModeKeys.TRAIN 12)" in out
    )
    assert "TRAIN steps: 12 (0..11), mean 133.3 ms, max 500.0 ms" in out
    assert "detailed profiling: 1 torch.profiler trace(s)" in out
    assert main(["profile", "info", profile, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["steps"]["TRAIN"]["steps"] == 12 and doc["nodes"]["algo-1"]["devices"] == {"cpu": 2, "gpu": 1}
    assert doc["job_finished"] is False and len(doc["detailed_profiles"]) == 1


def test_timeline_writes_a_valid_trace(capsys, profile, tmp_path):
    out = tmp_path / "trace.json"
    assert main(["profile", "timeline", profile, "-o", str(out)]) == 0
    assert f"wrote {out} (" in capsys.readouterr().out
    trace = json.loads(out.read_text())
    assert trace_problems(trace) == [] and trace["otherData"]["node"] == "algo-1"
    assert any(e.get("cat") == "cpu_op" for e in trace["traceEvents"])  # torch.profiler's trace is in
    # a window in seconds after the first record, and --json
    assert (
        main(
            [
                "profile",
                "timeline",
                profile,
                "-o",
                str(out),
                "--start",
                "1.65",
                "--end",
                "2.25",
                "--max-points",
                "2",
                "--json",
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    written = json.loads(captured.out)["written"]
    assert [w["node"] for w in written] == ["algo-1"] and written[0]["downsampled"]
    assert "averaged down to 2 points each (--max-points)" in captured.err
    steps = {
        int(e["args"]["step_num"])
        for e in json.loads(out.read_text())["traceEvents"]
        if e.get("cat") == "Step:ModeKeys.TRAIN"
    }
    assert steps == {STALL_STEP - 1, STALL_STEP, STALL_STEP + 1}  # 1.7-2.2 s, and its neighbours' tail and head


@pytest.mark.parametrize(
    "args, needle",
    [
        (["profile", "info", "/no/such/folder"], "smdebug profile: /no/such/folder: no such folder"),
        (["profile", "timeline", "{empty}", "-o", "{tmp}/t.json"], "holds no profiler data"),
        (["profile", "timeline", "{profile}", "-o", "{tmp}/t.json", "--node", "algo-9"], "no node 'algo-9'"),
        (
            ["profile", "timeline", "{profile}", "-o", "{tmp}/t.json", "--start", "3", "--end", "1"],
            "--start 3 --end 1: the end must be after the start",
        ),
        (["profile", "timeline", "{profile}", "-o", "{tmp}/t.json", "--max-points", "0"], "--max-points 0"),
        (["profile", "timeline", "{profile}", "-o", "{tmp}/no/t.json"], "does not exist"),
        (["report", "--profile", "{empty}", "-o", "{tmp}/r.html"], "holds no profiler data"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(profile, tmp_path, args, needle):
    (tmp_path / "empty").mkdir()
    args = [a.format(profile=profile, tmp=tmp_path, empty=tmp_path / "empty") for a in args]
    proc = subprocess.run([sys.executable, "-m", "smdebug", *args], capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr
    assert needle in proc.stderr and len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


@needs_chromium
def test_report_profile_without_rules_in_chromium(capsys, profile, tmp_path, chromium):
    out = tmp_path / "report.html"
    assert main(["report", "--profile", profile, "-o", str(out), "--no-rules"]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    state = chromium.open(f"file://{out}")
    assert chromium.problems() == []
    assert state["sections"] == [
        "summary",
        "rules",
        "step-time",
        "phases",
        "slowest-steps",
        "timeline",
        "dataloader",
        "system",
        "heatmaps",
    ]
    assert all(i["complete"] and i["width"] > 0 for i in state["images"])
    assert "No profiler rule was run for this report" in state["text"]


def test_rules_fire_exit_1_and_say_what_to_do(capsys, tmp_path):
    """121 steps (StepOutlier judges after 100), one stalled: with n_outliers=0 it fires on it."""
    root = str(tmp_path / "p")
    write_profile(root, steps=121)
    code = main(["profile", "rules", root, "--rule", "StepOutlier", "--param", "StepOutlier.n_outliers=0"])
    captured = capsys.readouterr()
    assert code == 1, captured
    assert "has no end marker (the job may still run): judging what was written so far" in captured.err
    assert captured.out.startswith("FIRED StepOutlier: fired (1 time)")
    assert "  what to do: Look at what ran in the slow steps" in captured.out
    assert (
        main(["profile", "rules", root, "--rule", "StepOutlier", "--param", "StepOutlier.n_outliers=0", "--json"]) == 1
    )
    doc = json.loads(capsys.readouterr().out)
    assert doc["fired"] == ["StepOutlier"]
    assert doc["rules"]["StepOutlier"]["Details"]["step_details"]["algo-1-0"]["step_numbers"] == [STALL_STEP]


def test_a_named_rule_that_could_not_judge_exits_2(capsys, profile):
    """One GPU: LoadBalancing has nothing to compare; named on the command line, that is not a pass."""
    assert main(["profile", "rules", profile, "--rule", "LoadBalancing"]) == 2
    out = capsys.readouterr().out
    assert "LoadBalancing: not enough data" in out and "0 of 1 rules fired; 1 could not judge: LoadBalancing" in out


@pytest.mark.parametrize(
    "extra, needle",
    [
        (["--rule", "NoSuchRule"], "--rule 'NoSuchRule': no such profiler rule"),
        (["--param", "StepOutlier"], "expected RULE.NAME=VALUE"),
        (
            ["--rule", "StepOutlier", "--param", "CPUBottleneck.threshold=1"],
            "CPUBottleneck is not run (add --rule CPUBottleneck)",
        ),
        (["--param", "Nope.x=1"], "no profiler rule 'Nope'"),
        (["--rule", "StepOutlier", "--param", "StepOutlier.stddev=-1"], "stddev"),
    ],
)
def test_rules_bad_input_exits_2(profile, extra, needle):
    proc = subprocess.run(
        [sys.executable, "-m", "smdebug", "profile", "rules", profile, *extra], capture_output=True, text=True
    )
    assert proc.returncode == 2 and needle in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_timeline_with_rules_shows_where_they_fired(capsys, tmp_path):
    root = str(tmp_path / "p")
    write_profile(root, steps=121, ended=True)
    out = tmp_path / "t.json"
    assert main(["profile", "timeline", root, "-o", str(out), "--rules"]) == 0
    trace = json.loads(out.read_text())
    assert trace_problems(trace) == []
    fired = [e for e in trace["traceEvents"] if e.get("cat") == "rule"]
    # one loader process for two cores: Dataloader fires over the (one) window it judged
    assert [e["name"] for e in fired] == ["Dataloader fired"] and fired[0]["ph"] == "X"
    assert "no end marker" not in capsys.readouterr().err


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_report_profile_to_a_full_device_fails_before_the_rules_run(capsys, profile, monkeypatch):
    import smdebug.cli.profile as cli_profile

    def never(*_a, **_k):
        raise AssertionError("the rules ran before the output was checked")

    monkeypatch.setattr(cli_profile, "run_profiler_rules", never)
    assert main(["report", "--profile", profile, "-o", "/dev/full"]) == 2
    assert capsys.readouterr().err.strip() == "smdebug report: -o /dev/full: cannot write it: No space left on device"


def test_info_never_says_a_negative_recorded_time(tmp_path):
    """A profile whose newest sample is older than its first file's time (empty system files) has
    no recorded time to show, not '-45.2 s'."""
    from types import SimpleNamespace

    import numpy as np

    from smdebug.cli.profile import summarize

    empty = SimpleNamespace(node_id=np.array([]), phase=np.array([]))
    trial = SimpleNamespace(
        path=str(tmp_path),
        first_timestamp=100_000_000,
        get_latest_timestamp=lambda: 54_800_000,
        system_series=lambda: [],
        framework_events=lambda: empty,
        job_finished=lambda: True,
        steps=lambda mode: [],
    )
    assert summarize(trial)["duration_s"] is None


# ---------------------------------------------------------------- report --profile --param, where the profile lies
def test_report_profile_takes_the_rules_parameters(capsys, tmp_path):
    """--param as `profile rules` takes it: with n_outliers=0 StepOutlier fires on the stalled step."""
    root = str(tmp_path / "p")
    write_profile(root, steps=121, ended=True)
    out = tmp_path / "r.html"
    assert main(["report", "--profile", root, "-o", str(out), "--param", "StepOutlier.n_outliers=0"]) == 0
    page = out.read_text()
    assert "Rules that fired: Dataloader, StepOutlier" in page and "n_outliers: 0" in page
    assert main(["report", "--profile", root, "-o", str(out)]) == 0  # the defaults: one stall is no outlier
    assert "Rules that fired: Dataloader (" in out.read_text()
    capsys.readouterr()


@pytest.mark.parametrize(
    "extra, needle",
    [
        (["--param", "StepOutlier"], "expected RULE.NAME=VALUE"),
        (["--param", "Nope.x=1"], "no profiler rule 'Nope'"),
        (["--param", "StepOutlier.stddev=-1"], "stddev"),
        (
            ["--no-rules", "--param", "StepOutlier.stddev=2"],
            "--param StepOutlier.stddev=2: sets a profiler rule's parameter, and --no-rules runs none",
        ),
    ],
)
def test_report_profile_bad_params_exit_2(profile, tmp_path, extra, needle):
    proc = subprocess.run(
        [sys.executable, "-m", "smdebug", "report", "--profile", profile, "-o", str(tmp_path / "r.html"), *extra],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and needle in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("sub", ["profiler", "profiler-output"])
def test_a_folder_holding_the_profile_is_read_there(capsys, tmp_path, sub):
    """An out_dir (its profile in profiler/, ProfilerConfig's default) or a SageMaker job's folder
    (profiler-output/) is read where the profile is, and stderr says so."""
    write_profile(tmp_path / "job" / sub)
    job = str(tmp_path / "job")
    out = tmp_path / "r.html"
    assert main(["report", "--profile", job, "-o", str(out), "--no-rules"]) == 0
    err = capsys.readouterr().err
    assert f"{job} holds no profile itself: reading {job}/{sub}" in err and "Step time over the run" in out.read_text()
    assert main(["profile", "info", job]) == 0
    assert f"profile: {job}/{sub}" in capsys.readouterr().out


def test_report_without_profile_on_a_profile_suggests_profile(tmp_path):
    """`smdebug report PROFILE` (no --profile) fails opening a tensor trial: the helper report's run
    calls says to add --profile, for the profiler's folder and for the out_dir that holds it."""
    from types import SimpleNamespace

    from smdebug.cli.common import CliError
    from smdebug.cli.profile import open_report_trial

    write_profile(tmp_path / "out" / "profiler")
    for path in (tmp_path / "out" / "profiler", tmp_path / "out"):
        args = SimpleNamespace(trial=str(path), output="r.html", param=[])
        with pytest.raises(CliError) as exc:
            open_report_trial(args)
        msg = str(exc.value)
        assert "is not an smdebug trial" in msg and "it holds a profile" in msg
        assert f"add --profile (smdebug report --profile {path} -o r.html)" in msg
    (tmp_path / "empty").mkdir()
    with pytest.raises(CliError) as exc:  # no profile either: the trial's own error, no hint
        open_report_trial(SimpleNamespace(trial=str(tmp_path / "empty"), output="r.html", param=[]))
    assert "--profile" not in str(exc.value)
    with pytest.raises(
        CliError,
        match="--param StepOutlier.stddev=2: sets a profiler rule's parameter, for the "
        r"profiler report \(add --profile\)",
    ):
        open_report_trial(SimpleNamespace(trial=str(tmp_path / "out"), output="r.html", param=["StepOutlier.stddev=2"]))


def test_rules_say_once_that_a_rule_judged_nothing(tmp_path, capsys, caplog):
    """A CPU-only profile: the GPU rules' verdicts say "no GPU data"; the rules' own "evaluated no
    tensor" warnings, a second line for each before the verdicts, are not printed."""
    import logging

    root = str(tmp_path / "p")
    write_profile(root, steps=121, gpus=0, ended=True)
    for cmd in (["profile", "rules", root], ["report", "--profile", root, "-o", str(tmp_path / "r.html")]):
        proc = subprocess.run([sys.executable, "-m", "smdebug", *cmd], capture_output=True, text=True)
        assert proc.returncode in (0, 1), proc.stderr
        assert "evaluated no tensor" not in proc.stderr, proc.stderr
    with caplog.at_level(logging.WARNING, logger="smdebug"):
        assert main(["profile", "rules", root]) == 1  # (Dataloader fires)
    assert "evaluated no tensor" not in caplog.text
    lines = capsys.readouterr().out.splitlines()
    assert (
        "LowGPUUtilization: no GPU data: the profile holds no GPU metrics in 1 windows, so this GPU rule could "
        "not judge anything" in lines
    )
    assert sum(line.startswith(("LowGPUUtilization", "FIRED LowGPUUtilization")) for line in lines) == 1
    assert logging.getLogger("smdebug").filters == []  # (the command's filter is gone after the run)
