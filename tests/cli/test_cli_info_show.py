"""`smdebug info` / `inspect` / `show` on real PyTorch runs and 1.0.34's fixtures."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from smdebug import modes
from smdebug.cli import main
from smdebug.trials import create_trial
from smdtest import FIXTURES


def test_info_table_names_steps_modes_and_saved(capsys):
    assert main(["info", str(FIXTURES / "pytorch_mlp")]) == 0
    out = capsys.readouterr().out
    assert "training ended: yes" in out
    assert "0, 2, 4, 6, 8, 10, 12, 14, 16" in out
    assert "TRAIN" in out and "EVAL" in out
    row = next(line for line in out.splitlines() if line.startswith("│ gradient/Sequential_0.weight "))
    assert "l2, max, mean, abs_mean" in row and "16x8" in row and "TRAIN:6" in row


def test_inspect_is_an_alias_of_info(capsys):
    assert main(["inspect", str(FIXTURES / "pytorch_mlp"), "--json"]) == 0
    a = json.loads(capsys.readouterr().out)
    assert main(["info", str(FIXTURES / "pytorch_mlp"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == a


def test_info_json_equals_the_trial_api(capsys, digits_trial):
    assert main(["info", digits_trial, "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    tr = create_trial(digits_trial)
    assert info["steps"] == tr.steps()
    assert info["mode_steps"] == {"TRAIN": list(range(12)), "EVAL": [0, 1, 2]}
    assert info["workers"] == ["worker_0"] and info["training_ended"] is True
    assert sorted(info["collections"]["gradients"]) == tr.tensor_names(collection="gradients")
    rows = {r["name"]: r for r in info["tensors"]}
    assert set(rows) == set(tr.tensor_names())
    w = rows["Sequential_0.weight"]
    assert w["raw"] is True and w["shape"] == [32, 64] and sorted(w["reductions"]) == ["l2", "mean"]
    assert w["modes"] == {"TRAIN": 12, "EVAL": 3}
    assert rows["gradient/Sequential_0.weight"]["modes"] == {"TRAIN": 12}


def test_show_statistics_equal_numpy(capsys, digits_trial):
    assert main(["show", digits_trial, "Sequential_2.weight", "--step", "4", "--mode", "train", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    v = create_trial(digits_trial).tensor("Sequential_2.weight").value(4, mode=modes.TRAIN).astype(np.float64)
    assert got["shape"] == [10, 32] and got["dtype"] == "float32" and got["step"] == 4
    assert got["min"] == pytest.approx(v.min()) and got["max"] == pytest.approx(v.max())
    assert got["mean"] == pytest.approx(v.mean()) and got["std"] == pytest.approx(v.std())
    assert got["nan"] == 0 and got["inf"] == 0
    assert got["reductions"]["l2"] == pytest.approx(np.linalg.norm(v), rel=1e-5)


def test_show_counts_nan_and_inf(capsys, nan_trial):
    assert main(["show", nan_trial, "gradient/Sequential_0.weight", "--step", "5", "--mode", "train", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["nan"] == 32 * 64 and got["inf"] == 0 and "min" not in got


def test_show_full_prints_the_whole_array(capsys, digits_trial):
    assert main(["show", digits_trial, "Sequential_2.bias", "--full"]) == 0
    out = capsys.readouterr().out
    v = create_trial(digits_trial).tensor("Sequential_2.bias").value(14)
    assert "step 14 (GLOBAL)" in out
    printed = out[out.index("[") : out.rindex("]") + 1]
    assert np.array_equal(np.array(printed.strip("[]").split(), dtype=np.float32), v)


def test_show_reductions_only_tensor(capsys):
    assert main(["show", str(FIXTURES / "reductions_only"), "grad/x", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["raw"] is False and set(got["reductions"]) == {"min", "max", "abs_mean", "l1"}


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["show", "{t}", "nope.weight"], "no tensor 'nope.weight'"),
        (["show", "{t}", "Sequential_0.weight", "--step", "999"], "not saved at GLOBAL step 999"),
        (["show", "{t}", "Sequential_0.weight", "--worker", "worker_7"], "worker 'worker_7'"),
        (["show", "{t}", "Sequential_0.weight", "--mode", "sideways"], "--mode 'sideways'"),
        (["info", "{missing}"], "no such folder"),
        (["info", "{notatrial}"], "is not an smdebug trial"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, digits_trial, argv, needle):
    (tmp_path / "notatrial").mkdir()
    argv = [a.format(t=digits_trial, missing=tmp_path / "missing", notatrial=tmp_path / "notatrial") for a in argv]
    proc = subprocess.run([sys.executable, "-m", "smdebug", *argv], capture_output=True, text=True)
    assert proc.returncode == 2
    assert needle in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_help_is_fast_and_imports_nothing_heavy():
    code = (
        "import sys, smdebug.cli as c; c.build_parser();"
        "heavy = [m for m in ('matplotlib', 'pyarrow', 'rich', 'torch') if m in sys.modules];"
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    proc = subprocess.run([sys.executable, "-m", "smdebug", "--help"], capture_output=True, text=True)
    assert proc.returncode == 0
    for cmd in ("info", "show", "plot", "rules", "watch", "report", "export"):
        assert cmd in proc.stdout
