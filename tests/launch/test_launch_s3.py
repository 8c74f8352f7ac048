"""``smdebug run`` with the trial on S3 (a moto server on 127.0.0.1): rule jobs follow it and the
StopTraining action stops the job within 2 s of the NaN step."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

import smdebug
from smdebug.trials import create_trial

pytest.importorskip("torch")
pytest.importorskip("s3fs")

MLP = str(Path(__file__).parent / "scripts" / "mlp.py")


def test_stop_on_s3_within_2_s(tmp_path, bucket, aws_env):
    timeline = tmp_path / "timeline.txt"
    out = f"s3://{bucket}/job/debug-output"
    result = smdebug.launch(
        [sys.executable, MLP, "--steps", "600", "--nan-at", "5", "--step-time", "0.05", "--timeline", str(timeline)],
        out_dir=out,
        run_dir=str(tmp_path / "run"),
        rules=["exploding_tensor"],
        actions=["stop"],
        collection_configs=["gradients:save_interval=1", "losses:save_interval=1"],
        echo=lambda _m: None,
        stop_grace=30,
    )
    ended = time.time()
    assert result.status == "Stopped" and result.stop_step == 5
    starts = {int(s): float(t) for s, t in (line.split() for line in timeline.read_text().splitlines())}
    last_start = starts[max(starts)]
    assert last_start - starts[5] < 2.0, (max(starts), last_start - starts[5])
    assert ended > last_start
    trial = create_trial(out)
    assert trial.steps() == list(range(max(starts)))  # every step before the one the stop landed on


def test_a_missing_bucket_is_refused_before_the_job_starts(tmp_path, bucket, aws_env, capsys):
    from smdebug.cli import main

    marker = tmp_path / "ran"
    code = main(
        [
            "run",
            "--run-dir",
            str(tmp_path / "r"),
            "--out-dir",
            f"s3://{bucket}-missing/x",
            "--",
            sys.executable,
            "-c",
            f"open({str(marker)!r}, 'w').close()",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and not marker.exists()
    assert err.startswith(f"smdebug run: --out-dir s3://{bucket}-missing/x: ") and "does not exist" in err, err
    assert len(err.strip().splitlines()) == 1
