"""What a consolidated trial costs on S3 (requests counted by the proxy in front of moto): opening
reads one head per (bucket, worker) and no per-step index file; range_steps reads only the buckets
it needs; a value is one ranged GET (plus one for the bucket's entries when its object is large)."""

from __future__ import annotations

import numpy as np
import pytest

from smdebug.core.collection_manager import CollectionManager
from smdebug.core.consolidate import BucketConsolidator
from smdebug.core.writer import FileWriter
from smdebug.storage import open_store
from smdebug.trials import consolidated as consolidated_reader
from smdebug.trials import create_trial

W = 2
STEPS = range(0, 3000, 50)  # 60 steps in 3 buckets


def _write(url):
    cm = CollectionManager()
    cm.add("default")
    cm.set_num_workers(W)
    store = open_store(url)
    for w in range(W):
        cm.export(url, f"worker_{w}_collections.json")
        cons = BucketConsolidator(store, f"worker_{w}")
        for s in STEPS:
            with FileWriter(trial_dir=url, step=s, worker=f"worker_{w}", store=store, consolidator=cons) as fw:
                for t in range(4):
                    fw.write_tensor(np.full((3,), s * 10 + w + t / 10, dtype=np.float32), f"t{t}")
        cons.close()
    store.write("training_job_end.ts", b"")


@pytest.mark.parametrize("head_read", [consolidated_reader.HEAD_READ, 40], ids=["small_objects", "large_objects"])
def test_consolidated_open_range_and_value_request_counts(bucket, proxy, monkeypatch, head_read):
    # "large_objects": only a 40-byte prefix is read at open, as for objects bigger than HEAD_READ
    monkeypatch.setattr(consolidated_reader, "HEAD_READ", head_read)
    extra = int(head_read == 40)  # the rest of a head; a bucket's entries
    url = f"s3://{bucket}/cons"
    _write(url)
    proxy.reset()
    trial = create_trial(url)
    # LISTs: collections, _smdebug/index/, the bucket folders of index/, index/ after the last
    # covered bucket; GET: the collections file; RANGE: a head per (bucket, worker); no index file
    assert proxy.snapshot() == {"LIST": 4, "GET": 1, "RANGE": 3 * W * (1 + extra)}
    proxy.reset()
    assert trial.steps() == list(STEPS)
    assert proxy.snapshot() == {"HEAD": 1, "LIST": 1}

    proxy.reset()
    ranged = create_trial(url, range_steps=(1000, 2000))
    assert proxy.snapshot() == {"LIST": 4, "GET": 1, "RANGE": W * (1 + extra)}  # the heads of bucket 1 only
    proxy.reset()
    assert ranged.steps() == list(range(1000, 2000, 50))
    assert proxy.snapshot() == {"HEAD": 1, "LIST": 1}
    proxy.reset()
    np.testing.assert_array_equal(ranged.tensor("t2").value(1500, worker="worker_1"),
                                  np.full((3,), 15001.2, dtype=np.float32))
    assert proxy.snapshot() == {"RANGE": 1 + extra}  # the event file's record (and the bucket's entries)
    proxy.reset()
    assert len(ranged.tensor("t3").values(worker="worker_0")) == 20
    assert proxy.snapshot() == {"RANGE": 20 + extra}  # a record per step (and worker_0's entries of bucket 1)
