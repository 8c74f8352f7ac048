"""Keras: train and test batches, epochs, on the profiler's timeline (KerasHook(profiler_config=...))."""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
pytest.importorskip("tensorflow", reason="the tensorflow extra is not installed")
pytest.importorskip("psutil")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tfhook"))

import keras  # noqa: E402
import kerasutil  # noqa: E402
from timelines import read_events, steps_of  # noqa: E402

import smdebug.tensorflow as smd  # noqa: E402
from smdebug.profiler import ProfilerConfig  # noqa: E402
from smdtest import run_json  # noqa: E402

PEER_READ = Path(__file__).with_name("peer_read.py")


def test_fit_records_train_and_test_batches_inside_epochs(tmp_path, peer):
    x, y = kerasutil.digits(160)
    model = kerasutil.compile_sgd(kerasutil.sequential())
    root = tmp_path / "prof"
    hook = smd.KerasHook(
        str(tmp_path / "run"), profiler_config=ProfilerConfig(local_path=str(root), interval_millis=100)
    )
    model.fit(x, y, batch_size=32, epochs=2, validation_data=(x[:64], y[:64]), callbacks=[hook], verbose=0)
    hook.close()
    smd.del_hook()
    events = read_events(root)
    train, evals = steps_of(events), steps_of(events, "Step:ModeKeys.EVAL")
    epochs = sorted((e for e in events if e["phase"] == "Epoch"), key=lambda e: e["start"])
    assert sorted(train) == list(range(10)) and sorted(evals) == list(range(4))
    assert [e["args"]["epoch"] for e in epochs] == ["0", "1"]
    for s, e in train.items():  # steps 0-4 in epoch 0, 5-9 in epoch 1
        ep = epochs[s // 5]
        assert ep["start"] <= e["start"] <= e["end"] <= ep["end"]
    for s, e in evals.items():  # validation runs at the end of each epoch, after its training steps
        ep = epochs[s // 2]
        assert train[5 * (s // 2) + 4]["end"] <= e["start"] and e["end"] <= ep["end"]
    ordered = sorted(list(train.values()) + list(evals.values()), key=lambda e: e["start"])
    assert all(a["end"] <= b["start"] for a, b in zip(ordered, ordered[1:]))  # steps do not overlap
    theirs = run_json(peer, PEER_READ, root, "framework")["events"]
    assert sorted((e[0], e[1], e[2], e[3]) for e in theirs) == sorted(
        (e["phase"], e["name"], e["start"], e["end"]) for e in events
    )
    assert list(Path(root, "system", "incremental").rglob("*.algo-1.json"))


def _slow_dataset(x, y, wait_s: float, batch: int = 32, unknown_length: bool = False):
    """Batches that each take ``wait_s`` to produce (a slow input pipeline, no prefetching)."""
    import tensorflow as tf

    def slow(a):
        time.sleep(wait_s)  # the workload: a slow reader, not synchronisation
        return a

    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(batch)
    ds = ds.map(lambda a, b: (tf.py_function(slow, [a], tf.float32), b))
    ds = ds.map(lambda a, b: (tf.ensure_shape(a, [None, 64]), b))
    if unknown_length:  # Keras learns the epoch's length when the data runs out
        ds = ds.filter(lambda a, b: True)
    opts = tf.data.Options()
    opts.autotune.enabled = False
    opts.experimental_optimization.inject_prefetch = False  # each batch is read when asked for
    return ds.with_options(opts)


def test_the_wait_for_each_batch_is_a_data_iterator_event_inside_its_step(tmp_path, peer):
    x, y = kerasutil.digits(160)
    root = tmp_path / "prof"
    model = kerasutil.compile_sgd(kerasutil.sequential())
    hook = smd.KerasHook(
        str(tmp_path / "run"), profiler_config=ProfilerConfig(local_path=str(root), system_metrics=False)
    )
    model.fit(
        _slow_dataset(x, y, 0.02),
        epochs=2,
        validation_data=_slow_dataset(x[:64], y[:64], 0.0),
        callbacks=[hook],
        verbose=0,
    )
    hook.close()
    smd.del_hook()
    events = read_events(root)
    train, evals = steps_of(events), steps_of(events, "Step:ModeKeys.EVAL")
    waits = [e for e in events if e["phase"] == "DataIterator"]
    assert {e["name"] for e in waits} == {"IteratorGetNextOp::DoCompute"}
    # one wait a step (the last one of each epoch also finds the data exhausted), nested in its step
    by_step: dict = {}
    for e in waits:
        by_step.setdefault(e["args"]["step_num"], []).append(e)
    assert sorted(train) == list(range(10)) and sorted(evals) == list(range(4))
    for s, step in train.items():
        inside = [e for e in by_step[str(s)] if step["start"] <= e["start"] and e["end"] <= step["end"]]
        assert inside and inside[0]["end"] - inside[0]["start"] >= 19_000  # the reader's 20 ms
    eval_waits = [
        e["end"] - e["start"]
        for e in waits
        if e["phase"] == "DataIterator"
        and any(v["start"] <= e["start"] and e["end"] <= v["end"] for v in evals.values())
    ]
    assert len(eval_waits) == 4 and statistics.median(eval_waits) < 19_000  # validation data is not slow
    theirs = run_json(peer, PEER_READ, root, "framework")["events"]
    assert sum(e[0] == "DataIterator" for e in theirs) == len(waits)


def test_timing_the_input_leaves_training_unchanged_and_ends_an_epoch_of_unknown_length(tmp_path):
    import numpy as np

    x, y = kerasutil.digits(160)
    weights, begins = [], []
    for profiled in (False, True):
        model = kerasutil.compile_sgd(kerasutil.sequential())
        begun = []
        callbacks = [keras.callbacks.LambdaCallback(on_train_batch_begin=lambda b, logs, begun=begun: begun.append(b))]
        if profiled:
            cfg = ProfilerConfig(local_path=str(tmp_path / "prof"), system_metrics=False)
            callbacks.append(smd.KerasHook(str(tmp_path / "run"), profiler_config=cfg))
        hist = model.fit(_slow_dataset(x, y, 0.0, unknown_length=True), epochs=2, callbacks=callbacks, verbose=0)
        if profiled:
            callbacks[1].close()
            smd.del_hook()
        weights.append([w.numpy() for w in model.weights])
        begins.append(len(begun))
        assert len(hist.history["loss"]) == 2
    for a, b in zip(*weights):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    # Keras begins one batch more in an epoch whose end it learns by running out, in both paths
    assert begins[0] == begins[1] >= 10
    events = read_events(tmp_path / "prof")
    assert sorted(steps_of(events)) == list(range(begins[1]))
    assert sum(e["phase"] == "DataIterator" for e in events) == begins[1]


def test_detailed_profiling_runs_tensorflows_profiler_over_the_configured_steps(tmp_path):
    x, y = kerasutil.digits(160)
    root = tmp_path / "prof"
    model = kerasutil.compile_sgd(kerasutil.sequential())
    cfg = ProfilerConfig(local_path=str(root), system_metrics=False, detailed={"StartStep": 2, "NumSteps": 2})
    hook = smd.KerasHook(str(tmp_path / "run"), profiler_config=cfg)
    model.fit(x, y, batch_size=32, epochs=2, callbacks=[hook], verbose=0)
    hook.close()
    smd.del_hook()
    (folder,) = Path(root, "framework", "tensorflow", "detailed_profiling").glob("*/*")
    assert folder.name == "000000002" and len(folder.parent.name) == 10  # <YYYYMMDDHH>/<step:09d>
    (meta,) = folder.glob("*.metadata")
    node, start_us, end_us = meta.name[: -len(".metadata")].split("_")
    steps = steps_of(read_events(root))
    assert steps[2]["start"] <= int(start_us) <= steps[2]["end"]
    assert steps[3]["end"] <= int(end_us) <= steps[4]["end"]  # stopped when step 4 began
    planes = list(folder.glob("plugins/profile/*/*.xplane.pb"))
    assert planes and all(p.stat().st_size > 0 for p in planes)


def test_keras_profile_to_s3_uploads_the_tensorflow_trace(bucket, aws_env, boto_client):
    x, y = kerasutil.digits(160)
    model = kerasutil.compile_sgd(kerasutil.sequential())
    cfg = ProfilerConfig(system_metrics=False, detailed={"StartStep": 1, "NumSteps": 1})
    hook = smd.KerasHook(f"s3://{bucket}/keras", profiler_config=cfg)  # profiler: <out_dir>/profiler
    model.fit(x, y, batch_size=32, epochs=1, callbacks=[hook], verbose=0)
    hook.close()
    smd.del_hook()
    pages = boto_client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix="keras/profiler/")
    keys = [o["Key"][len("keras/profiler/") :] for page in pages for o in page.get("Contents", [])]
    detailed = [k for k in keys if k.startswith("framework/tensorflow/detailed_profiling/")]
    assert any(k.endswith(".xplane.pb") for k in detailed) and any(k.endswith(".metadata") for k in detailed)
    assert all(k.split("/")[4] == "000000001" for k in detailed)
    assert any(k.startswith("framework/pevents/") for k in keys) and "framework/training_job_end.ts" in keys
