"""host_reductions, the writer thread's reductions (the deferred reductions of the Keras and MXNet
adapters): where the numba moments kernel is ready, what it tells from an array's five moments
equals numpy's within float rounding, ``|got - numpy| <= 1e-5 |numpy| + 1e-6 max|t|`` (the sum's
scale sum|t|), in numpy's dtype and shape; what the moments cannot tell (prod, a cancelling
variance, abs min across zero, nan / inf, one element, other dtypes and layouts), and everything
without the kernel, is numpy's to the bit. The kernel takes read-only arrays (numpy views of TF
tensors) and is never waited for. Each test runs with the kernel and without it."""

from __future__ import annotations

import threading
import time
import warnings

import ml_dtypes
import numpy as np
import pytest

from smdebug.core.tensors import moments_kernel, reductions
from smdebug.core.tensors.deferred import DeferredReduction, compute_together, deferred_reductions
from smdebug.core.tensors.reductions import get_numpy_reduction, host_reductions, host_reductions_many
from smdtest import random_array, ready_moments_kernel

OPS = [(op, is_abs) for op in reductions.ALLOWED_REDUCTIONS + reductions.ALLOWED_NORMS for is_abs in (False, True)]
DTYPES = ["float32", "float64", "float16", "int32", "uint8", "bool", ml_dtypes.bfloat16]
SHAPES = [(), (1,), (2,), (7,), (1000,), (33, 17), (512, 512), (2049,), (3, 4, 5, 6)]
SCALES = [(1.0, 0.0), (1e-3, 0.0), (1.0, 1e4), (1e3, -5.0), (1.0, 3.0), (1e-30, 0.0), (1e30, 0.0)]


def _read_only(a: np.ndarray) -> np.ndarray:
    v = a.view()
    v.flags.writeable = False
    return v


def _layouts(a: np.ndarray) -> list[np.ndarray]:
    out = [a, _read_only(a)]
    if a.ndim >= 2:
        out += [np.asfortranarray(a), a[::2, ::3]]
    return out


def _assert_same(got, want, what):
    want = np.asarray(want)
    assert isinstance(got, np.ndarray), what
    assert (got.dtype, got.shape) == (want.dtype, want.shape), what
    assert got.tobytes() == want.tobytes(), f"{what}: {got!r} != {want!r}"


def _assert_close(got, want, a, op, what):
    """numpy's dtype and shape; the value within float rounding of numpy's."""
    want = np.asarray(want)
    assert isinstance(got, np.ndarray) and (got.dtype, got.shape) == (want.dtype, want.shape), what
    g, w = float(got), float(want)
    if w != w:
        assert g != g, what
        return
    x = np.abs(a.astype(np.float64))
    scale = float(x.sum() if op == "sum" else x.max())
    assert g == w or abs(g - w) <= 1e-5 * abs(w) + 1e-6 * scale, f"{what}: {g!r} != {w!r}"


def _want(op, is_abs, a):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # prod overflows, float16's variance too, as in numpy
        return get_numpy_reduction(op, a, is_abs)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_each_value_is_numpys_within_rounding_and_to_the_bit_without_the_kernel(moments_by, dtype):
    rng = np.random.default_rng(7)
    for shape in SHAPES:
        for scale, offset in SCALES:
            for a in _layouts(random_array(rng, dtype, shape, scale, offset)):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    got = host_reductions(a, OPS)
                told = (
                    moments_by == "numba kernel"
                    and a.dtype in (np.float32, np.float64)
                    and a.size > 1
                    and a.flags.c_contiguous
                )
                for (op, is_abs), g in zip(OPS, got):
                    what = f"{op} abs={is_abs} {a.dtype} {a.shape} {scale} {offset}"
                    if told:
                        _assert_close(g, _want(op, is_abs, a), a, op, what)
                    else:
                        _assert_same(g, _want(op, is_abs, a), what)


def test_what_the_moments_cannot_tell_is_numpys_to_the_bit(moments_by):
    rng = np.random.default_rng(4)
    cases = {
        "large_mean": (1e4 + rng.standard_normal(5000)).astype(np.float32),  # std / variance cancel
        "across_zero": rng.standard_normal((40, 30)).astype(np.float32),  # abs min
        "nan": np.array([1.0, np.nan, 3.0], np.float32),
        "inf": np.array([1.0, np.inf, 3.0], np.float64),
        "both_infs": np.array([-np.inf, 2.0, np.inf], np.float32),
        "sum_overflows": np.full(4, np.finfo(np.float32).max / 2, np.float32),
        "one": np.array([2.5], np.float32),
    }
    untold = {
        "large_mean": {("std", False), ("variance", False), ("std", True), ("variance", True)},
        "across_zero": {("min", True)},
    }
    for case, a in cases.items():
        a = _read_only(a)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = dict(zip(OPS, host_reductions(a, OPS)))
        exact = untold.get(case, set(OPS)) | {("prod", False), ("prod", True)}
        for key in exact:
            _assert_same(got[key], _want(*key, a), f"{case} {key}")


def test_the_kernel_is_used_for_read_only_views_and_numpy_for_the_rest(moments_by, monkeypatch):
    kernel_calls, numpy_ops = [], []
    host_moments, numpy_reductions = moments_kernel.host_moments, reductions.numpy_reductions
    monkeypatch.setattr(
        moments_kernel,
        "host_moments",
        lambda arrays, with_abs, k: (
            kernel_calls.append((arrays[0].flags.writeable, with_abs)) or host_moments(arrays, with_abs, k)
        ),
    )
    monkeypatch.setattr(
        reductions, "numpy_reductions", lambda data, ops: numpy_ops.extend(ops) or numpy_reductions(data, ops)
    )
    a = _read_only(np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32))
    ops = [
        ("min", False),
        ("max", False),
        ("mean", False),
        ("std", False),
        ("mean", True),
        ("l2", False),
        ("min", True),
        ("prod", False),
    ]
    got = host_reductions(a, ops)
    if moments_by == "numba kernel":
        assert kernel_calls == [(False, True)]
        assert numpy_ops == [("min", True), ("prod", False)]  # across zero; prod
    else:
        assert kernel_calls == [] and numpy_ops == ops
    for (op, is_abs), g in zip(ops, got):
        _assert_close(g, _want(op, is_abs, a), a, op, op)


