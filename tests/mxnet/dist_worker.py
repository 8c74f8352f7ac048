"""One process of a distributed MXNet job on 127.0.0.1 (ps-lite: scheduler, server or worker, from
DMLC_ROLE). A worker trains runs.mlp with a 'dist_sync' kvstore and two hooks on it, saving into
OUT_DIR/all with include_workers="all" and into OUT_DIR/one with include_workers="one"; it prints
JSON: its kvstore rank, the hooks' worker names and its mean losses. usage: dist_worker.py OUT_DIR"""

from __future__ import annotations

import gc
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mxnet as mx  # noqa: E402  (a scheduler or server runs its loop in this import, then exits)


def main(out_dir: str) -> dict:
    import runs
    from mxnet import gluon

    import smdebug.mxnet as smd

    net, loss_fn = runs.mlp()
    x, y = runs.digits(images=False)
    hooks = {
        w: smd.Hook(
            out_dir=f"{out_dir}/{w}",
            include_workers=w,
            include_collections=["losses", "weights"],
            save_config=smd.SaveConfig(save_interval=1),
        )
        for w in ("all", "one")
    }
    hooks["one"].register_block(net)
    hooks["one"].register_block(loss_fn)
    hooks["one"].set_mode(smd.modes.TRAIN)
    kv = mx.kv.create("dist_sync")
    real_trainer = gluon.Trainer
    gluon.Trainer = lambda params, opt, opt_args: real_trainer(params, opt, opt_args, kvstore=kv)
    try:  # runs.train makes its Trainer on this kvstore; each worker trains on its own rows
        rec = runs.train(hooks["all"], net, loss_fn, x[kv.rank * 100 :], y[kv.rank * 100 :], "TTT", batch=16)
    finally:
        gluon.Trainer = real_trainer
    for hook in hooks.values():
        hook.close()
    return {
        "rank": kv.rank,
        "num_workers": kv.num_workers,
        "loss": rec.loss,
        "workers": {w: hook.worker for w, hook in hooks.items()},
    }


if os.environ.get("DMLC_ROLE") == "worker":
    result = main(sys.argv[1])
    gc.collect()  # the kvstore goes now: it tells the server and the scheduler that this worker is done
    print(json.dumps(result))
