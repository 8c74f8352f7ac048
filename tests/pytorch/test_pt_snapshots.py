"""When the hook's copies are taken: parameters and gradients are copied on a snapshot thread
while the model runs, and the hook must wait for them before anything can change the tensors.

The snapshot thread is replaced by a pool whose copies run only when the training thread waits
for them (or, too late, when the writer needs them), so these tests see exactly where the hook
waits, whatever the thread timing would have been.
"""

from __future__ import annotations

import threading

import numpy as np
import torch
import torch.nn as nn
from ptutil import GRADS, PARAMS, data, make_hook, mlp, named_params, snap

import smdebug.pytorch as smd
from smdebug.trials import create_trial

EVERY = smd.SaveConfig(save_interval=1)


class _LazyFuture:
    def __init__(self, fn, args):
        self._fn, self._args = fn, args
        self._lock = threading.Lock()
        self._done = False
        self._exc = None

    def _run(self):
        with self._lock:
            if not self._done:
                self._done = True
                try:
                    self._fn(*self._args)
                except Exception as exc:  # noqa: BLE001 - handed to whoever waits
                    self._exc = exc

    def result(self):
        self._run()
        if self._exc is not None:
            raise self._exc

    def exception(self):
        self._run()
        return self._exc


class LazyPool:
    """Runs a submitted copy when someone waits for it, and everything submitted before it."""

    def __init__(self):
        self.futures: list = []

    def submit(self, fn, *args):
        f = _LazyFuture(fn, args)
        self.futures.append(f)
        return _Ordered(self.futures, len(self.futures))

    def shutdown(self):
        for f in self.futures:
            f._run()


class _Ordered:
    def __init__(self, futures, n):
        self._futures, self._n = futures, n

    def _run_upto(self):
        for f in self._futures[: self._n]:
            f._run()
        return self._futures[self._n - 1]

    def result(self):
        return self._run_upto().result()

    def exception(self):
        return self._run_upto().exception()


def _lazy_hook(path, model, loss_fn, **kwargs):
    hook = make_hook(path, model, loss_fn, save_config=EVERY, **kwargs)
    hook.adapter.copier._pool = LazyPool()
    hook.adapter.START_AT = 0  # every deferred batch goes to the pool (these models are small)
    return hook


def test_gradients_are_saved_before_clipping_changes_them(tmp_path):
    model, loss_fn = mlp(), nn.CrossEntropyLoss()
    hook = _lazy_hook(tmp_path / "t", model, loss_fn, include_collections=["gradients"])
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = data()
    params = named_params(model)
    expected = []
    for _ in range(2):
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        expected.append({f"gradient/{n}": snap(p.grad) for n, p in params.items()})
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1e-3)
        opt.step()
    hook.close()
    trial = create_trial(str(tmp_path / "t"))
    for s in range(2):
        for name in GRADS:
            got = trial.tensor(name).value(s)
            np.testing.assert_array_equal(got, expected[s][name], err_msg=f"{name}@{s}")
    # the clipping did change the gradients
    assert not np.array_equal(snap(model[0].weight.grad), expected[1]["gradient/Sequential_0.weight"])


def test_gradients_are_saved_before_an_in_place_zero_grad(tmp_path):
    """zero_grad(set_to_none=False) zeroes the same gradient tensors in place."""
    model, loss_fn = mlp(), nn.CrossEntropyLoss()
    hook = _lazy_hook(tmp_path / "t", model, loss_fn, include_collections=["gradients"])
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = data()
    expected = []
    for _ in range(2):
        loss_fn(model(x), y).backward()
        expected.append(snap(model[2].weight.grad))
        opt.zero_grad(set_to_none=False)
    hook.close()
    g = create_trial(str(tmp_path / "t")).tensor("gradient/Sequential_2.weight")
    for s in range(2):
        np.testing.assert_array_equal(g.value(s), expected[s])
    assert np.abs(expected[0]).sum() > 0


def test_weights_are_saved_before_a_manual_update_after_backward(tmp_path):
    """No optimizer: the parameters change right after backward, and no gradient is saved."""
    model, loss_fn = mlp(), nn.CrossEntropyLoss()
    hook = _lazy_hook(tmp_path / "t", model, loss_fn, include_collections=["weights", "biases"])
    x, y = data()
    params = named_params(model)
    expected = []
    for _ in range(3):
        expected.append({n: snap(p) for n, p in params.items()})
        model.zero_grad()
        loss_fn(model(x), y).backward()
        with torch.no_grad():
            for p in model.parameters():
                p.sub_(0.5 * p.grad)
    hook.close()
    trial = create_trial(str(tmp_path / "t"))
    for s in range(3):
        for name in PARAMS:
            np.testing.assert_array_equal(trial.tensor(name).value(s), expected[s][name], err_msg=f"{name}@{s}")
    assert not np.array_equal(expected[0]["Sequential_0.weight"], expected[1]["Sequential_0.weight"])


def test_weights_are_saved_before_the_optimizer_step(tmp_path):
    """The optimizer step is the first change when nothing runs backward hooks in between."""
    model, loss_fn = mlp(), nn.CrossEntropyLoss()
    hook = _lazy_hook(tmp_path / "t", model, loss_fn, include_collections=["weights"])
    model[0].weight.requires_grad_(False)  # frozen: no gradient hook ever fires for it
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    x, y = data()
    expected = []
    for _ in range(2):
        expected.append(snap(model[2].weight))
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    hook.close()
    w = create_trial(str(tmp_path / "t")).tensor("Sequential_2.weight")
    for s in range(2):
        np.testing.assert_array_equal(w.value(s), expected[s])
    assert not np.array_equal(expected[0], expected[1])


def test_a_step_handed_over_without_a_sync_has_its_deferred_copies_taken_first(tmp_path):
    """Small deferred batches wait for the next hand-over to the copy thread (BatchedAdapter.START_AT);
    a step that ends by set_mode, with no optimizer step or backward in between, still hands the
    writer complete copies: taken before set_mode returns, so a change right after it is not saved."""
    model, loss_fn = mlp(), nn.CrossEntropyLoss()
    rc = smd.ReductionConfig(reductions=["max"], save_raw_tensor=True)
    hook = _lazy_hook(tmp_path / "t", model, loss_fn, include_collections=["weights"], reduction_config=rc)
    x, _ = data()
    expected = []
    for _ in range(2):
        expected.append(snap(model[0].weight))
        with torch.no_grad():
            model(x)
        hook.set_mode(smd.modes.EVAL if hook.mode != smd.modes.EVAL else smd.modes.TRAIN)
        with torch.no_grad():
            model[0].weight.add_(1.0)
    hook.close()
    w = create_trial(str(tmp_path / "t")).tensor("Sequential_0.weight")
    assert w.steps() == [0, 1]
    for s in range(2):
        np.testing.assert_array_equal(w.value(s), expected[s])
        assert float(w.reduction_value(s, "max")) == float(expected[s].max())
