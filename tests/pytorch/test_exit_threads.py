"""A hook left open is closed at interpreter exit, and its threads are gone before the interpreter
finalises: a thread of ours still running torch code (or freeing tensors) then would be ended by
Python mid-C++ and abort the process ("terminate called without an active exception")."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from smdebug.trials import create_trial

SCRIPT = textwrap.dedent("""
    import atexit, json, sys, threading

    def report():  # registered first, so it runs last: after the hook's close at exit
        print("THREADS " + json.dumps(sorted(t.name for t in threading.enumerate())), flush=True)

    atexit.register(report)

    import torch
    import smdebug.pytorch as smd

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 128), torch.nn.ReLU(), torch.nn.Linear(128, 4))
    hook = smd.Hook(out_dir=sys.argv[1], save_config=smd.SaveConfig(save_interval=1),
                    include_collections=["weights", "gradients", "losses"])
    hook.register_module(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        loss = model(torch.randn(8, 256)).sum()
        hook.record_tensor_value("loss", loss)
        loss.backward()
        opt.step()
    names = sorted(t.name for t in threading.enumerate())
    print("TRAINING " + json.dumps(names), flush=True)
    # no hook.close(): the hook closes at exit
""")


def test_hook_left_open_closes_at_exit_and_joins_its_threads(tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in proc.stdout.splitlines() if line.startswith(("TRAINING", "THREADS")))
    during = json.loads(lines["TRAINING"])
    assert any(name.startswith("smdebug-") for name in during), during  # the writer (and copy) threads ran
    assert json.loads(lines["THREADS"]) == ["MainThread"]  # all joined before the interpreter finalises
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    trial = create_trial(str(out))
    assert trial.steps() == [0, 1, 2]  # the last step too, written by the close at exit
    assert trial.loaded_all_steps  # the end-of-training marker was written
    assert trial.tensor("gradient/Sequential_0.weight").value(2).shape == (128, 256)
