"""Where a Keras step's extra main-thread time goes with the KerasHook, per entry point.

bench_keras.py's model and data (MLP 256-512-512-512-10, batch 128, TF on one thread). Each entry
point on the main thread is timed with ``time.thread_time`` (CPU) and ``time.perf_counter``
(wall), without a profiler: the hook's batch-begin and batch-end callbacks, and the parts of the
train function the hook installs (``capture.DualFunction``): its ``wants_capture``, the compiled
function it runs (the instrumented one, which also returns the gradients, or the plain one) and
its ``receive`` (the captured gradients handed to the hook). Without the hook, the model's own
train function is timed the same way. Fresh processes, alternating hookless and hooked, minimum
over rounds of each figure.

usage: python bench/keras_parts.py CONFIG [STEPS] [ROUNDS]   CONFIG: raw | reductions
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CHILD = r"""
import json, os, shutil, sys, tempfile, time
sys.path.insert(0, sys.argv[3])
from bench_keras import keras_model
config, steps = sys.argv[1], int(sys.argv[2])
out_dir = tempfile.mkdtemp(prefix="smdebug-keras-parts-")
model, x, y = keras_model(steps)
from benchutil import EntryTimes
tt, pc = time.thread_time_ns, time.perf_counter_ns
times = EntryTimes()
timed = times.timed

cbs = []
if config != "none":
    import smdebug.tensorflow as smd
    kw = {"include_collections": ["weights", "biases", "gradients", "losses"], "save_config": smd.SaveConfig(save_interval=1)}
    if config == "reductions":
        kw["reduction_config"] = smd.ReductionConfig(reductions=["min", "max", "mean", "std"], abs_reductions=["mean"],
                                                     norms=["l2"])
    hook = smd.KerasHook(out_dir, **kw)
    hook.on_train_batch_begin = timed("batch begin (callback)", hook.on_train_batch_begin)
    hook.on_train_batch_end = timed("batch end (callback)", hook.on_train_batch_end)
    cbs = [hook]
model.fit(x[:128 * 20], y[:128 * 20], batch_size=128, epochs=1, callbacks=cbs, verbose=0)  # tracing
if cbs:
    try:  # the one-pass moments kernel (where the tree has it): compiled before any step is timed
        from smdebug.core.tensors import moments_kernel
        moments_kernel.wait()
    except ImportError:
        pass
fn = model.train_function
if getattr(fn, "_smdebug", False):
    fn.plain = timed("compiled step, plain", fn.plain)
    fn.instrumented = timed("compiled step, instrumented", fn.instrumented)
    fn.wants_capture = timed("wants_capture", fn.wants_capture)
    fn.receive = timed("receive (gradients)", fn.receive)
else:
    model.train_function = timed("compiled step, plain", fn)
times.acc.clear()
c0, w0 = tt(), pc()
model.fit(x, y, batch_size=128, epochs=1, callbacks=cbs, verbose=0, shuffle=False)
out = {"fit (main thread)": [(tt() - c0) / steps / 1e3, (pc() - w0) / steps / 1e3]}
out.update(times.per_step(steps))
if cbs:
    hook.close()
shutil.rmtree(out_dir, ignore_errors=True)
print(json.dumps(out))
"""


def main() -> None:
    from benchutil import alternate, machine

    config = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    runs = alternate(
        CHILD,
        [str(steps), HERE],
        ("none", config),
        rounds,
        dict(os.environ, OMP_NUM_THREADS="1", TF_CPP_MIN_LOG_LEVEL="3"),
    )
    print(f"{config}: {steps} steps x {rounds} rounds, minimum over rounds, us per step; {machine()}")
    print(f"{'':<32}{'CPU':>9}{'wall':>9}{'calls':>7}")
    for cfg in ("none", config):
        print(cfg)
        for label in runs[cfg][0]:
            cpu = min(r[label][0] for r in runs[cfg])
            wall = min(r[label][1] for r in runs[cfg])
            calls = f"{runs[cfg][0][label][2]:7.2f}" if len(runs[cfg][0][label]) > 2 else ""
            print(f"  {label:<30}{cpu:9.1f}{wall:9.1f}{calls}")


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    main()
