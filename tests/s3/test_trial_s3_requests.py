"""How many S3 requests each Trial operation costs (counted by the proxy in front of moto)."""

from __future__ import annotations

import numpy as np

from smdebug.core.collection_manager import CollectionManager
from smdebug.core.writer import FileWriter
from smdebug.storage import open_store
from smdebug.trials import create_trial

S, W = 12, 3


def _write(url, steps, workers=W, ended=True):
    cm = CollectionManager()
    cm.add("default")
    cm.get("default").include(".")
    cm.set_num_workers(workers)
    for w in range(workers):
        cm.export(url, f"worker_{w}_collections.json")
    for s in steps:
        for w in range(workers):
            with FileWriter(trial_dir=url, step=s, worker=f"worker_{w}") as fw:
                for t in range(4):
                    fw.write_tensor(np.full((3, 2), s * 10 + w + t / 10, dtype=np.float32), f"t{t}")
    if ended:
        open_store(url).write("training_job_end.ts", b"")


def test_open_list_refresh_and_values_request_counts(bucket, aws_env, proxy):
    url = f"s3://{bucket}/counts"
    _write(url, range(S))  # written directly to moto, before the proxy counts
    proxy.reset()
    trial = create_trial(url)
    opened = proxy.snapshot()
    # the index: S*W GETs plus one LIST; the collections: one LIST and one GET; one LIST finds
    # no consolidated index objects (_smdebug/index/)
    assert opened.get("GET", 0) == S * W + 1, opened
    assert opened.get("LIST", 0) == 3, opened
    assert opened.get("RANGE", 0) == 0 and opened.get("PUT", 0) == 0, opened
    proxy.reset()
    assert trial.steps() == list(range(S))  # first query: the end-of-training check and a last LIST
    assert proxy.snapshot() == {"HEAD": 1, "LIST": 1}
    proxy.reset()
    t = trial.tensor("t2")
    vals = t.values(worker="worker_1")
    assert sorted(vals) == list(range(S))
    np.testing.assert_array_equal(vals[7], np.full((3, 2), 71.2, dtype=np.float32))
    assert proxy.snapshot() == {"RANGE": S}  # one ranged GET per step, nothing else (job ended)


def test_refresh_with_nothing_new_costs_at_most_two_requests(bucket, aws_env, proxy):
    url = f"s3://{bucket}/running"
    _write(url, range(4), ended=False)
    trial = create_trial(url)
    assert trial.steps() == [0, 1, 2, 3]
    proxy.reset()
    for _ in range(3):
        assert trial.steps() == [0, 1, 2, 3]
    counts = proxy.snapshot()
    assert sum(counts.values()) <= 2 * 3, counts  # per refresh: one HEAD (marker) + one LIST
    assert counts.get("HEAD", 0) == 3 and counts.get("LIST", 0) == 3, counts
    _write(url, [4], ended=False)
    proxy.reset()
    assert trial.steps() == [0, 1, 2, 3, 4]
    assert proxy.snapshot() == {"HEAD": 1, "LIST": 1, "GET": W}  # only the new index files


def test_index_reads_and_value_reads_are_concurrent(bucket, aws_env, proxy):
    url = f"s3://{bucket}/slow"
    _write(url, range(S))
    proxy.configure(slow_rate=1.0, delay_s=0.1)  # every request answered late, so requests overlap
    create_trial(url)  # the S*W index GETs
    assert proxy.max_in_flight >= 8, proxy.max_in_flight
    trial = create_trial(url)
    proxy.reset()
    proxy.configure(slow_rate=1.0, delay_s=0.1)
    vals = trial.tensor("t0").values()
    assert len(vals) == S
    assert proxy.max_in_flight >= 8, proxy.max_in_flight  # the S ranged GETs of values()
