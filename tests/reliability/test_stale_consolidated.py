"""A consolidated index made while the job still writes its bucket: `smdebug consolidate
--include-incomplete` at step 19 of a PyTorch job that goes on to step 59 and hits NaN at step 40.
`smdebug watch`, opened between the two, must see all 60 steps and fire at step 40."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn as nn

import smdebug.pytorch as smd
from smdebug.cli import main
from smdebug.core.locations import CONSOLIDATED_PREFIX, parse_consolidated_key
from smdebug.trials import create_trial

SRC = str(Path(__file__).resolve().parents[2] / "src")
STEPS, CONSOLIDATE_AT, NAN_AT = 60, 19, 40


def _watch(out):
    """`smdebug watch` on the job, returned once it has opened the trial (it says so on stderr)."""
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")]), SMDEBUG_POLL_INTERVAL="0.05"
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "smdebug",
            "watch",
            str(out),
            "--rule",
            "ExplodingTensor",
            "--param",
            "collection_names=weights,losses",
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    seen = []
    for line in proc.stderr:  # synchronises on the line printed after the trial is open
        seen.append(line)
        if line.startswith("watching "):
            return proc
    proc.kill()
    pytest.fail(f"smdebug watch ended before watching: {''.join(seen)[-3000:]}")


def test_watch_opened_after_consolidate_on_a_live_job_sees_every_step(tmp_path, capsys):
    out = tmp_path / "job"
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 4), nn.ReLU(), nn.Linear(4, 2))
    loss_fn = nn.MSELoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    hook = smd.Hook(
        out_dir=str(out), save_config=smd.SaveConfig(save_interval=1), include_collections=["weights", "losses"]
    )
    hook.register_module(model)
    hook.register_loss(loss_fn)
    x, y = torch.randn(8, 6), torch.randn(8, 2)
    watch = None
    try:
        for i in range(STEPS):
            if i == CONSOLIDATE_AT:
                assert main(["consolidate", str(out), "--include-incomplete"]) == 0
                assert "into 1 objects" in capsys.readouterr().out
                watch = _watch(out)
                opened = create_trial(str(out))  # a reader opened at this point, kept open
                assert len(opened.steps()) in (CONSOLIDATE_AT - 1, CONSOLIDATE_AT)
            xb = torch.full_like(x, float("nan")) if i == NAN_AT else x
            opt.zero_grad()
            loss_fn(model(xb), y).backward()
            opt.step()
        hook.close()
        w_out, w_err = watch.communicate(timeout=120)
    finally:
        if watch is not None and watch.poll() is None:
            watch.kill()
    events = [json.loads(line) for line in w_out.splitlines()]
    fired = [e for e in events if e["event"] == "fired"]
    assert watch.returncode == 1, (w_out, w_err[-3000:])  # a rule fired
    assert fired and fired[0]["rule"] == "ExplodingTensor" and fired[0]["step"] == NAN_AT
    assert opened.steps() == list(range(STEPS))
    fresh = create_trial(str(out))
    assert fresh.steps() == list(range(STEPS))
    # the hook's own object of bucket 0 replaced the one `consolidate` wrote at step 19
    objs = [parse_consolidated_key(k) for k in fresh.store.list(CONSOLIDATED_PREFIX)]
    assert [p[:2] for p in objs if p] == [(0, "worker_0")]
    assert fresh._coverage.chunks == 1 and not fresh._coverage.fallbacks
    print(
        f"\nstale consolidated index: {STEPS} steps, object made at step {CONSOLIDATE_AT}; "
        f"watch fired at step {fired[0]['step']}; reader opened mid-job sees {len(opened.steps())}"
    )
