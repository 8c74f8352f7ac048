"""The one-pass moments kernel for numba (optional): :func:`compile` gives it, compiled (or loaded
from numba's cache); only :mod:`smdebug.core.tensors.moments_kernel` imports this module, on a
background thread.

The kernel, ``moments(a, with_abs)`` of a 1-d C-contiguous, aligned float32 or float64 array of at least one
element, writable or read-only (a read-only numpy view of a TF tensor's memory, for one):
``(min, max, sum, sum of squares, sum of |a|)`` as float64 (the last 0.0 unless ``with_abs``), in
one loop that vectorises. min and max are LLVM's ``minimum`` / ``maximum``, which propagate nan as
torch's ``amin`` / ``amax`` do (and vectorise as reductions without fast-math's no-nans, which
plain comparisons do not). The sums are added in the array's dtype over blocks of ``BLOCK``
elements (the vectoriser keeps a few vectors of partial sums: a few tens of elements per partial
sum) and the blocks' sums in float64.
"""

from __future__ import annotations

from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["BLOCK", "compile"]

BLOCK = 1024
# reassoc: the sums may be vectorised (added in another order); contract: x * x + s as one fma.
# Not nnan / ninf: with nan or inf in the array the sums come out nan or inf, which the caller
# looks for (moments_kernel.py)
_FLAGS = {"reassoc", "contract", "nsz"}
# writable and read-only arrays (numba types them apart; the machine code is the same: as fast)
_SIGNATURES = [
    types.UniTuple(types.float64, 5)(types.Array(dtype, 1, "C", readonly=readonly), types.boolean)
    for readonly in (False, True)
    for dtype in (types.float32, types.float64)
]


def _llvm_binary(name: str):
    """A numba function for the LLVM intrinsic ``name`` of two floats of one type."""

    @intrinsic
    def call(typingctx, a, b):
        if not isinstance(a, types.Float) or a != b:
            return None

        def codegen(context, builder, signature, args):
            lty = context.get_value_type(signature.return_type)
            fnty = ir.FunctionType(lty, [lty, lty])
            suffix = "f32" if lty == ir.FloatType() else "f64"
            return builder.call(cgutils.get_or_insert_function(builder.module, fnty, f"{name}.{suffix}"), args)

        return a(a, b), codegen

    return call


_minimum = _llvm_binary("llvm.minimum")
_maximum = _llvm_binary("llvm.maximum")


def compile(cache: bool = True):  # noqa: A001 - what it does
    """The kernel, compiled for float32 and float64 arrays, writable and read-only. With ``cache``, numba keeps the
    machine code beside this file or, where that is read-only, in the user's cache folder
    (``$NUMBA_CACHE_DIR``, else ``~/.cache/numba``); a RuntimeError where neither is writable."""
    return njit(_SIGNATURES, nogil=True, cache=cache, fastmath=_FLAGS)(_moments)


def _moments(a, with_abs):  # pragma: no cover - compiled; tests/pytorch/test_moments_kernel.py
    zero = a.dtype.type(0)
    mn = a[0]
    mx = a[0]
    s = 0.0
    ss = 0.0
    sa = 0.0
    for b0 in range(0, a.size, BLOCK):
        blk = a[b0 : b0 + BLOCK]  # indices from 0: no negative-index wraparound in the loop
        bs = zero
        bss = zero
        bsa = zero
        # with_abs does not change in the loop: LLVM takes the test out of it (two loops that
        # vectorise, measured as fast as two written ones)
        for i in range(blk.size):
            x = blk[i]
            mn = _minimum(mn, x)
            mx = _maximum(mx, x)
            bs += x
            bss += x * x
            if with_abs:
                bsa += abs(x)
        s += bs
        ss += bss
        sa += bsa
    return float(mn), float(mx), s, ss, sa
