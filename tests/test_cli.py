"""`smdebug inspect`: what a trial holds, and a clear error for a bad path."""

from __future__ import annotations

import subprocess
import sys

from smdebug.cli import main
from smdtest import FIXTURES


def test_inspect_prints_steps_tensors_and_losses(capsys):
    assert main(["inspect", str(FIXTURES / "pytorch_mlp")]) == 0
    out = capsys.readouterr().out
    assert "steps      9: 0, 2, 4, 6, 8, 10, 12, 14, 16" in out
    assert "TRAIN    6 mode steps" in out and "EVAL     3 mode steps" in out
    assert "gradient/Sequential_0.weight" in out and "reductions: l2, max, mean, abs_mean" in out
    assert "loss CrossEntropyLoss_output_0" in out
    assert "TRAIN    0:1.0862, 2:1.0831" in out


def test_inspect_bad_path_exits_2_with_a_message(tmp_path):
    missing = tmp_path / "nope"
    proc = subprocess.run([sys.executable, "-m", "smdebug.cli", "inspect", str(missing)],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert str(missing) in proc.stderr and "Traceback" not in proc.stderr
