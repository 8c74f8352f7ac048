"""numpy_reductions: the reductions of one array, sharing one mean between mean, std and variance
and one absolute value between the abs reductions, give exactly (to the bit, dtype included)
what numpy's own functions give, one reduction at a time. (The deferred reductions of the Keras
and MXNet adapters, which take moments from the numba kernel where it is ready:
test_host_reductions.py.)"""

from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np
import pytest

from smdebug.core.tensors import reductions
from smdebug.core.tensors.deferred import deferred_reductions
from smdebug.core.tensors.reductions import get_numpy_reduction, numpy_reductions
from smdebug.exceptions import SMDebugValueError
from smdtest import random_array

OPS = [(op, is_abs) for op in reductions.ALLOWED_REDUCTIONS + reductions.ALLOWED_NORMS for is_abs in (False, True)]
DTYPES = [
    "float16",
    "float32",
    "float64",
    "int8",
    "int32",
    "int64",
    "uint8",
    "uint64",
    "bool",
    ml_dtypes.bfloat16,
    "complex64",
]
SHAPES = [(), (1,), (7,), (1000,), (33, 17), (512, 512), (3, 4, 5, 6)]
# (scale, offset): a mean large against the spread is where a variance from sums loses digits
SCALES = [(1.0, 0.0), (1e-3, 0.0), (1.0, 1e4), (1e3, -5.0)]


def _layouts(a: np.ndarray) -> list[np.ndarray]:
    if a.ndim < 2:
        return [a]
    return [a, np.asfortranarray(a), a[::2, ::3], a.T]


def _assert_same(got, want, what):
    want = np.asarray(want)
    assert isinstance(got, np.ndarray), what
    assert (got.dtype, got.shape) == (want.dtype, want.shape), what
    assert got.tobytes() == want.tobytes(), f"{what}: {got!r} != {want!r}"


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_each_value_is_numpys_own_to_the_bit(dtype):
    rng = np.random.default_rng(7)
    for shape in SHAPES:
        for scale, offset in SCALES:
            for a in _layouts(random_array(rng, dtype, shape, scale, offset)):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # prod overflows, as it does in numpy
                    got = numpy_reductions(a, OPS)
                    for (op, is_abs), g in zip(OPS, got):
                        _assert_same(g, get_numpy_reduction(op, a, is_abs), f"{op} abs={is_abs} {a.dtype} {a.shape}")


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # float16's variance overflows, in numpy too
def test_mean_std_and_variance_are_np_mean_np_std_np_var():
    """The reference above is numpy's functions themselves, not a rewrite of them."""
    rng = np.random.default_rng(3)
    for dtype in ("float16", "float32", "float64", "int16", "bool"):
        for a in _layouts(random_array(rng, dtype, (257, 129), 2.0, 100.0)):
            mean, std, var, amean = numpy_reductions(
                a, [("mean", False), ("std", False), ("variance", False), ("mean", True)]
            )
            _assert_same(mean, np.mean(a), "mean")
            _assert_same(std, np.std(a), "std")
            _assert_same(var, np.var(a), "variance")
            _assert_same(amean, np.mean(np.absolute(a)), "abs mean")


def test_values_do_not_change_when_the_buffer_is_reused():
    """The squared deviations go to a buffer this thread reuses: a later call leaves the values
    an earlier one returned as they were."""
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((300, 300)).astype(np.float32), rng.standard_normal((300, 300)).astype(np.float32) * 9
    first = numpy_reductions(a, [("variance", False), ("std", True)])
    kept = [v.copy() for v in first]
    numpy_reductions(b, [("variance", False), ("std", True)])
    for v, k in zip(first, kept):
        _assert_same(v, k, "after reuse")
    _assert_same(first[0], np.var(a), "variance")


def test_empty_and_huge_arrays_take_numpys_path(monkeypatch):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (mean,) = numpy_reductions(np.zeros((0, 3), np.float32), [("mean", False)])
    assert np.isnan(mean) and mean.dtype == np.float32
    monkeypatch.setattr(reductions, "_SCRATCH_MAX", 64)  # larger than the buffer: a fresh array
    a = np.random.default_rng(2).standard_normal(1000)
    _assert_same(numpy_reductions(a, [("std", False)])[0], np.std(a), "std")


def test_an_unknown_reduction_is_refused():
    with pytest.raises(SMDebugValueError, match="median"):
        numpy_reductions(np.ones(3), [("median", False)])
    with pytest.raises(SMDebugValueError, match="median"):
        deferred_reductions(lambda: np.ones(3), [("mean", False), ("median", False)])
