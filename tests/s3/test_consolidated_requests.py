"""What a consolidated trial costs on S3 (requests counted by the proxy in front of moto): opening
reads one head per (bucket, worker) and no per-step index file; range_steps reads only the buckets
it needs; a value is one ranged GET (plus one for the bucket's entries when its object is large)."""

from __future__ import annotations

import numpy as np
import pytest

from smdebug.core.collection_manager import CollectionManager
from smdebug.core.output.consolidate import BucketConsolidator
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


# how opening gets the heads: the heads objects (as written); without them, each object's first
# HEAD_READ bytes (these small objects: whole, entries included); a 40-byte first read (as for
# objects larger than HEAD_READ: the rest of the head, and the entries when a value needs them)
CASES = {"heads_objects": None, "whole_objects": consolidated_reader.HEAD_READ, "large_objects": 40}


@pytest.mark.parametrize("case", list(CASES))
def test_consolidated_open_range_and_value_request_counts(bucket, proxy, monkeypatch, case):
    url = f"s3://{bucket}/cons"
    _write(url)
    store = open_store(url)
    heads = [k for k in store.list("_smdebug/index/heads/")]
    assert len(heads) == W
    if CASES[case] is not None:
        monkeypatch.setattr(consolidated_reader, "HEAD_READ", CASES[case])
        for k in heads:
            store.delete(k)
    # at open: LISTs of collections/, _smdebug/index/, the bucket folders of index/, index/ after the
    # newest covered bucket's last step, and one of each older covered bucket after its last step
    # (the proof that no step was written there after its object); GET of the collections file; the heads
    opened = {
        "heads_objects": {"GET": 1 + W},  # a heads object per worker, nothing of the 3 x W objects
        "whole_objects": {"GET": 1, "RANGE": 3 * W},
        "large_objects": {"GET": 1, "RANGE": 2 * 3 * W},
    }[case]
    # a value: its record, plus the entries of its bucket and worker unless read at open
    value = 1 if case == "whole_objects" else 2
    proxy.reset()
    trial = create_trial(url)
    assert proxy.snapshot() == {"LIST": 4 + 2, **opened}  # buckets 0 and 1 checked
    proxy.reset()
    assert trial.steps() == list(STEPS)
    assert proxy.snapshot() == {"HEAD": 1, "LIST": 1}

    proxy.reset()
    ranged = create_trial(url, range_steps=(1000, 2000))
    per_bucket = {k: v // 3 if k == "RANGE" else v for k, v in opened.items()}  # only bucket 1's heads
    assert proxy.snapshot() == {"LIST": 4, **per_bucket}  # bucket 1 is the newest in range
    proxy.reset()
    assert ranged.steps() == list(range(1000, 2000, 50))
    assert proxy.snapshot() == {"HEAD": 1, "LIST": 1}
    proxy.reset()
    np.testing.assert_array_equal(
        ranged.tensor("t2").value(1500, worker="worker_1"), np.full((3,), 15001.2, dtype=np.float32)
    )
    assert proxy.snapshot() == {"RANGE": value}
    proxy.reset()
    assert len(ranged.tensor("t3").values(worker="worker_0")) == 20
    assert proxy.snapshot() == {"RANGE": 20 + value - 1}  # a record per step (and worker_0's entries)
