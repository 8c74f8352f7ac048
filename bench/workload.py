"""The benchmark workload, runnable by either implementation (ours, or smdebug 1.0.34 in its venv).

usage: workload.py write OUT STEPS WORKERS TENSORS   -> prints {"write_s": ...}
       workload.py read TRIAL                        -> prints {"open_list_s": ..., ...}
Only API that both implementations share is used.
"""

import json
import logging
import os
import shutil
import sys
import time

logging.disable(logging.CRITICAL)
import numpy as np  # noqa: E402

REDUCTIONS = [("mean", False), ("mean", True), ("l2", False)]


def mode_of(step):
    from smdebug.core.modes import ModeKeys

    return ModeKeys.EVAL if step % 4 == 3 else ModeKeys.TRAIN


def write(out, steps, workers, tensors):
    from smdebug.core.collection_manager import CollectionManager
    from smdebug.core.reductions import get_numpy_reduction
    from smdebug.core.writer import FileWriter

    shutil.rmtree(out, ignore_errors=True)
    names = [f"layer{i // 2}/{'weight' if i % 2 == 0 else 'bias'}_{i}" for i in range(tensors)]
    wnames = [f"worker_{w}" for w in range(workers)]
    cm = CollectionManager()
    cm.add("default")
    cm.get("default").tensor_names = set(names)
    cm.add("weights")
    cm.get("weights").include("weight")
    cm.set_num_workers(workers)
    for w in wnames:
        cm.export(out, f"{w}_collections.json")
    rng = np.random.default_rng(0)
    data = [rng.standard_normal(256).astype(np.float32) for _ in range(8)]
    counters = {}
    t0 = time.perf_counter()
    for s in range(steps):
        mode = mode_of(s)
        ms = counters.get(mode, 0)
        counters[mode] = ms + 1
        for wi, w in enumerate(wnames):
            with FileWriter(trial_dir=out, step=s, worker=w) as fw:
                for i, n in enumerate(names):
                    arr = data[(s + wi + i) % 8]
                    fw.write_tensor(tdata=arr, tname=n, mode=mode, mode_step=ms)
                    if s % 2 == 0:
                        for op, ab in REDUCTIONS:
                            v = get_numpy_reduction(op, arr, ab)
                            red = f"smdebug/reductions/{'abs_' if ab else ''}{op}/{n}"
                            fw.write_tensor(tdata=np.array([v]), tname=red, mode=mode, mode_step=ms)
    elapsed = time.perf_counter() - t0
    open(os.path.join(out, "training_job_end.ts"), "w").close()
    return {"write_s": elapsed}


def read(path):
    from smdebug.trials import create_trial

    res = {}
    t0 = time.perf_counter()
    tr = create_trial(path)
    steps = tr.steps()
    names = tr.tensor_names()
    workers = tr.workers()
    res["open_list_s"] = time.perf_counter() - t0
    res["counts"] = [len(steps), len(names), len(workers)]
    t = tr.tensor(names[0])
    t0 = time.perf_counter()
    vals = t.values()
    res["values_s"] = time.perf_counter() - t0
    res["values_n"] = len(vals)
    # each read below starts from a freshly opened trial (opening not timed), so that no read is
    # served from what an earlier one fetched
    tr = create_trial(path)
    t = tr.tensor(names[0])
    t0 = time.perf_counter()
    n_red = 0
    for s in t.steps():
        n_red += len(t.reduction_values(s))
    res["reductions_s"] = time.perf_counter() - t0
    res["reductions_n"] = n_red
    last = steps[-1]
    tr = create_trial(path)
    tr.steps()
    t0 = time.perf_counter()
    n_last = 0
    for n in names:
        tn = tr.tensor(n)
        for w in workers:
            tn.value(last, worker=w)
            n_last += 1
    res["last_step_s"] = time.perf_counter() - t0
    res["last_step_n"] = n_last
    # a digest so the two implementations can be checked to read the same numbers
    res["checksum"] = float(sum(float(np.asarray(v, dtype=np.float64).sum()) for v in vals.values()))
    return res


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "write":
        out = write(sys.argv[2], *(int(x) for x in sys.argv[3:6]))
    elif cmd == "read":
        out = read(sys.argv[2])
    else:
        raise SystemExit(__doc__)
    print(json.dumps(out))
