"""Parts of the PyTorch hook switched off, for measuring what each costs (benchmarks only).

``$SMDEBUG_BENCH_ABLATE`` names the parts, separated by ``+`` (hook_ab.py splits its settings at commas); hook_workload.build() calls
:func:`apply` before it makes the hook, so that ``bench/hook_ab.py`` can compare them in one run:

    python bench/hook_ab.py reductions 6 4 40 none=. full=. \\
        no-moments=.:SMDEBUG_BENCH_ABLATE=moments no-writes=.:SMDEBUG_BENCH_ABLATE=writes \\
        bare=.:SMDEBUG_BENCH_ABLATE=moments+writes no-grads=.:SMDEBUG_BENCH_ABLATE=gradients

- ``moments``: the copy thread's reductions are constants (no torch op, no |t| copy); everything
  else (hand-overs, records, rows) runs as usual;
- ``writes``: the writer thread takes each step and drops it (no encoding, no file);
- ``gradients``: the gradient hooks are registered (torch still calls them) but do nothing;
- ``parameters``: no parameter is saved at the step start.

What is left with ``moments+writes`` is the hook's own Python and its threads' hand-overs.
The values written are wrong under ``moments``: this is for timing, never for a trial.
"""

from __future__ import annotations

import os

PARTS = ("moments", "writes", "gradients", "parameters")


def apply(spec: str | None = None) -> list[str]:
    """Switch off the parts named in ``spec`` (default: ``$SMDEBUG_BENCH_ABLATE``); the parts."""
    spec = os.environ.get("SMDEBUG_BENCH_ABLATE", "") if spec is None else spec
    parts = [p for p in (s.strip() for s in spec.replace(",", "+").split("+")) if p]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        raise SystemExit(f"SMDEBUG_BENCH_ABLATE: unknown part(s) {', '.join(unknown)}; known: {', '.join(PARTS)}")
    if "moments" in parts:
        import numpy as np

        from smdebug.core.tensors import batched_adapter
        from smdebug.pytorch.adapter import TorchOps

        batched_adapter.needs_abs_sum = lambda ops: False  # no |t| buffer either
        if hasattr(batched_adapter, "moments_kernel"):  # nor the one-pass kernel
            batched_adapter.moments_kernel.kernel = lambda: None
        TorchOps.moments = staticmethod(lambda ts, abs_ts=None: np.ones((len(ts), 5), dtype=np.float32))
    if "writes" in parts:
        from smdebug.core.output.step_writer import StepWriter

        def drop(self, rec):
            if rec.held:
                self.adapter.release(rec.held)
                rec.held = []

        StepWriter._write = drop
    if "gradients" in parts:
        from smdebug.pytorch.hook import Hook

        Hook._grad_hook = lambda self, pname: lambda param: None
    if "parameters" in parts:
        from smdebug.core.engine.hook import BaseHook

        BaseHook._save_deferred = lambda self, named_values: None
    return parts
