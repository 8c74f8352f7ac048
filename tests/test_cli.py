"""`smdebug inspect`: what a trial holds, and a clear error for a bad path."""

from __future__ import annotations

import subprocess
import sys


def test_inspect_bad_path_exits_2_with_a_message(tmp_path):
    missing = tmp_path / "nope"
    proc = subprocess.run([sys.executable, "-m", "smdebug.cli", "inspect", str(missing)],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert str(missing) in proc.stderr and "Traceback" not in proc.stderr
