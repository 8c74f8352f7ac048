"""Trial.read and Trial.hold: the trial's one batched read of records (what Tensor.value(s),
RequiredTensors, the built-in rules and the command line read through), locally and on S3."""

import numpy as np
import pytest

import trialgen as tg
from smdebug.exceptions import EventFileCorrupt, TensorUnavailableForStep
from smdebug.trials import StepValue, ValueKey, create_trial

W = tg.workers(2)
STEPS = [0, 1, 2, 3]


@pytest.fixture(scope="module")
def trial_root(module_root):
    root = module_root / "read"
    tg.write_collections(root, W)
    for s in STEPS:
        for w in W:
            red = {("w", "mean", True): float(s)} if s % 2 == 0 else None
            tensors = {"w": tg.value("w", s, w), "b": tg.value("b", s, w, shape=(5,), dtype=np.float64)}
            if s == 3:  # step 3 saves no "w"
                tensors = {"b": tensors["b"]}
            tg.write_step(root, s, w, tensors=tensors, reductions=red)
    tg.end_job(root)
    return root


def test_read_gives_what_tensor_value_gives_for_every_worker(trial_root):
    trial = create_trial(trial_root.url)
    got = trial.read([ValueKey("w", s) for s in STEPS] + [ValueKey("b", 1, "worker_1"), ValueKey("nope", 1)])
    assert [(v.name, v.step, v.worker) for v in got] == [("w", s, w) for s in (0, 1, 2) for w in W] + [
        ("b", 1, "worker_1")
    ]  # step 3 has no "w", "nope" was never saved: left out
    for v in got:
        assert isinstance(v, StepValue) and not v.from_reduction
        ref = trial.tensor(v.name).value(v.step, worker=v.worker)
        assert ref.dtype == v.value.dtype and ref.shape == v.value.shape
        np.testing.assert_array_equal(v.value, ref)
    assert trial._reader.decoder.learnt  # the short path read them


def test_read_a_saved_reduction_or_the_raw_value(trial_root):
    trial = create_trial(trial_root.url)
    got = trial.read([ValueKey("w", s, "worker_0") for s in (0, 1)], reduction="mean", abs=True)
    assert [(v.step, v.from_reduction) for v in got] == [(0, True), (1, False)]
    np.testing.assert_allclose(got[0].value, [0.0])
    np.testing.assert_array_equal(got[1].value, trial.tensor("w").value(1))


def test_tensor_values_are_the_callers_to_change(trial_root):
    trial = create_trial(trial_root.url)
    t = trial.tensor("w")
    values = t.values()
    assert sorted(values) == [0, 1, 2]
    for v in values.values():
        assert v.flags.writeable
    keep = values[1].copy()
    values[1][...] = 0
    np.testing.assert_array_equal(t.value(1), keep)  # a new read, not the changed array


def test_hold_keeps_values_until_release(trial_root):
    trial = create_trial(trial_root.url)
    held = trial.hold({"w": [0, 2], "b": [3]})
    t = trial.tensor("w")
    assert t.cache and len(t._values) == 2
    np.testing.assert_array_equal(t.value(2), tg.value("w", 2, "worker_0"))
    held.release()
    assert not t.cache and not t._values
    with pytest.raises(TensorUnavailableForStep):
        trial.hold({"w": [3]})


def test_read_refuses_a_payload_whose_crc_does_not_match(root):
    tg.write_collections(root, W[:1])
    for s in (0, 1):
        tg.write_step(root, s, "worker_0", tensors={"w": np.full(8, float(s), np.float32)})
    tg.end_job(root)
    trial = create_trial(root.url)
    f = trial._index.by_step.get(1)["worker_0"]
    start, length = f.location(f.layout.tensors["w"][0], "")
    root.flip_byte(f.event_key, start + length - 8)  # inside the content: the framing stays intact
    assert trial.read([ValueKey("w", 0)])[0].value[0] == 0.0
    with pytest.raises(EventFileCorrupt, match=r"step 1, tensor 'w'.*payload CRC32C"):
        trial.read([ValueKey("w", 1)])
    with pytest.raises(EventFileCorrupt, match="payload CRC32C"):
        trial.tensor("w").value(1)
