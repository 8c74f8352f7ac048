"""The README's headline ``smdebug run`` line, exactly as printed there, on a 64-step script whose
loss becomes NaN at step 33: with no save interval given, the job is stopped within 3 steps of it,
and status.json says IssuesFound with the tensor and the step."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from smdebug.trials import create_trial

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).parent / "scripts" / "nan_at_33.py"


def _headline() -> list[str]:
    """The `smdebug run ... -- python train.py` line of the README."""
    lines = [
        ln
        for ln in (ROOT / "README.md").read_text().splitlines()
        if ln.startswith("smdebug run ") and ln.endswith("-- python train.py")
    ]
    assert len(lines) == 1, lines
    return shlex.split(lines[0])


def test_readme_headline_stops_the_job_at_the_first_nan(tmp_path):
    pytest.importorskip("torch")
    words = _headline()
    assert "save_interval" not in " ".join(words)  # as printed: no schedule from the user
    shutil.copy(SCRIPT, tmp_path / "train.py")
    cut = words.index("--")
    command = [
        sys.executable,
        "-m",
        "smdebug",
        *words[1:cut],
        "--run-dir",
        "run",
        "--",
        sys.executable,
        *words[cut + 2 :],
    ]
    proc = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    printed = [int(m) for m in re.findall(r"^step (\d+) loss", proc.stdout, re.M)]
    assert printed and max(printed) < 33 + 3, out  # the script's own steps: stopped within 3 steps
    status = json.loads((tmp_path / "run" / "status.json").read_text())
    assert status["TrainingJobStatus"] == "Stopped", out
    (rule,) = status["DebugRuleEvaluationStatuses"]
    assert rule["RuleEvaluationStatus"] == "IssuesFound", out
    details = rule["StatusDetails"]
    assert "at step 33" in details and "loss_output_0" in details, details
    assert rule["Finding"]["tensors"][0] == "loss_output_0" and rule["Finding"]["step"] == 33
    trial = create_trial(str(tmp_path / "run" / "debug-output"))
    assert 33 in trial.steps() and max(trial.steps()) <= 33 + 3
    assert "saving losses every step" in out  # smdebug run says what it chose
