"""The one-pass moments kernel (numba, optional): its moments equal torch's own within float32
rounding (min and max exactly), tensors it does not take (nan, inf, not contiguous, a view torch
will not give numpy) get torch's ops, it is used once compiled and never waited for, and without
numba the hook says so once and uses torch's ops."""

from __future__ import annotations

import logging
import math
import sys
import threading
import time

import numpy as np
import pytest
import torch

from smdebug.core.tensors import moments_kernel
from smdebug.pytorch.adapter import TorchAdapter, TorchOps

F32_MAX = float(torch.finfo(torch.float32).max)


def _cases():
    g = torch.Generator().manual_seed(5)
    big = torch.randn(512, 512, generator=g)
    return {
        "normal": torch.randn(300, 70, generator=g),
        "big": big,
        "large_mean": 1000 + 0.01 * torch.randn(5000, generator=g),
        "large_values": 1e30 * torch.randn(1000, generator=g),
        "positive": torch.rand(17, 33, generator=g) + 0.5,
        "negative": -torch.rand(40, generator=g) - 0.1,
        "one": torch.tensor([2.5]),
        "all_equal": torch.full((3000,), -1.75),
        "zeros": torch.zeros(20000),
        "negative_zeros": torch.tensor([-0.0, 0.0, -0.0]),
        "ints": torch.arange(-50, 77),
        "bfloat16": torch.randn(64, 64, generator=g).to(torch.bfloat16),
        "float16": torch.randn(300, generator=g).to(torch.float16),
        "float64": torch.randn(1000, 3, generator=g, dtype=torch.float64),
        "block_edge": torch.randn(2049, generator=g),  # two blocks of 1024 and one element
        "view": big[3:],  # a storage offset
        # handed to torch's ops
        "nan": torch.tensor([1.0, float("nan"), 3.0]),
        "inf": torch.tensor([1.0, float("inf"), 3.0]),
        "both_infs": torch.tensor([float("-inf"), 2.0, float("inf")]),
        "sum_overflows": torch.full((4,), F32_MAX / 2),
        "transposed": big.t(),
        "negative_bit": torch._neg_view(torch.randn(100, generator=g)),
    }


def _moments(ad: TorchAdapter, t: torch.Tensor, with_abs: bool) -> np.ndarray:
    x = TorchOps.reduction_input(t)
    return ad._moments([x], with_abs)[0].astype(np.float64)


def _torch_moments(t: torch.Tensor) -> np.ndarray:
    x = TorchOps.reduction_input(t)
    return TorchOps.moments([x], [x.abs()])[0].astype(np.float64)


@pytest.mark.parametrize("case", list(_cases()))
def test_kernel_moments_equal_torchs(kernel, case):
    t = _cases()[case]
    want = _torch_moments(t)
    ad = TorchAdapter()
    for with_abs in (True, False):
        got = _moments(ad, t, with_abs)
        if not with_abs:
            assert np.isnan(got[4])  # not asked for
            got[4] = want[4]
        np.testing.assert_array_equal(got[:2], want[:2])  # min and max exactly (nan and inf alike)
        finite = np.isfinite(want[2:])
        np.testing.assert_array_equal(got[2:][~finite], want[2:][~finite])
        x = TorchOps.reduction_input(t).double().reshape(-1).numpy()
        scale = np.array([np.abs(x).sum(), math.sqrt(float(np.dot(x, x))) if finite[1] else 0.0, np.abs(x).sum()])
        tol = 1e-5 * np.abs(want[2:]) + 1e-6 * scale  # as test_reductions_fused.py's, the sum's scale sum(|t|)
        assert np.all(np.abs(got[2:][finite] - want[2:][finite]) <= tol[finite]), (case, got, want)


