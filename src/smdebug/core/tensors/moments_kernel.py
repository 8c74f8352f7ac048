"""The five moments of host tensors in one pass over each, when numba is installed.

:mod:`smdebug.core.tensors.moments` turns a tensor's moments ``[min, max, sum, l2, sum of |t|]``
into its reductions. A framework's own ops take one memory pass a moment (and |t| into a buffer
for the last); :func:`host_moments` takes one, with a numba kernel
(:mod:`smdebug.core.tensors._moments_numba`), over the numpy view of a contiguous float32 or
float64 host tensor: about 45 us for 512x512 float32 with sum(|t|), against 180 us by torch's
ops, on the Xeon VM of BENCHMARKS.md (bench/bench_moments_kernel.py), where the copy thread's
memory passes slowed the training thread on the other core.

The same kernel gives the moments behind the reductions computed with numpy on the writer thread
(Keras, MXNet: :func:`smdebug.core.tensors.reductions.host_reductions`), from read-only views too.

numba is optional (the ``fast`` extra). The kernel is compiled (or loaded from numba's cache) on a
background thread at first use; until it is ready, and without numba, the framework's ops (or
numpy's functions) are used; the log says once at INFO which it is. ``SMDEBUG_MOMENTS_KERNEL=0`` leaves the kernel out.
numba older than 0.62 (LLVM < 20) is not used: LLVM 15 aborts the process on the kernel's
``llvm.minimum``.
"""

from __future__ import annotations

import logging
import math
import os
import threading
from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["ENV", "host_moments", "kernel", "wait"]

ENV = "SMDEBUG_MOMENTS_KERNEL"
_MIN_LLVM = (20,)
# the dtypes the kernel takes, and the largest finite value of each
_LIMITS: dict[np.dtype, float] = {np.dtype(t): float(np.finfo(t).max) for t in (np.float32, np.float64)}
_FALLBACK = "reductions of host tensors are computed with the framework's ops (numpy's for Keras and MXNet)"

logger = logging.getLogger("smdebug")

_lock = threading.Lock()
_kernel: Callable | None = None
_thread: threading.Thread | None = None  # the compiling thread, once started


def kernel() -> Callable | None:
    """The compiled kernel, or None while it is not ready (the first call starts compiling it
    on a background thread) and where it is not to be had (no numba, ``$SMDEBUG_MOMENTS_KERNEL``
    is 0, numba too old, compiling failed: logged once)."""
    k = _kernel
    if k is None and _thread is None:
        _start()
    return k


def wait(timeout: float | None = None) -> Callable | None:
    """:func:`kernel` once compiling it is over (tests and benchmarks)."""
    _start()
    t = _thread
    if t is not None:
        t.join(timeout)
    return _kernel


def _start() -> None:
    global _thread
    with _lock:
        if _thread is None:
            _thread = threading.Thread(target=_compile, name="smdebug-moments-jit", daemon=True)
            _thread.start()


def _compile() -> None:
    global _kernel
    if os.environ.get(ENV, "1").strip() == "0":
        logger.info("smdebug: %s=0: %s", ENV, _FALLBACK)
        return
    try:
        import llvmlite.binding
        import numba
    except ImportError:
        logger.info(
            "smdebug: numba is not installed: %s (pip install 'smdebug-open[fast]' for the one-pass kernel)", _FALLBACK
        )
        return
    if tuple(llvmlite.binding.llvm_version_info) < _MIN_LLVM:
        logger.info("smdebug: numba %s is older than 0.62: %s", numba.__version__, _FALLBACK)
        return
    _quiet_numba_colors()
    try:
        from smdebug.core.tensors import _moments_numba

        try:
            moments = _moments_numba.compile(cache=True)
        except RuntimeError as e:  # no writable cache folder (numba: "no locator available")
            logger.info(
                "smdebug: numba cannot cache the moments kernel (%s): compiling it in each process "
                "(set NUMBA_CACHE_DIR to a writable folder to keep it)",
                e,
            )
            moments = _moments_numba.compile(cache=False)
    except Exception as e:  # noqa: BLE001 - the framework's ops still work
        logger.warning("smdebug: the numba moments kernel did not compile (%s: %s): %s", type(e).__name__, e, _FALLBACK)
        return
    logger.info("smdebug: reductions of float32 / float64 host tensors by the numba kernel")
    _kernel = moments


class _NoColorShell:
    """numba's ``ColorShell`` without colorama's ``init`` / ``deinit``."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None


def _quiet_numba_colors() -> None:
    """Where colorama is installed, numba formats each message of its compiler (the failed
    candidates of type inference among them) inside a ``ColorShell``: colorama's ``init()``, which
    replaces ``sys.stdout`` and ``sys.stderr``, and ``deinit()``, which puts back the ones it saw.
    On this module's background thread that races with the process's own changes of them: a test's
    captured output, or a notebook's, went to the stream replaced before (seen as a test whose
    ``capsys`` got nothing). The shell is made a no-op: on Linux and macOS colorama wraps nothing
    anyway, and numba's messages are strings whose colour codes it adds itself."""
    try:
        from numba.core import errors
    except ImportError:
        return
    if hasattr(errors, "ColorShell"):
        errors.ColorShell = _NoColorShell


def host_moments(arrays: Sequence[np.ndarray], with_abs: bool, k: Callable) -> tuple[np.ndarray, list[int]] | None:
    """The moments of numpy arrays of one dtype by the kernel ``k``: an N x 5 array of that
    dtype (columns as :data:`smdebug.core.tensors.moments.MOMENTS`, the last nan unless
    ``with_abs``) and the rows the kernel did not tell (left nan), which the caller computes
    with the framework's ops: arrays not contiguous, not aligned or empty, and those with nan
    or inf in them (or a sum beyond the dtype), whose moments are then exactly the framework's.
    Read-only arrays (numpy views of a framework's immutable tensors) are taken.
    None for a dtype other than float32 and float64. (Per row in Python: numpy's calls on a
    few rows cost more than the kernel on a small tensor.)"""
    limit = _LIMITS.get(arrays[0].dtype) if arrays else None
    if limit is None:
        return None
    dtype = arrays[0].dtype
    stats = np.empty((len(arrays), 5), dtype=dtype)
    rest = []
    for i, a in enumerate(arrays):
        if a.dtype == dtype and a.size and a.flags.c_contiguous and a.flags.aligned:
            mn, mx, s, ss, sa = k(a.reshape(-1), with_abs)
            l2 = math.sqrt(ss) if ss <= limit * limit else math.inf  # (nan: false)
            # nan or inf in the array makes s or l2 nan or inf; then the framework's op says what
            if abs(s) <= limit and l2 <= limit and (sa <= limit or not with_abs):
                stats[i] = (mn, mx, s, l2, sa if with_abs else math.nan)
                continue
        stats[i] = math.nan
        rest.append(i)
    return stats, rest
