"""The PyTorch hook writing to S3 while another process reads the trial; faults on the way."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch
from torch import nn

import smdebug.pytorch as smd
from smdebug.trials import create_trial

TRAINER = Path(__file__).with_name("s3_trainer.py")


def test_reader_sees_every_step_exactly_once_while_training_writes_to_s3(bucket, aws_env, tmp_path, monkeypatch):
    monkeypatch.setenv("SMDEBUG_POLL_INTERVAL", "0.05")
    url, steps = f"s3://{bucket}/live", 25
    trainer = subprocess.Popen(
        [sys.executable, str(TRAINER), url, str(steps), str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        trial = create_trial(url, collection_wait_timeout=120)
        seen: list[list[int]] = [trial.steps()]
        assert not trial.loaded_all_steps  # opened while the job runs (it waits for the file below)
        (tmp_path / "reader_opened").touch()
        for s in range(steps):
            trial.wait_for_steps([s], timeout=120)
            now = trial.steps()
            assert now[: len(seen[-1])] == seen[-1], "a step disappeared or moved"
            seen.append(now)
        out = trainer.communicate(timeout=120)[0]
        assert trainer.returncode == 0, out[-3000:]
    finally:
        trainer.kill()
    assert seen[0] != seen[-1]  # the reader did watch steps arrive
    final = trial.steps()
    assert final == list(range(steps)) and len(set(final)) == len(final)
    losses = json.loads((tmp_path / "losses.json").read_text())
    loss = trial.tensor("CrossEntropyLoss_output_0")
    assert {s: float(v) for s, v in loss.values().items()} == {int(k): v for k, v in losses.items()}
    assert trial.tensor("gradient/Sequential_0.weight").steps() == list(range(steps))


def test_hook_loses_nothing_through_a_faulty_endpoint(bucket, proxy, tmp_path):
    proxy.configure(error_rate=0.2, reset_rate=0.05, slow_rate=0.05, delay_s=0.2, seed=3)
    url = f"s3://{bucket}/faulty"
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
    loss_fn = nn.MSELoss()
    hook = smd.Hook(
        out_dir=url,
        save_config=smd.SaveConfig(save_interval=1),
        export_tensorboard=True,
        include_collections=["weights", "gradients", "losses"],
    )
    hook.register_module(model)
    hook.register_loss(loss_fn)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x, y = torch.randn(16, 8), torch.randn(16, 2)
    weights = {}
    for step in range(12):
        weights[step] = model[0].weight.detach().clone().numpy()
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    hook.close()
    assert not hook.disabled
    assert sum(proxy.faults.values()) > 0  # faults really happened on the way
    trial = create_trial(url)
    assert trial.steps() == list(range(12))
    w = trial.tensor("Sequential_0.weight")
    for step, expected in weights.items():
        np.testing.assert_array_equal(w.value(step), expected)
    assert len(trial.tensor_names(collection="gradients")) == 4


def test_an_outage_loses_only_the_steps_written_during_it(bucket, proxy, caplog):
    """Storage errors don't disable the hook: steps written after the endpoint is back are kept."""
    url = f"s3://{bucket}/outage"
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 2))
    hook = smd.Hook(out_dir=url, save_config=smd.SaveConfig(save_interval=1), include_collections=["weights"])
    hook.register_module(model)
    x = torch.randn(3, 4)
    for _ in range(3):
        model(x)
    hook._writer.flush()  # steps 0 and 1 are written
    proxy.configure(error_rate=1.0, fault_attempts=100)  # every request fails, retries included
    model(x)  # step 3 starts: step 2 is handed to the writer and cannot be written
    hook._writer.flush()
    proxy.configure()
    for _ in range(3):
        model(x)
    hook.close()
    assert not hook.disabled
    assert any("could not write step 2" in r.getMessage() for r in caplog.records)
    assert create_trial(url).steps() == [0, 1, 3, 4, 5, 6]
