"""``smdebug run`` and ``smdebug.launch()`` check every input with the code the job would use, before
the job starts: one line naming the flag and what is wrong, exit status 2, the command never run."""

from __future__ import annotations

import re
import sys

import pytest

import smdebug
from smdebug.cli import main
from smdebug.launch import LaunchConfigError, build_spec


def _run(capsys, tmp_path, *flags: str) -> tuple[int, str]:
    marker = tmp_path / "ran"
    code = main(
        [
            "run",
            "--run-dir",
            str(tmp_path / "r"),
            *flags,
            "--",
            sys.executable,
            "-c",
            f"open({str(marker)!r}, 'w').close()",
            "--api-key",
            "s3cr3t",
        ]
    )
    err = capsys.readouterr().err
    assert not marker.exists(), "the job started"
    return code, err


@pytest.mark.parametrize(
    "flags, says",
    [
        (
            ["--collection", "weights:save_interval=abc"],
            "smdebug run: --collection weights:save_interval=abc: save_interval='abc' in CollectionParameters of "
            "collection 'weights': expected an integer",
        ),
        (
            ["--collection", "weigths"],
            "smdebug run: --collection weigths: no collection 'weigths': did you mean weights?",
        ),
        (
            ["--collection", "weights:include_regex=("],
            "smdebug run: --collection weights:include_regex=(: include_regex",
        ),
        (["--collection", "weights:save_interval=-5"], "save_interval=-5 must be positive"),
        (
            ["--collection", "weights:save_intervl=5"],
            "smdebug run: --collection weights:save_intervl=5: unknown parameter 'save_intervl' (did you mean save_interval?)",
        ),
        (["--collection", "gradients:reductions=l2"], "l2 is a norm: norms=['l2'], or 'l2_norm'"),
        (["--hook-param", "save_interval=0"], "smdebug run: --hook-param: save_interval=0 must be positive"),
        (["--hook-param", "save_interval=abc"], "expected an integer"),
        (
            ["--rule", "exploding_tensor:treshold=1"],
            "smdebug run: --rule exploding_tensor:treshold=1: rule ExplodingTensor has no parameter 'treshold'",
        ),
        (["--rule", "loss_not_decreasing:num_step=3"], "has no parameter 'num_step' (did you mean num_steps?)"),
        (
            ["--rule", "exploding_tensr"],
            "a rule of your own goes in --rule-file FILE.py:CLASS); did you mean exploding_tensor?",
        ),
        (["--rule", "exploding_tensor", "--stop-grace", "nan"], "smdebug run: --stop-grace 'nan': expected a finite"),
        (["--rule", "exploding_tensor", "--stop-grace", "-1"], "--stop-grace '-1': expected a finite number"),
        (["--rule", "exploding_tensor", "--rule-timeout", "-5"], "--rule-timeout '-5': expected a finite number"),
        (["--rule", "exploding_tensor", "--term-grace", "soon"], "--term-grace 'soon': expected a number of seconds"),
    ],
)
def test_bad_input_is_one_line_before_the_job_starts(capsys, tmp_path, flags, says):
    code, err = _run(capsys, tmp_path, *flags)
    assert code == 2
    assert says in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert "s3cr3t" not in err and "['--'" not in err  # the command (and any secret in it) is not echoed


def test_a_request_file_with_a_bad_collection_names_the_file(capsys, tmp_path):
    job = tmp_path / "job.json"
    job.write_text(
        '{"DebugHookConfig": {"CollectionConfigurations": '
        '[{"CollectionName": "weights", "CollectionParameters": {"save_interval": "abc"}}]}}'
    )
    code, err = _run(capsys, tmp_path, "--job", str(job))
    assert code == 2 and f"CollectionConfigurations[0] of DebugHookConfig of {job}" in err, err


