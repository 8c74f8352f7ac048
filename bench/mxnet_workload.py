"""One timed MXNet Gluon training run for bench_mxnet_hook.py, with whatever smdebug is importable.

usage: mxnet_workload.py CONFIG OUT_DIR STEPS   (CONFIG: none | raw | reductions)
prints one JSON line: wall_s, thread_cpu_s (main thread), proc_cpu_s (all threads: MXNet's
engine, the hook's writer), threads_cpu_s (by thread) of the training loop + hook.close(), and
steps. SMDEBUG_BENCH_PROFILE=FILE: cProfile of the timed loop dumped to FILE."""

from __future__ import annotations

import json
import sys

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon, nd
from mxnet.gluon import nn

from benchutil import CpuClock, maybe_profiled


def main(config: str, out_dir: str, steps: int) -> None:
    mx.random.seed(0)
    with mx.name.NameManager():
        net = nn.HybridSequential()
        with net.name_scope():
            for _ in range(3):
                net.add(nn.Dense(512, activation="relu"))
            net.add(nn.Dense(10))
        loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    net.initialize(mx.init.Xavier(), ctx=mx.cpu())
    hook = None
    if config != "none":
        import smdebug.mxnet as smd

        rc = None
        if config == "reductions":
            # no std / variance: 1.0.34's MXNet hook raises on them (its numpy fallback rejects NDArrays)
            rc = smd.ReductionConfig(reductions=["min", "max", "mean"], abs_reductions=["mean"], norms=["l2"])
        hook = smd.Hook(
            out_dir=out_dir,
            save_config=smd.SaveConfig(save_interval=1),
            reduction_config=rc,
            include_collections=["weights", "biases", "gradients", "losses"],
        )
        hook.register_block(net)
        hook.register_block(loss_fn)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01})
    rng = np.random.RandomState(0)
    batches = [(nd.array(rng.randn(128, 256)), nd.array(rng.randint(0, 10, 128))) for _ in range(8)]
    for x, y in batches[:2]:  # warm-up without timing (deferred initialisation, first allocations)
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(128)
    nd.waitall()
    clock = CpuClock()
    clock.start()
    with maybe_profiled():
        for i in range(steps):
            x, y = batches[i % len(batches)]
            with autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()
            trainer.step(128)
        if hook is not None:
            hook.close()
        nd.waitall()
    print(json.dumps({**clock.stop(), "steps": steps}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
