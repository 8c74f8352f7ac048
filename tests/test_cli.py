"""`smdebug inspect`: what a trial holds, and a clear error for a bad path."""

from __future__ import annotations

import subprocess
import sys


def test_inspect_bad_path_exits_2_with_a_message(tmp_path):
    missing = tmp_path / "nope"
    proc = subprocess.run(
        [sys.executable, "-m", "smdebug.cli", "inspect", str(missing)], capture_output=True, text=True
    )
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


def test_a_closed_pipe_ends_the_command_quietly(tmp_path):
    """`smdebug ... | head`: no "Broken pipe" message, no traceback, exit status 1 (as rich's tables)."""
    import numpy as np

    from smdebug.core.collection_manager import CollectionManager
    from smdebug.core.writer import FileWriter

    trial = tmp_path / "t"
    cm = CollectionManager()
    cm.add("default")
    cm.set_num_workers(1)
    cm.export(str(trial), "worker_0_collections.json")
    with FileWriter(trial_dir=str(trial), step=0) as w:
        w.write_tensor(tdata=np.arange(200_000, dtype=np.float32), tname="w")
    for argv in (["show", str(trial), "w", "--full", "--json"], ["info", str(trial)]):
        proc = subprocess.Popen(
            [sys.executable, "-m", "smdebug.cli", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        proc.stdout.read(10)
        proc.stdout.close()  # the reader stops, as `head` does
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=120) in (0, 1), err
        assert err == "", err
