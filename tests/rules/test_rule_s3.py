"""A 1.0.34-style rule with req_tensors on trials in S3 (moto behind the counting proxy): the same
answers as on the local folders, and a step's required values cost one read per trial."""

from __future__ import annotations

import os

import pytest

from smdebug.exceptions import RuleEvaluationConditionMet
from smdebug.rules import invoke_rule
from smdebug.trials import create_trial


def _upload(client, folder, bucket, prefix):
    for dirpath, _dirs, files in os.walk(folder):
        for f in files:
            path = os.path.join(dirpath, f)
            with open(path, "rb") as fh:
                client.put_object(Bucket=bucket, Key=f"{prefix}/{os.path.relpath(path, folder)}", Body=fh.read())


def test_req_tensors_rule_on_s3(pt_runs, boto_client, bucket, proxy):
    import legacy_rules

    for name in ("a", "b"):
        _upload(boto_client, pt_runs[name].path, bucket, name)
    local = legacy_rules.SimilarRuns(create_trial(pt_runs["a"].path), create_trial(pt_runs["b"].path), "Sequential")
    invoke_rule(local)
    base, other = create_trial(f"s3://{bucket}/a"), create_trial(f"s3://{bucket}/b")
    rule = legacy_rules.SimilarRuns(base, other, "Sequential")
    proxy.reset()
    with pytest.raises(RuleEvaluationConditionMet):  # two seeds: the weights differ
        rule.invoke(3)
    counts = proxy.snapshot()
    print(counts)
    # 8 values x 2 trials, one batched read each; the hook consolidated each trial's index, so the
    # first value read of a bucket also reads that bucket's entries (one ranged GET per trial)
    assert counts.get("RANGE", 0) + counts.get("GET", 0) == 4, counts
    rule.calls.clear()
    invoke_rule(rule)
    assert rule.calls == local.calls and len(rule.calls) == 6