def test_launch_reads_a_lone_string_as_one_item(tmp_path):
    with pytest.raises(LaunchConfigError, match="no collection 'weigths'"):
        smdebug.launch([sys.executable, "-c", "pass"], run_dir=str(tmp_path / "r"), collection_configs="weigths")
    with pytest.raises(LaunchConfigError, match="'exploding_tensr' is no built-in rule"):
        smdebug.launch([sys.executable, "-c", "pass"], run_dir=str(tmp_path / "r"), rules="exploding_tensr")
    with pytest.raises(LaunchConfigError, match="stop_grace 'abc'"):
        smdebug.launch([sys.executable, "-c", "pass"], run_dir=str(tmp_path / "r"), stop_grace="abc")
    spec = build_spec(name="x", out_dir=str(tmp_path / "o"), collections=["weights"], rules=["exploding_tensor"])
    assert [c["CollectionName"] for c in spec.collections][:1] == ["weights"]


def test_every_rule_configs_default_passes_the_checks(tmp_path):
    from smdebug.launch.catalog import RULE_CONFIGS
    from smdebug.launch.rule_job import check_rule

    for fn in RULE_CONFIGS:
        spec = build_spec(name="x", out_dir=str(tmp_path / "o"), rules=[fn])
        for r in spec.rules:
            check_rule(r)


def test_an_output_folder_that_cannot_be_written_is_refused(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, err = _run(capsys, tmp_path, "--out-dir", str(blocker / "trial"))
    assert code == 2 and f"smdebug run: --out-dir {blocker / 'trial'}: {blocker} is not a folder" in err, err


@pytest.mark.parametrize("flag", ["--stop-grace", "--term-grace", "--rule-timeout"])
def test_the_command_line_and_the_api_name_their_own_argument(capsys, tmp_path, flag):
    code, err = _run(capsys, tmp_path, flag, "soon")
    assert code == 2 and f"smdebug run: {flag} 'soon': expected a number of seconds" in err, err
    assert not (tmp_path / "ran").exists()
    argument = flag[2:].replace("-", "_")
    with pytest.raises(LaunchConfigError, match=f"^{argument} 'soon': expected a number of seconds"):
        smdebug.launch([sys.executable, "-c", "pass"], run_dir=str(tmp_path / "r"), **{argument: "soon"})
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(LaunchConfigError, match=re.escape(f"out_dir {blocker / 'trial'}: {blocker} is not a folder")):
        smdebug.launch([sys.executable, "-c", "pass"], run_dir=str(tmp_path / "r"), out_dir=str(blocker / "trial"))


def test_configuration_files_are_bounded(capsys, tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    code, err = _run(capsys, tmp_path, "--config", str(deep))
    assert code == 2 and f"hook config {deep}: JSON nested too deeply" in err, err
    code, err = _run(capsys, tmp_path, "--config", "/dev/zero")
    assert code == 2 and "hook config /dev/zero is not a regular file" in err, err
    code, err = _run(capsys, tmp_path, "--profiler-config", str(deep))
    assert code == 2 and "JSON nested too deeply" in err, err


def test_a_hook_parameter_given_twice_is_refused(capsys, tmp_path):
    code, err = _run(capsys, tmp_path, "--hook-param", "save_interval=5", "--hook-param", "save_interval=50")
    assert code == 2 and "save_interval is given twice ('5' and '50')" in err, err


def test_a_profiling_interval_beyond_sagemakers_is_refused(capsys, tmp_path):
    code, err = _run(capsys, tmp_path, "--profile-interval-ms", str(10**12))
    assert code == 2 and "must be <= 60000" in err, err


@pytest.mark.parametrize("name", ["../../x", "a/b", "-x", "x" * 64, ""])
def test_a_run_name_that_is_no_job_name_is_refused(capsys, tmp_path, name):
    code, err = _run(capsys, tmp_path, f"--name={name}")
    assert code == 2 and f"smdebug run: --name {name!r}: a job name is 1 to 63 letters" in err, err
    assert not (tmp_path / "r").exists()


def test_a_rule_file_that_exits_at_import_is_refused(capsys, tmp_path):
    rules = tmp_path / "rules.py"
    rules.write_text("import sys\nsys.exit(7)\n")
    code, err = _run(capsys, tmp_path, "--rule-file", f"{rules}:MyRule")
    assert code == 2 and f"{rules} fails to load: calls sys.exit(7)" in err, err
