"""The five moments of host tensors, per tensor: the framework's ops (TorchOps.moments with |t| into a
reused buffer, as BatchedAdapter did) against the one-pass numba kernel (core.tensors.moments_kernel,
called as BatchedAdapter calls it: numpy views, host_moments), one thread, warm caches; and, for one
step's parameters, the kernel on read-only views and the writer thread's reductions (Keras's) by
numpy against those from the kernel's moments.

usage: python bench/bench_moments_kernel.py [REPEAT]
Shapes: bench/hook_workload.py's parameters (MLP 256-512-512-512-10) and a few more. Prints
microseconds per call (minimum over REPEAT runs of a loop), with and without sum(|t|), and the
largest error of each's five moments against exact ones (numpy in float64), relative to the
moment (the sum's to the sum of |t|, the sum of random signs being near 0).
"""

from __future__ import annotations

import sys
import time

import numpy as np
import torch

from smdebug.core.tensors import moments_kernel
from smdebug.core.tensors.host_buffers import BufferPool
from smdebug.core.tensors.reductions import host_reductions_many, numpy_reductions
from smdebug.pytorch.adapter import TorchOps

SHAPES = [(512, 512), (512, 256), (512,), (10, 512), (10,), (1024, 1024), (4096, 1024)]


def best_us(fn, repeat: int, budget_s: float = 0.05) -> float:
    fn()
    t0 = time.perf_counter()
    fn()
    loops = max(1, int(budget_s / max(time.perf_counter() - t0, 1e-7)))
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(loops):
            fn()
        best = min(best, (time.perf_counter() - t0) / loops)
    return best * 1e6


def error(stats: np.ndarray, t: torch.Tensor) -> float:
    x = t.numpy().astype(np.float64).reshape(-1)
    exact = np.array([x.min(), x.max(), x.sum(), np.sqrt(np.dot(x, x)), np.abs(x).sum()])
    scale = np.abs(exact)
    scale[2] = exact[4]
    return float(np.max(np.abs(stats.astype(np.float64) - exact) / scale))


def main() -> None:
    repeat = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    k = moments_kernel.wait()
    print(f"kernel ready: {k is not None} ({time.perf_counter() - t0:.2f} s: import numba, compile or load the cache)")
    if k is None:
        return
    ops, pool = TorchOps(), BufferPool(TorchOps())
    g = torch.Generator().manual_seed(0)

    def torch_path(ts, with_abs):
        abs_ts = [pool.abs(t) for t in ts] if with_abs else None
        stats = ops.moments(ts, abs_ts)
        if abs_ts is not None:
            pool.give_back(abs_ts)
        return stats

    def kernel_path(ts, with_abs):
        return moments_kernel.host_moments([t.numpy() for t in ts], with_abs, k)[0]

    print(
        f"{'shape':>12} {'dtype':>8} {'torch+|t|':>10} {'kernel+|t|':>11} {'torch':>8} {'kernel':>8} "
        f"{'err torch':>9} {'err kernel':>10}"
    )
    for dtype in (torch.float32, torch.float64):
        for shape in SHAPES:
            ts = [torch.randn(shape, generator=g, dtype=dtype)]
            row = [
                best_us(lambda w=w, f=f, ts=ts: f(ts, w), repeat)
                for w in (True, False)
                for f in (torch_path, kernel_path)
            ]
            errs = [error(f(ts, True)[0], ts[0]) for f in (torch_path, kernel_path)]
            print(
                f"{'x'.join(map(str, shape)):>12} {str(dtype)[6:]:>8} {row[0]:10.1f} {row[1]:11.1f} {row[2]:8.1f} "
                f"{row[3]:8.1f} {errs[0]:9.1e} {errs[1]:10.1e}"
            )
    # one step of bench/hook_workload.py's parameters (its gradients are the same shapes) in one call
    step = [
        torch.randn(s, generator=g)
        for s in [(512, 256), (512,), (512, 512), (512,), (512, 512), (512,), (10, 512), (10,)]
    ]
    print(
        f"hook_workload's 8 parameters in one call, with |t|: torch {best_us(lambda: torch_path(step, True), repeat):.1f} us,"
        f" kernel {best_us(lambda: kernel_path(step, True), repeat):.1f} us"
    )
    # read-only numpy views (what the Keras hook's writer reads of TF tensors: host_view)
    views = [t.numpy().view() for t in step]
    for v in views:
        v.flags.writeable = False
    print(
        f"  the same as read-only views: kernel {best_us(lambda: moments_kernel.host_moments(views, True, k), repeat):.1f} us"
    )
    # the writer thread's reductions (Keras, MXNet: core.tensors.deferred) of those 8, bench_keras.py's six
    six = [("min", False), ("max", False), ("mean", False), ("std", False), ("mean", True), ("l2", False)]
    print(
        f"  their six reductions on the writer: numpy_reductions {best_us(lambda: [numpy_reductions(v, six) for v in views], repeat):.1f} us, "
        f"host_reductions_many (kernel) {best_us(lambda: host_reductions_many(views, six), repeat):.1f} us"
    )


if __name__ == "__main__":
    main()