@pytest.mark.parametrize("shape1", [False, True])
def test_deferred_reductions_fetch_once_and_equal_numpys(moments_by, shape1):
    a = _read_only(np.random.default_rng(5).standard_normal((64, 33)).astype(np.float32))
    fetched = []

    def fetch():
        fetched.append(1)
        return a

    ops = [("min", False), ("mean", False), ("std", False), ("mean", True), ("l2", False), ("max", True)]
    deferred = deferred_reductions(fetch, ops, shape1=shape1)
    assert not fetched  # nothing is computed on the training thread
    got = [d.compute() for d in deferred]
    assert len(fetched) == 1
    for (op, is_abs), g in zip(ops, got):
        want = np.asarray(get_numpy_reduction(op, a, is_abs))
        if shape1:
            assert g.shape == (1,)
            g = g.reshape(())
        if moments_by == "framework ops":
            _assert_same(g, want, f"{op} abs={is_abs}")
        else:
            _assert_close(g, want, a, op, f"{op} abs={is_abs}")


def test_a_steps_reductions_are_computed_together(moments_by, monkeypatch):
    """compute_together: each source fetched once, one reduce_moments per dtype (and ops), the
    values those of host_reductions one array at a time; MXNet's shape1 values too."""
    calls = []
    reduce_moments = reductions.reduce_moments
    monkeypatch.setattr(
        reductions,
        "reduce_moments",
        lambda st, n, ops, ddof=1: calls.append(len(n)) or reduce_moments(st, n, ops, ddof),
    )
    rng = np.random.default_rng(6)
    arrays = [
        _read_only(rng.standard_normal(s).astype(dt))
        for s, dt in [
            ((64, 32), np.float32),
            (32, np.float32),
            ((5, 3), np.float32),
            (7, np.float64),
            (6, np.int32),
            (9, np.float32),
            (2, np.float64),
        ]
    ]
    arrays.append(np.array([1.0, np.nan], np.float32))  # the kernel leaves it to numpy
    ops = [("min", False), ("max", False), ("mean", False), ("std", False), ("mean", True), ("l2", False)]
    fetched: list = []
    objs: list = ["raw"]
    for i, a in enumerate(arrays):
        objs += deferred_reductions(lambda i=i, a=a: fetched.append(i) or a, ops, shape1=i == 2)
    objs += deferred_reductions(lambda: fetched.append("other ops") or arrays[0], [("l1", False)])
    compute_together(objs)
    assert sorted(fetched, key=str) == sorted([*range(len(arrays)), "other ops"], key=str)
    assert calls == ([5, 2, 1] if moments_by == "numba kernel" else [])  # float32, float64; l1's
    got = [o.compute() for o in objs[1:] if isinstance(o, DeferredReduction)]
    assert len(fetched) == len(arrays) + 1  # nothing fetched again
    monkeypatch.setattr(reductions, "reduce_moments", reduce_moments)
    for i, a in enumerate(arrays):
        want = host_reductions(a, ops)
        for j, w in enumerate(want):
            g = got[i * len(ops) + j]
            if i == 2:
                assert g.shape == (1,) and g.dtype == a.dtype
                g = g.reshape(())
            _assert_same(g, w, f"array {i} {ops[j]}")
    _assert_same(got[-1], host_reductions_many([arrays[0]], [("l1", False)])[0][0], "l1")


def test_read_only_and_writable_arrays_give_the_same_moments_unaligned_ones_are_left_out():
    k = ready_moments_kernel()
    rng = np.random.default_rng(9)
    for dtype in (np.float32, np.float64):
        a = rng.standard_normal(3001).astype(dtype)
        stats, rest = moments_kernel.host_moments([a, _read_only(a)], True, k)
        assert rest == [] and stats[0].tobytes() == stats[1].tobytes()
        raw = np.zeros(a.nbytes + 1, np.uint8)
        raw[1:] = a.view(np.uint8)
        unaligned = np.frombuffer(raw.tobytes(), dtype, offset=1)  # read-only, not aligned
        assert not unaligned.flags.aligned and not unaligned.flags.writeable
        stats, rest = moments_kernel.host_moments([unaligned], True, k)
        assert rest == [0] and np.isnan(stats).all()
        np.testing.assert_array_equal(host_reductions(unaligned, [("mean", False)])[0], np.mean(a))


def test_nobody_waits_for_the_compile(monkeypatch):
    monkeypatch.setattr(moments_kernel, "_kernel", None)
    monkeypatch.setattr(moments_kernel, "_thread", None)
    release = threading.Event()
    monkeypatch.setattr(moments_kernel, "_compile", lambda: release.wait(30))
    a = np.random.default_rng(1).standard_normal((100, 100)).astype(np.float32)
    t0 = time.perf_counter()
    got = host_reductions(a, [("std", False), ("l2", False)])  # starts compiling; numpy's meanwhile
    assert time.perf_counter() - t0 < 0.5
    _assert_same(got[0], np.std(a), "std")
    _assert_same(got[1], np.linalg.norm(a.ravel()), "l2")
    release.set()
    moments_kernel._thread.join(30)
