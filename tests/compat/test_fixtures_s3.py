"""The fixture trials written by smdebug 1.0.34, uploaded to S3 (moto), answer exactly as the same
folders do locally: the oracle's JSON on ``s3://bucket/prefix`` equals its JSON on the folder."""

from __future__ import annotations

import os
import sys

import pytest

from smdtest import FIXTURES, ORACLE, flatten_oracle, run_json

TRIALS = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())

# (trial, oracle range arguments): whole trials, plus range_steps windows (S3 lists from StartAfter)
CASES = [(name, ()) for name in TRIALS] + [
    ("multi_worker_modes", ("2", "7")),
    ("incomplete_job", ("3", "none")),
]


def _upload(client, folder, bucket: str, prefix: str) -> int:
    """Put every file under ``folder`` at ``<prefix>/<relative path>`` with boto3 (not our store)."""
    n = 0
    for dirpath, _dirs, files in os.walk(folder):
        for f in files:
            path = os.path.join(dirpath, f)
            key = f"{prefix}/{os.path.relpath(path, folder).replace(os.sep, '/')}"
            with open(path, "rb") as fh:
                client.put_object(Bucket=bucket, Key=key, Body=fh.read())
            n += 1
    return n


@pytest.mark.parametrize("name, rng", CASES, ids=[f"{n}-{'-'.join(r) or 'all'}" for n, r in CASES])
def test_oracle_same_on_s3(name, rng, aws_env, boto_client, bucket):
    # the oracle subprocess inherits the endpoint and the dummy credentials from os.environ
    assert os.environ["AWS_ENDPOINT_URL_S3"] == aws_env
    assert os.environ["AWS_ACCESS_KEY_ID"] == "testing"
    local = FIXTURES / name
    n_files = sum(len(files) for _, _, files in os.walk(local))
    assert _upload(boto_client, local, bucket, f"smdebug-1.0.34/{name}") == n_files > 0
    listed = boto_client.list_objects_v2(Bucket=bucket, Prefix=f"smdebug-1.0.34/{name}/")
    assert listed["KeyCount"] == n_files

    url = f"s3://{bucket}/smdebug-1.0.34/{name}"
    on_local = run_json(sys.executable, ORACLE, local, *rng)
    on_s3 = run_json(sys.executable, ORACLE, url, *rng)
    assert on_local["steps"], "the oracle saw no steps: the comparison would prove nothing"
    loc_flat, s3_flat = flatten_oracle(on_local), flatten_oracle(on_s3)
    assert set(loc_flat) == set(s3_flat), set(loc_flat) ^ set(s3_flat)
    diff = {k: (loc_flat[k], s3_flat[k]) for k in loc_flat if loc_flat[k] != s3_flat[k]}
    assert not diff, f"{name} {rng}: local != s3 on {len(diff)} answers, e.g. {list(diff.items())[:5]}"
    assert on_s3 == on_local
