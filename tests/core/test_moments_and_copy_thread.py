"""The batched moments path and the copy thread, without a framework: reduce_moments gives, for
a batch of tensors, exactly what the scalar formulas give for each one (the values smdebug saved
before), and marks what the moments cannot tell; the copy thread runs batches in order, joins
batches handed over while it was busy, and hands a failure to whoever waits for it."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from smdebug.core.tensors.host_buffers import DeferredCopier
from smdebug.core.tensors.moments import needs_abs_sum, reduce_moments, reductions_from_moments
from smdebug.exceptions import SMDebugValueError

OPS = [(op, ab) for op in ("min", "max", "mean", "std", "variance", "sum", "prod", "l1", "l2") for ab in (False, True)]


def _moments(a: np.ndarray) -> np.ndarray:
    a = a.astype(np.float32)
    return np.array([a.min(), a.max(), a.sum(), np.linalg.norm(a), np.abs(a).sum()], dtype=np.float32)


def _scalar(stats: np.ndarray, n: int, ops) -> list:
    """The per-tensor formulas, written out in Python floats (what the hook computed before)."""
    mn, mx, s, l2, a1 = (float(v) for v in stats)
    out = []
    for op, ab in ops:
        total = a1 if ab else s
        if op == "min":
            v = mn if not ab else (mn if mn >= 0 else -mx if mx <= 0 else None)
        elif op == "max":
            v = mx if not ab else max(abs(mn), abs(mx))
        elif op in ("sum", "mean"):
            v = total if op == "sum" else total / n
        elif op in ("l1", "l2"):
            v = a1 if op == "l1" else l2
        elif op in ("std", "variance"):
            spread = l2 * l2 - total * (total / n)
            ok = n > 1 and np.isfinite(spread) and spread >= 0.1 * l2 * l2
            v = (spread / (n - 1) if op == "variance" else np.sqrt(spread / (n - 1))) if ok else None
        else:
            v = None
        out.append(v)
    return out


def test_a_batch_gives_each_tensor_what_the_formulas_give_it():
    g = np.random.default_rng(5)
    arrays = [
        g.normal(size=300),
        1000 + 0.01 * g.normal(size=50),
        g.random(40) + 0.5,
        -g.random(7) - 0.1,
        np.array([2.5]),
        np.zeros(9),
        g.normal(size=(30, 20)),
    ]
    stats = np.stack([_moments(a) for a in arrays])
    n = [a.size for a in arrays]
    vals, unknown = reduce_moments(stats, n, OPS)
    assert vals.dtype == np.float32 and vals.shape == (len(arrays), len(OPS))
    for i, a in enumerate(arrays):
        want = _scalar(stats[i], a.size, OPS)
        for j, w in enumerate(want):
            if w is None:
                assert unknown[i, j], (i, OPS[j])
            else:
                assert not unknown[i, j], (i, OPS[j])
                assert vals[i, j] == np.float32(w), (i, OPS[j], vals[i, j], w)
        # the one-tensor form is the same
        one = reductions_from_moments(stats[i], a.size, OPS)
        assert [None if v is None else float(v) for v in one] == [
            None if unknown[i, j] else float(vals[i, j]) for j in range(len(OPS))
        ]
    # prod is never told; one element has no variance; the large mean's variance would cancel
    assert unknown[:, OPS.index(("prod", False))].all()
    assert unknown[4, OPS.index(("std", False))] and unknown[1, OPS.index(("variance", False))]


def test_nan_and_inf_moments_are_not_told():
    stats = np.array(
        [[np.nan, np.nan, np.nan, np.nan, np.nan], [1.0, np.inf, np.inf, np.inf, np.inf]], dtype=np.float32
    )
    vals, unknown = reduce_moments(stats, [3, 3], [("std", False), ("min", True), ("max", False)])
    assert unknown[0, 0] and unknown[0, 1] and unknown[1, 0]
    assert np.isnan(vals[0, 2]) and vals[1, 2] == np.inf


def test_bad_reduction_names_the_reduction():
    with pytest.raises(SMDebugValueError, match="'median'"):
        reduce_moments(np.zeros((1, 5), dtype=np.float32), [3], [("median", False)])
    assert needs_abs_sum([("mean", True)]) and needs_abs_sum([("l1", False)]) and not needs_abs_sum([("max", True)])


def test_copy_thread_runs_batches_in_order_and_joins_what_waits():
    runs: list[list] = []
    gate = threading.Event()

    def double(xs):
        gate.wait(5)  # the first batch holds the thread while more are handed over
        runs.append(list(xs))
        return [2 * x for x in xs]

    copier = DeferredCopier(lambda xs: [x + 100 for x in xs])
    first = copier.defer(1, double)
    copier.start()
    later = [copier.defer(i, double) for i in (2, 3)]
    copier.start()
    plain = copier.defer(4)  # a copy
    copier.start()
    gate.set()
    copier.sync()
    assert [d.result() for d in (first, *later)] == [2, 4, 6] and plain.result() == 104
    # the batches handed over while the thread was busy ran as one call
    assert runs[0] == [1] and runs[1:] == [[2, 3]]
    thread = copier._pool._thread
    assert thread.name == DeferredCopier.THREAD_NAME and thread.daemon
    copier.shutdown()
    assert not thread.is_alive()


def test_a_failed_batch_is_raised_where_its_values_are_needed():
    def boom(xs):
        raise RuntimeError("no moments")

    copier = DeferredCopier(lambda xs: list(xs))
    d = copier.defer(1, boom)
    copier.sync()  # waits, does not raise: the writer, which needs the value, does
    with pytest.raises(RuntimeError, match="no moments"):
        d.result()
    ok = copier.defer(5)
    copier.sync()
    assert ok.result() == 5  # the thread goes on
    copier.shutdown()
