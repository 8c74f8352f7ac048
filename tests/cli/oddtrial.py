"""A trial of tensors that are not plain floats, written by our FileWriter (for the CLI tests)."""

from __future__ import annotations

import numpy as np


def write_odd_trial(out_dir, steps: int = 3, end: bool = True) -> None:
    """A trial (our FileWriter, one worker, GLOBAL steps) of tensors that are not plain floats: strings,
    complex, empty, int64 beyond 2**53, non-finite floats, and a float ``loss``."""
    from smdebug.core.collection_manager import CollectionManager
    from smdebug.core.locations import END_OF_JOB
    from smdebug.core.writer import FileWriter
    from smdebug.storage import open_store

    cm = CollectionManager()
    cm.add("default")
    cm.set_num_workers(1)
    cm.export(str(out_dir), "worker_0_collections.json")
    for s in range(steps):
        with FileWriter(trial_dir=str(out_dir), step=s, worker="worker_0") as fw:
            fw.write_tensor(tdata=np.array(["a", "bc"]), tname="words")
            fw.write_tensor(tdata=np.array([1 + 2j, 3 - 1j], dtype=np.complex64), tname="cplx")
            fw.write_tensor(tdata=np.zeros((0, 3), np.float32), tname="empty")
            fw.write_tensor(tdata=np.array([BIG, -(2**62) - 3], np.int64), tname="big")
            fw.write_tensor(tdata=np.array(BIG, np.int64), tname="bigscalar")
            fw.write_tensor(tdata=np.array([1.0, np.nan, np.inf, -np.inf], np.float32), tname="nonfinite")
            fw.write_tensor(tdata=np.array(float(steps - s), np.float32), tname="loss")
    if end:
        open_store(str(out_dir)).write(END_OF_JOB, b"")


BIG = 2**53 + 1  # the first integer float64 cannot hold
