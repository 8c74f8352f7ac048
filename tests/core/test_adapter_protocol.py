"""The hook/adapter contract (smdebug.core.tensors.adapter.TensorAdapter), pinned: a minimal numpy adapter
written here drives a BaseHook end to end through the protocol only, and the trial reads back
exactly what was saved; each call comes from the thread the contract names."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from smdebug.core.config.collection_defaults import CollectionDefaults
from smdebug.core.hook import BaseHook
from smdebug.core.reduction_config import ReductionConfig
from smdebug.core.save_config import SaveConfig
from smdebug.core.stop_request import write_stop_request
from smdebug.core.tensors.adapter import NumpyAdapter, TensorAdapter
from smdebug.trials import create_trial


class _Later:
    """A deferred snapshot: copied at end_deferred, on another thread."""

    def __init__(self, live):
        self.live, self.copy = live, None


class ListAdapter:
    """The TensorAdapter protocol over numpy arrays, written from its docstrings alone."""

    def __init__(self):
        self.calls: list[tuple[str, str]] = []  # (method, thread name)
        self._deferring = False
        self._later: list[_Later] = []
        self._threads: list[threading.Thread] = []

    def _log(self, name):
        self.calls.append((name, threading.current_thread().name))

    def size(self, value):
        self._log("size")
        return value.size

    def shape(self, value):
        return value.shape

    def is_bool(self, value):
        return value.dtype == bool

    def snapshot(self, value):
        self._log("snapshot")
        if self._deferring:
            self._later.append(_Later(value))
            return self._later[-1]
        return value.copy()

    def reductions_need_snapshot(self, value):
        return True

    def reductions(self, value, snap, ops):
        self._log("reductions")
        return [(snap, op, is_abs) for op, is_abs in ops]  # computed in materialize

    def begin_deferred(self):
        self._log("begin_deferred")
        self._deferring = True

    def end_deferred(self):
        self._log("end_deferred")
        self._deferring = False
        batch, self._later = self._later, []

        def copy():
            for d in batch:
                d.copy = d.live.copy()

        t = threading.Thread(target=copy, name="test-copier")
        t.start()
        self._threads.append(t)

    def sync(self):
        self._log("sync")
        for t in self._threads:
            t.join()
        self._threads.clear()

    def materialize(self, objs, held=None):
        self._log("materialize")
        out = []
        for o in objs:
            if isinstance(o, tuple):
                snap, op, is_abs = o
                data = snap.copy if isinstance(snap, _Later) else snap
                data = np.abs(data) if is_abs else data
                out.append(np.asarray(getattr(np, {"mean": "mean", "max": "max"}[op])(data)))
            else:
                out.append(o.copy if isinstance(o, _Later) else o)
            if held is not None:
                held.append(out[-1])
        return out

    def release(self, held):
        self._log(f"release:{len(held)}")

    def shutdown(self):
        self._log("shutdown")


class ArrayHook(BaseHook):
    """The glue of a framework whose tensors are numpy arrays: a step saves its parameters
    (deferred) and their gradients."""

    collection_defaults = CollectionDefaults(
        created={"all": None, "default": None, "weights": "^w", "gradients": "^gradient"},
        include=("weights", "gradients"),
    )
    make_adapter = ListAdapter

    def train_step(self, params: dict, grads: dict) -> None:
        self.adapter.sync()
        self._begin_step()
        if self.saving_this_step():
            self._save_deferred(params.items())
            for name, g in grads.items():
                self._save_for_tensor(self.GRADIENT_PREFIX + name, g)


def test_the_adapter_protocol_is_what_core_uses():
    assert isinstance(ListAdapter(), TensorAdapter)
    assert isinstance(NumpyAdapter(), TensorAdapter)


def test_a_numpy_adapter_drives_a_hook_end_to_end(tmp_path):
    rc = ReductionConfig(reductions=["mean"], abs_reductions=["max"], save_raw_tensor=True)
    hook = ArrayHook(out_dir=str(tmp_path / "t"), save_config=SaveConfig(save_interval=1), reduction_config=rc)
    w = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5
    expected = []
    for step in range(3):
        g = np.full((2, 3), step - 1.5, dtype=np.float32)
        hook.train_step({"w": w}, {"w": g})
        expected.append((w.copy(), g.copy()))
        hook.adapter.sync()  # before the "optimizer" changes the values in place
        w -= 0.5 * g
        g[...] = 99.0
    hook.close()

    trial = create_trial(str(tmp_path / "t"))
    assert trial.steps() == [0, 1, 2]
    assert trial.tensor_names() == ["gradient/w", "w"]
    for step, (w_s, g_s) in enumerate(expected):
        for name, arr in (("w", w_s), ("gradient/w", g_s)):
            t = trial.tensor(name)
            np.testing.assert_array_equal(t.value(step), arr)
            assert t.reduction_value(step, "mean") == np.mean(arr)
            assert t.reduction_value(step, "max", abs=True) == np.max(np.abs(arr))

    calls = hook.adapter.calls
    main = threading.main_thread().name
    by_thread = {}
    for name, thread in calls:
        by_thread.setdefault(name.split(":")[0], set()).add(thread)
    for method in ("size", "snapshot", "reductions", "begin_deferred", "end_deferred", "sync", "shutdown"):
        assert by_thread[method] == {main}, method
    assert by_thread["materialize"] == by_thread["release"] == {"smdebug-writer"}
    # one materialize per saved step, each followed by the release of what it held (6 values a tensor)
    written = [c for c, _t in calls if c == "materialize" or c.startswith("release")]
    assert written == ["materialize", "release:6"] * 3
    assert calls[-1][0] == "shutdown"


def test_stop_requested_writes_what_the_hook_holds_and_answers_once(tmp_path):
    hook = ArrayHook(out_dir=str(tmp_path / "t"), save_config=SaveConfig(save_interval=1))
    hook.stop_watcher.interval = 0.0  # look at every step boundary
    w = np.ones(3, dtype=np.float32)
    for _ in range(2):
        assert hook.stop_requested() is None
        hook.train_step({"w": w}, {})
    write_stop_request(hook.store, "ExplodingTensor", 7, "nan")
    req = hook.stop_requested()
    assert (req.rule, req.step, req.reason) == ("ExplodingTensor", 7, "nan")
    # written before the request is handed back, not at close
    assert create_trial(str(tmp_path / "t")).steps() == [0, 1]
    assert hook.stop_requested() is None
    hook.close()


def test_options_are_declared_once(tmp_path):
    import inspect

    from smdebug.core.config.hook_options import HookOptions

    params = list(inspect.signature(ArrayHook).parameters)
    assert params == list(inspect.signature(HookOptions).parameters)
    with pytest.raises(TypeError, match="ArrayHook.*'save_everything'"):
        ArrayHook(out_dir=str(tmp_path / "t"), save_everything=True)


def test_a_worker_named_by_its_device_writes_flat_keys(tmp_path):
    """A TensorFlow-style device name is serialised as smdebug 1.0.34 does, in every key."""
    from smdebug.core import locations

    device = "/job:worker/replica:0/task:0/device:GPU:0"
    flat = "_job-worker_replica-0_task-0_device-GPU-0"
    assert locations.serialize_worker(device) == flat
    assert locations.collections_key(device) == f"collections/000000000/{flat}_collections.json"
    assert locations.event_key(3, device) == f"events/000000000003/000000000003_{flat}.tfevents"
    assert locations.index_key(3, device) == f"index/000000000/000000000003_{flat}.json"
    assert locations.worker_name(2) == "worker_2" and locations.is_chief_worker(locations.CHIEF_WORKER)

    class DeviceHook(ArrayHook):
        def _get_worker_name(self):
            return device

    hook = DeviceHook(out_dir=str(tmp_path / "t"), save_config=SaveConfig(save_interval=1), include_workers="all")
    hook.train_step({"w": np.ones(2, dtype=np.float32)}, {})
    hook.close()
    out = tmp_path / "t"
    assert (out / locations.collections_key(device)).is_file()
    assert (out / locations.index_key(0, device)).is_file()
    trial = create_trial(str(out))
    assert trial.workers() == [device]
    np.testing.assert_array_equal(trial.tensor("w").value(0, worker=device), np.ones(2, dtype=np.float32))


def test_numpy_adapter_makes_no_histogram_of_bool_or_text(tmp_path):
    """Text tensors (XGBoost's trees/* columns) and booleans are saved raw, without a histogram."""
    ad = NumpyAdapter()
    assert [
        ad.is_bool(v)
        for v in (np.array([True]), np.array(["f0", "Leaf"]), np.array([b"x"]), np.array([1.5]), np.arange(3), 2.0)
    ] == [True, True, True, False, False, False]
    hook = BaseHook(
        out_dir=str(tmp_path / "t"), export_tensorboard=True, save_all=True, save_config=SaveConfig(save_interval=1)
    )
    hook._begin_step()
    text, flags, nums = np.array(["f0", "Leaf", "nan"]), np.array([True, False]), np.array([0.5, 1.5])
    for name, value in (("text", text), ("flags", flags), ("nums", nums)):
        hook._save_for_tensor(name, value)
    hook.close()
    trial = create_trial(str(tmp_path / "t"))
    for name, value in (("text", text), ("flags", flags), ("nums", nums)):
        np.testing.assert_array_equal(trial.tensor(name).value(0), value)
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    histograms = []
    for ev in sorted((tmp_path / "t" / "tensorboard").rglob("*tfevents*")):
        acc = EventAccumulator(str(ev))
        acc.Reload()
        histograms += acc.Tags()["histograms"]
    assert histograms and all(t.endswith("/nums") for t in histograms)
