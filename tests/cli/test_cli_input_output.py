"""The command line's input checks, strict JSON, skipped tensors, exact integers and messages."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys

import pytest
from oddtrial import BIG, write_odd_trial

from smdebug.cli import main
from smdebug.cli.common import CliError, open_trial
from smdebug.cli.rules import follow_steps
from smdebug.trials import create_trial
from smdtest import FIXTURES


def smdebug(*argv, timeout=120, env=None):
    return subprocess.run(
        [sys.executable, "-m", "smdebug", *map(str, argv)], capture_output=True, text=True, timeout=timeout, env=env
    )


def strict_json(text: str):
    """json.loads that refuses NaN, Infinity and -Infinity (not JSON)."""

    def refuse(name):
        raise ValueError(f"not strict JSON: {name}")

    return json.loads(text, parse_constant=refuse)


class FakeTime:
    """A clock that only ``sleep`` moves; ``sleep`` raises Stop once ``until`` has passed."""

    class Stop(Exception):
        pass

    def __init__(self, until=None):
        self.now, self.until, self.slept = 1000.0, until, 0

    def clock(self):
        return self.now

    def sleep(self, seconds):
        self.slept += 1
        self.now += max(seconds, 0.5)
        if self.until is not None and self.now - 1000.0 > self.until:
            raise FakeTime.Stop


# ---------------------------------------------------------------- watch: check first, then say what it waits for
@pytest.mark.parametrize(
    "extra, needle",
    [
        (["--rule", "NoSuchRule"], "no such built-in rule"),
        (["--rule", "LossNotDecreasing", "--param", "bogus=1"], "'bogus': unknown parameter"),
        (["--rule", "LossNotDecreasing", "--param", "num_steps=abc"], "'num_steps': expected a number"),
        (["--rule", "LossNotDecreasing", "--param", "num_steps=0"], "'num_steps'"),
        (["--rule", "LossNotDecreasing", "--param", "num_steps=3", "--param", "num_steps=4"], "num_steps given twice"),
        (["--rule", "LossNotDecreasing", "--wait", "-1"], "--wait -1: must be at least 0"),
        (["--rule", "LossNotDecreasing", "--wait", "nan"], "--wait nan: expected a finite number"),
        (["--rule", "LossNotDecreasing", "--start-step", "50", "--end-step", "10"], "end step must be after"),
    ],
)
def test_watch_checks_its_input_before_waiting_for_the_job(tmp_path, extra, needle):
    # the job has not started: before, these waited the whole --wait (600 s) before saying anything
    wait = [] if "--wait" in extra else ["--wait", "600"]
    proc = smdebug("watch", tmp_path / "not-started-yet", *extra, *wait, timeout=60)
    assert proc.returncode == 2 and needle in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_watch_says_what_it_waits_for_then_gives_up(tmp_path):
    proc = smdebug(
        "watch",
        tmp_path / "job",
        "--rule",
        "ExplodingTensor",
        "--wait",
        "0.5",
        env={**os.environ, "SMDEBUG_POLL_INTERVAL": "0.05"},
        timeout=60,
    )
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2
    assert len([x for x in lines if x.startswith("waiting for")]) == 1  # once, not once per poll
    assert f"waiting for {tmp_path / 'job'}: its folder" in lines[0]
    assert lines[-1] == f"smdebug watch: {tmp_path / 'job'}: no such folder, after waiting 0.5 s (--wait)"


def test_open_trial_waiting_notices_are_sparse(tmp_path):
    said, t = [], FakeTime()
    with pytest.raises(CliError, match="no such folder, after waiting 600 s"):
        open_trial(str(tmp_path / "job"), wait=600, clock=t.clock, sleep=t.sleep, speak=said.append)
    assert t.slept > 500  # polled every second of (fake) time ...
    assert len(said) == 5  # ... but said so at 0, 30, 90, 210 and 450 s
    assert [int(s.split("(")[-1].split(" s ")[0]) for s in said] == [0, 30, 90, 210, 450]
    assert all("of --wait 600 s" in s for s in said)


def test_open_trial_waits_for_the_collections_file_and_says_so(tmp_path):
    (tmp_path / "job").mkdir()
    said, t = [], FakeTime()
    with pytest.raises(CliError, match="is not an smdebug trial.*after waiting 5 s"):
        open_trial(str(tmp_path / "job"), wait=5, clock=t.clock, sleep=t.sleep, speak=said.append)
    assert len(said) == 1 and "its collections file" in said[0]


def test_watch_of_a_job_that_died_says_which_step_it_waits_for(tmp_path):
    job = tmp_path / "died"
    write_odd_trial(job, steps=3, end=False)  # no training_job_end.ts: it may still be running
    trial = create_trial(str(job))
    said, t = [], FakeTime(until=700)
    got = []
    with pytest.raises(FakeTime.Stop):
        for step in follow_steps(trial, 0, None, clock=t.clock, sleep=t.sleep, speak=said.append):
            got.append(step)
    assert got == [0, 1, 2]
    assert 3 <= len(said) <= 6  # at 60 s, then sparsely: not once per poll
    assert t.slept > 600
    assert said[0].startswith(
        "still waiting for step 3 after 60 s (the last complete step is 2; no training_job_end.ts"
    )
    assert "after 120 s" in said[1] or "after 121 s" in said[1]


def test_watch_of_a_finished_trial_ends_without_waiting(digits_trial):
    proc = smdebug("watch", digits_trial, "--rule", "ExplodingTensor", "--json", timeout=120)
    assert proc.returncode == 0, proc.stderr
    events = [strict_json(line) for line in proc.stdout.splitlines()]
    assert events[-1]["event"] == "summary" and events[-1]["evaluated"] == len(create_trial(digits_trial).steps())


# ---------------------------------------------------------------- strict JSON everywhere
def test_show_json_nonfinite_and_complex_values_are_strict_json(capsys, odd_trial):
    assert main(["show", odd_trial, "nonfinite", "--json", "--full"]) == 0
    got = strict_json(capsys.readouterr().out)
    assert got["value"] == [1.0, "NaN", "Infinity", "-Infinity"]
    assert got["nan"] == 1 and got["inf"] == 2 and got["min"] == 1.0
    assert main(["show", odd_trial, "cplx", "--json", "--full"]) == 0
    got = strict_json(capsys.readouterr().out)  # before: half a document, then a TypeError
    assert got["value"] == [[1.0, 2.0], [3.0, -1.0]] and got["dtype"] == "complex64"
    assert got["statistics_of"] == "magnitude" and got["max"] == pytest.approx(10**0.5)
    assert main(["show", odd_trial, "words", "--json", "--full"]) == 0
    assert strict_json(capsys.readouterr().out)["value"] == ["a", "bc"]
    assert main(["show", odd_trial, "big", "--json", "--full"]) == 0
    assert strict_json(capsys.readouterr().out)["value"] == [BIG, -(2**62) - 3]


def test_show_json_of_a_nan_gradient(capsys, nan_trial):
    assert (
        main(["show", nan_trial, "gradient/Sequential_0.weight", "--step", "5", "--mode", "train", "--json", "--full"])
        == 0
    )
    got = strict_json(capsys.readouterr().out)
    assert got["reductions"]["l2"] == "NaN" and got["value"][0][0] == "NaN"


@pytest.mark.parametrize(
    "argv",
    [
        ["info", "{odd}", "--json"],
        ["info", "{nan}", "--json"],
        ["show", "{odd}", "nonfinite", "--json", "--full"],
        ["show", "{nan}", "CrossEntropyLoss_output_0", "--mode", "train", "--step", "5", "--json", "--full"],
        ["rules", "{nan}", "--rule", "ExplodingTensor", "--json"],
        ["rules", "{odd}", "--rule", "ExplodingTensor", "--param", "tensor_regex=^nonfinite$", "--json"],
        ["watch", "{nan}", "--rule", "ExplodingTensor", "--json"],
    ],
)
def test_every_json_output_is_strict(capsys, odd_trial, nan_trial, argv):
    argv = [a.format(odd=odd_trial, nan=nan_trial) for a in argv]
    assert main(argv) == (1 if argv[0] in ("rules", "watch") else 0)  # ExplodingTensor fires
    out = capsys.readouterr().out
    if argv[0] in ("rules", "watch"):  # one document per line
        docs = [strict_json(line) for line in out.splitlines()]
        assert docs and docs[-1]["event"] == "summary"
    else:
        assert isinstance(strict_json(out), dict)


# ---------------------------------------------------------------- plot: non-numeric tensors
def test_plot_skips_non_numeric_tensors_with_one_line_each(tmp_path, odd_trial):
    out = tmp_path / "all.png"
    proc = smdebug("plot", odd_trial, "--tensor", ".*", "-o", out)
    assert proc.returncode == 0, proc.stderr
    skipped = sorted(proc.stderr.strip().splitlines())
    assert [line.split(":")[1].strip() for line in skipped] == ["skipped cplx", "skipped empty", "skipped words"]
    assert "complex values" in skipped[0] and "empty (0 values)" in skipped[1] and "strings" in skipped[2]
    assert "wrote" in proc.stdout and "4 line(s)" in proc.stdout  # big, bigscalar, loss, nonfinite
    assert out.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("tensor, reduction", [("words", None), ("words", "mean"), ("empty", "max"), ("cplx", None)])
def test_plot_of_only_non_numeric_tensors_is_a_clear_error(tmp_path, odd_trial, tensor, reduction):
    extra = ["--reduction", reduction] if reduction else []
    proc = smdebug("plot", odd_trial, "--tensor", f"^{tensor}$", *extra, "-o", tmp_path / "x.png")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[0].startswith(f"smdebug plot: skipped {tensor}: ")
    assert lines[-1] == f"smdebug plot: nothing to plot: every matching tensor was skipped ({tensor})"
    assert "dtype" not in proc.stderr and "reduction operation" not in proc.stderr  # numpy's own words


def test_export_names_the_non_numeric_tensors_it_skips(tmp_path, odd_trial):
    proc = smdebug("export", odd_trial, "-o", tmp_path / "t.csv", "--format", "csv", "--raw-max-size", "10")
    assert proc.returncode == 0, proc.stderr
    assert sorted(proc.stderr.strip().splitlines()) == [
        "smdebug export: skipped cplx: complex values (real part, imaginary part or magnitude? use `smdebug show`)",
        "smdebug export: skipped words: strings, not numbers",
    ]


# ---------------------------------------------------------------- nonsense is refused
@pytest.mark.parametrize(
    "argv, needle",
    [
        (["plot", "{t}", "--max-lines", "0", "-o", "{tmp}/x.png"], "--max-lines 0: must be at least 1"),
        (["plot", "{t}", "--max-lines", "-3", "-o", "{tmp}/x.png"], "--max-lines -3: must be at least 1"),
        (
            ["rules", "{t}", "--rule", "DeadRelu", "--start-step", "50", "--end-step", "10"],
            "--start-step 50 --end-step 10: the end step must be after the start step",
        ),
        (["rules", "{t}", "--rule", "DeadRelu", "--start-step", "-5"], "--start-step -5: must be at least 0"),
        (
            ["rules", "{t}", "--rule", "LossNotDecreasing", "--param", "num_steps=3", "--param", "num_steps=5"],
            "--param num_steps given twice for --rule LossNotDecreasing",
        ),
        (
            ["export", "{t}", "-o", "{tmp}/t.csv", "--format", "csv", "--raw-max-size", "-1"],
            "--raw-max-size -1: must be at least 0",
        ),
        (["info", "{t}", "--max-steps", "0"], "--max-steps 0: must be at least 1"),
        (["info", ""], "the trial path is empty"),
        (["show", "", "x"], "the trial path is empty"),
        (["plot", "{t}", "-o", ""], "-o: the output path is empty"),
        (["report", "{t}", "-o", "{tmp}"], "is a folder; give a file name"),
        (["export", "{t}", "-o", "{tmp}/t.csv", "--wat"], "unrecognized arguments: --wat"),
    ],
)
def test_nonsense_is_one_line_and_exit_2(tmp_path, digits_trial, argv, needle):
    argv = [a.format(t=digits_trial, tmp=tmp_path) for a in argv]
    proc = smdebug(*argv)
    assert proc.returncode == 2 and needle in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert not (tmp_path / "x.png").exists() and not (tmp_path / "t.csv").exists()


def test_info_of_an_empty_path_says_so(capsys):
    assert main(["info", ""]) == 2
    err = capsys.readouterr().err
    assert err.startswith("smdebug info: the trial path is empty") and ": no such folder" not in err


# ---------------------------------------------------------------- exact integers in export
def test_export_keeps_int64_exact_in_csv_and_parquet(tmp_path, odd_trial):
    out = tmp_path / "t.csv"
    assert (
        main(
            [
                "export",
                odd_trial,
                "-o",
                str(out),
                "--format",
                "csv",
                "--raw-max-size",
                "4",
                "--tensor",
                "^(big|bigscalar|loss)$",
            ]
        )
        == 0
    )
    rows = list(csv.DictReader(out.open()))
    big = {(r["tensor"], r["reduction"], r["step"]): r for r in rows}
    assert int(big[("bigscalar", "value", "1")]["int_value"]) == BIG
    assert int(big[("big", "value[0]", "2")]["int_value"]) == BIG
    assert int(big[("big", "value[1]", "0")]["int_value"]) == -(2**62) - 3
    assert big[("loss", "value", "0")]["int_value"] == "" and float(big[("loss", "value", "0")]["value"]) == 3.0
    import pyarrow.dataset as ds

    pq = tmp_path / "pq"
    assert main(["export", odd_trial, "-o", str(pq), "--raw-max-size", "4", "--tensor", "^(big|bigscalar|loss)$"]) == 0
    table = ds.dataset(str(pq), format="parquet", partitioning="hive").to_table()
    assert str(table.schema.field("int_value").type) == "int64"
    got = {(r["tensor"], r["reduction"], r["step"]): r["int_value"] for r in table.to_pylist()}
    assert got[("bigscalar", "value", 0)] == BIG and got[("big", "value[1]", 2)] == -(2**62) - 3
    assert got[("loss", "value", 1)] is None


# ---------------------------------------------------------------- messages that name what failed
@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize(
    "argv",
    [["export", "{t}", "-o", "/dev/full", "--format", "csv"], ["report", "{t}", "-o", "/dev/full", "--no-rules"]],
)
def test_a_full_disk_names_the_file(digits_trial, argv):
    proc = smdebug(*[a.format(t=digits_trial) for a in argv])
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == f"smdebug {argv[0]}: -o /dev/full: cannot write it: No space left on device"


@pytest.mark.parametrize(
    "argv, module, extra",
    [
        (["info", "{t}"], "rich", "cli"),
        (["plot", "{t}", "-o", "{tmp}/x.png"], "matplotlib", "plot"),
        (["report", "{t}", "-o", "{tmp}/r.html"], "matplotlib", "plot"),
    ],
)
def test_a_missing_extra_is_named(tmp_path, argv, module, extra):
    src = FIXTURES / "pytorch_mlp"
    argv = [a.format(t=src, tmp=tmp_path) for a in argv]
    code = f"import sys; sys.modules[{module!r}] = None; from smdebug.cli import main; sys.exit(main({argv!r}))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == f"smdebug {argv[0]}: this command needs {module}: pip install 'smdebug-open[{extra}]'"


def test_watch_copy_of_a_fixture_without_end_marker_is_followed(tmp_path):
    # the real hook's output (1.0.34's), its end marker removed: every saved step is followed
    job = tmp_path / "mlp"
    shutil.copytree(FIXTURES / "pytorch_mlp", job)
    (job / "training_job_end.ts").unlink()
    trial = create_trial(str(job))
    said, t = [], FakeTime(until=100)
    got = []
    with pytest.raises(FakeTime.Stop):
        got.extend(follow_steps(trial, 0, None, clock=t.clock, sleep=t.sleep, speak=said.append))
    assert got == trial.steps()[: len(got)] and len(got) >= len(trial.steps()) - 1
    assert said and f"still waiting for step {got[-1] + 1}" in said[0]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("argv", [["info", "--json"], ["show", "Sequential_0.weight", "--full"], ["info"]])
def test_standard_output_on_a_full_disk_says_so(argv):
    src = str(FIXTURES / "pytorch_mlp")
    argv = [argv[0], src, *argv[1:]]
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "smdebug", *argv], stdout=full, stderr=subprocess.PIPE, text=True, timeout=120
        )
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"smdebug {argv[0]}: cannot write standard output: No space left on device"


def test_plot_says_what_max_lines_left_out(tmp_path, odd_trial):
    proc = smdebug(
        "plot", odd_trial, "--tensor", "^(big|bigscalar|loss)$", "--max-lines", "1", "-o", tmp_path / "x.png"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip() == (
        "smdebug plot: drew the first 1 lines (--max-lines): 2 more matching tensors not drawn, from bigscalar"
    )
