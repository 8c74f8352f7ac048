"""`smdebug watch` on a running PyTorch job (it stops the job), and the commands on s3:// trials."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from smdebug.cli import main
from smdebug.trials import create_trial
from smdtest import FIXTURES

STOP_TRAINER = Path(__file__).resolve().parents[1] / "rules" / "stop_trainer.py"


def test_watch_follows_a_running_job_and_stops_it(tmp_path):
    out = tmp_path / "job"
    nan_step = 4
    env = {**os.environ, "SMDEBUG_POLL_INTERVAL": "0.05"}
    trainer = subprocess.Popen(
        [sys.executable, str(STOP_TRAINER), str(out), str(nan_step)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    watch = subprocess.Popen(
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
            "--rule",
            "VanishingGradient",
            "--stop-training",
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**env, "SMDEBUG_COLLECTION_WAIT_TIMEOUT": "60"},
    )
    try:
        t_out, t_err = trainer.communicate(timeout=240)
        w_out, w_err = watch.communicate(timeout=120)
    finally:
        for p in (trainer, watch):
            if p.poll() is None:
                p.kill()
    assert trainer.returncode == 0, t_err[-3000:]
    assert watch.returncode == 1, w_err[-3000:]  # a rule fired
    events = [json.loads(line) for line in w_out.splitlines()]
    fired = [e for e in events if e["event"] == "fired"]
    assert [(e["rule"], e["step"]) for e in fired] == [("ExplodingTensor", nan_step)]
    summary = {e["rule"]: e for e in events if e["event"] == "summary"}
    assert summary["ExplodingTensor"]["fired"] and not summary["VanishingGradient"]["fired"]
    job = json.loads(t_out.strip().splitlines()[-1])
    assert job["ended"].startswith("stopped: training stopped at the request of rule ExplodingTensor")
    assert job["steps"] <= nan_step + 1 + 3
    trial = create_trial(str(out))
    assert trial.steps()[: nan_step + 1] == list(range(nan_step + 1)) and trial.loaded_all_steps


def _upload(client, folder, bucket, prefix):
    for dirpath, _dirs, files in os.walk(folder):
        for f in files:
            path = os.path.join(dirpath, f)
            key = f"{prefix}/{os.path.relpath(path, folder).replace(os.sep, '/')}"
            with open(path, "rb") as fh:
                client.put_object(Bucket=bucket, Key=key, Body=fh.read())


def test_commands_on_an_s3_trial(tmp_path, capsys, aws_env, boto_client, bucket):
    _upload(boto_client, FIXTURES / "pytorch_mlp", bucket, "fx/pytorch_mlp")
    url = f"s3://{bucket}/fx/pytorch_mlp"
    assert main(["info", url, "--json"]) == 0
    on_s3 = json.loads(capsys.readouterr().out)
    assert main(["info", str(FIXTURES / "pytorch_mlp"), "--json"]) == 0
    local = json.loads(capsys.readouterr().out)
    on_s3.pop("path"), local.pop("path")
    assert on_s3 == local
    assert main(["show", url, "Sequential_0.weight", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["shape"] == [16, 8]
    assert main(["rules", url, "--rule", "ExplodingTensor"]) == 0
    assert main(["export", url, "-o", str(tmp_path / "t.csv"), "--format", "csv"]) == 0
    assert main(["plot", url, "-o", str(tmp_path / "l.png")]) == 0
    assert main(["report", url, "-o", str(tmp_path / "r.html")]) == 0
    assert "CrossEntropyLoss_output_0" in (tmp_path / "r.html").read_text()


def test_not_a_trial_on_s3(aws_env, bucket):
    proc = subprocess.run(
        [sys.executable, "-m", "smdebug", "info", f"s3://{bucket}/nothing-here"],
        capture_output=True,
        text=True,
        env=dict(os.environ),
    )
    assert proc.returncode == 2 and "is not an smdebug trial" in proc.stderr and "Traceback" not in proc.stderr


def test_a_bucket_that_does_not_exist_is_named(aws_env, capsys):
    """Not "not an smdebug trial": the bucket itself is missing, and the message says so."""
    from smdebug.exceptions import ObjectNotFound

    url = "s3://smd-no-such-bucket-here/job"
    with pytest.raises(ObjectNotFound) as err:
        create_trial(url)
    assert "bucket 'smd-no-such-bucket-here' does not exist" in str(err.value)
    assert main(["info", url]) == 2
    out = capsys.readouterr().err
    assert "bucket 'smd-no-such-bucket-here' does not exist" in out and "not an smdebug trial" not in out
