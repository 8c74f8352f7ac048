"""Small trials written by hand with FileWriter, so that a test knows what a rule must see."""

from __future__ import annotations

import numpy as np


def write_trial(path, series: dict, collections: dict | None = None, *, end: bool = True):
    """A trial of {name: {global step: value}} (float32), with ``collections``
    {collection: [tensor names]} in its collections file; ``end``: with the end-of-training marker."""
    from smdebug.core.collection_manager import CollectionManager
    from smdebug.core.writer import FileWriter

    cm = CollectionManager()
    cm.add("default")
    for coll, names in (collections or {}).items():
        cm.add(coll)
        for n in names:
            cm.get(coll).add_tensor_name(n)
    cm.set_num_workers(1)
    cm.export(str(path), "worker_0_collections.json")
    for step in sorted({s for values in series.values() for s in values}):
        with FileWriter(str(path), step=step) as fw:
            for name, values in series.items():
                if step in values:
                    fw.write_tensor(np.asarray(values[step], dtype=np.float32), name)
    if end:
        (path / "training_job_end.ts").write_bytes(b"")
    return str(path)
