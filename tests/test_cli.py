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


def test_ctrl_c_while_the_subcommands_load_is_one_line(monkeypatch, capsys):
    import importlib

    import smdebug.cli as cli

    real = importlib.import_module

    def interrupted(name, *a, **k):
        if name.startswith("smdebug.cli."):
            raise KeyboardInterrupt
        return real(name, *a, **k)

    monkeypatch.setattr(cli.importlib, "import_module", interrupted)
    assert cli.main(["info", "x"]) == 130
    assert capsys.readouterr().err == "smdebug: interrupted\n"
