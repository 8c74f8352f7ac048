"""Keras: train and test batches, epochs, on the profiler's timeline (KerasHook(profiler_config=...))."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
pytest.importorskip("tensorflow", reason="the tensorflow extra is not installed")
pytest.importorskip("psutil")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tfhook"))

import kerasutil  # noqa: E402
from timelines import read_events, steps_of  # noqa: E402

import smdebug.tensorflow as smd  # noqa: E402
from smdebug.profiler import ProfilerConfig  # noqa: E402
from smdtest import peer_python, run_json  # noqa: E402

PEER_READ = Path(__file__).with_name("peer_read.py")


def test_fit_records_train_and_test_batches_inside_epochs(tmp_path):
    x, y = kerasutil.digits(160)
    model = kerasutil.compile_sgd(kerasutil.sequential())
    root = tmp_path / "prof"
    hook = smd.KerasHook(str(tmp_path / "run"), profiler_config=ProfilerConfig(local_path=str(root), interval_millis=100))
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
    theirs = run_json(peer_python(), PEER_READ, root, "framework")["events"]
    assert sorted((e[0], e[1], e[2], e[3]) for e in theirs) == sorted(
        (e["phase"], e["name"], e["start"], e["end"]) for e in events)
    assert list(Path(root, "system", "incremental").rglob("*.algo-1.json"))