def test_the_kernel_is_used_and_what_it_does_not_take_goes_to_torch(kernel, monkeypatch):
    calls = []
    moments = TorchOps.moments
    monkeypatch.setattr(
        TorchOps, "moments", staticmethod(lambda ts, abs_ts=None: calls.append(len(ts)) or moments(ts, abs_ts))
    )
    ad = TorchAdapter()
    ops = [("mean", True), ("l2", False), ("max", False)]
    t = torch.randn(100, 30)
    rows = ad._host_rows([t, torch.randn(7), t.t(), torch.tensor([1.0, float("nan")])], ops)
    assert calls == [2]  # the transposed one and the one with nan, in one call
    assert np.isnan(rows[3]).all()
    np.testing.assert_allclose(rows[2], rows[0], rtol=1e-6)  # t.t() by torch's ops, t by the kernel
    calls.clear()
    monkeypatch.setattr(moments_kernel, "kernel", lambda: None)  # not ready (or no numba)
    rows_torch = ad._host_rows([t], ops)
    assert calls == [1]
    np.testing.assert_allclose(rows_torch[0], rows[0], rtol=1e-6)


@pytest.fixture
def fresh(monkeypatch):
    """moments_kernel as before its first use (restored afterwards)."""
    monkeypatch.setattr(moments_kernel, "_kernel", None)
    monkeypatch.setattr(moments_kernel, "_thread", None)
    return moments_kernel


def test_without_numba_torch_ops_are_used_and_the_log_says_so_once(fresh, monkeypatch, caplog):
    caplog.set_level(logging.INFO, logger="smdebug")
    monkeypatch.setitem(sys.modules, "numba", None)  # import numba: ImportError
    monkeypatch.delenv(moments_kernel.ENV, raising=False)
    assert fresh.wait(60) is None
    assert fresh.kernel() is None and fresh.kernel() is None
    said = [r for r in caplog.records if "numba is not installed" in r.getMessage()]
    assert len(said) == 1 and said[0].levelno == logging.INFO and "smdebug-open[fast]" in said[0].getMessage()
    t = torch.randn(50, 20)
    row = TorchAdapter()._host_rows([t], [("mean", False), ("l1", False)])[0]
    np.testing.assert_allclose(row, [float(t.mean()), float(t.abs().sum())], rtol=1e-6)


def test_the_environment_can_leave_the_kernel_out(fresh, monkeypatch, caplog):
    caplog.set_level(logging.INFO, logger="smdebug")
    monkeypatch.setenv(moments_kernel.ENV, "0")
    assert fresh.wait(60) is None
    assert any(f"{moments_kernel.ENV}=0" in r.getMessage() for r in caplog.records)


def test_nobody_waits_for_the_compile(fresh, monkeypatch):
    release = threading.Event()
    monkeypatch.setattr(fresh, "_compile", lambda: release.wait(30))
    t0 = time.perf_counter()
    assert fresh.kernel() is None  # starts compiling; the caller goes on with torch's ops
    assert fresh.kernel() is None
    assert time.perf_counter() - t0 < 0.5
    t = torch.randn(40, 40)
    row = TorchAdapter()._host_rows([t], [("max", False)])[0]
    assert float(row[0]) == float(t.max())
    release.set()
    fresh._thread.join(30)


def test_numba_messages_leave_the_standard_streams_alone(kernel):
    """numba formats its compiler's messages inside colorama's init()/deinit(), which swap
    sys.stdout and sys.stderr; compiled on a background thread, that raced with the process's own
    changes of them. With the kernel loaded, formatting a message (what numba does while it
    compiles) neither replaces sys.stdout nor puts back an older one."""
    import io
    import sys

    from numba.core import errors

    before, other = io.StringIO(), io.StringIO()
    saved = sys.stdout
    try:
        sys.stdout = before
        with errors.ColorShell():
            assert sys.stdout is before
            sys.stdout = other  # another thread's change meanwhile (a test's capture starting)
        assert sys.stdout is other
        errors.termcolor().errmsg("a message")
        assert sys.stdout is other
    finally:
        sys.stdout = saved
