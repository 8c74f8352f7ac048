"""Shared test helpers: the golden trials, smdebug 1.0.34's interpreter, running a JSON script."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# trials written by smdebug 1.0.34 and the project's tools that wrote and read them, copied into
# the repository (tests/golden/README.md): a clone alone runs the tests that need them
GOLDEN = REPO / "tests" / "golden"
FIXTURES = GOLDEN / "smdebug-1.0.34"
ORACLE = GOLDEN / "tools" / "oracle.py"
RECIPES = GOLDEN / "tools" / "fixture_recipes.py"


def peer_python() -> str:
    """The python of the side virtualenv holding smdebug 1.0.34 (made by `make peer`)."""
    exe = os.environ.get("SMDEBUG_PEER_PYTHON") or str(REPO / ".venv-peer" / "bin" / "python")
    if not Path(exe).exists():
        pytest.fail(f"smdebug 1.0.34 interpreter not found at {exe}: run `make peer` (make test does)")
    return exe


def run_json(python: str, script: Path | str, *args: str, timeout: int = 300):
    import json

    # another interpreter (1.0.34's .venv-peer) must not import this tree's smdebug from PYTHONPATH
    env = None if python == sys.executable else {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [python, str(script), *map(str, args)], capture_output=True, text=True, timeout=timeout, env=env
    )
    if proc.returncode != 0:
        raise AssertionError(f"{python} {script} {args} failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout)


def flatten_oracle(d, prefix=()):
    """Nested oracle JSON -> {key path: leaf}; digests and {'raises': ...} are leaves."""
    if isinstance(d, dict) and "raises" not in d and not {"dtype", "sha"} <= set(d) and "strings" not in d:
        out = {}
        for k, v in d.items():
            out.update(flatten_oracle(v, (*prefix, k)))
        return out
    return {prefix: d}


def random_array(rng, dtype, shape, scale, offset):
    """Normal values times ``scale`` plus ``offset`` in ``dtype`` (bool: above the offset; integers
    clipped to the dtype's range)."""
    import numpy as np

    x = rng.standard_normal(shape) * scale + offset
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return np.asarray(x > offset)
    if dt.kind in "iu":
        x = np.clip(x, np.iinfo(dt).min, np.iinfo(dt).max)
    with np.errstate(over="ignore"):
        return np.asarray(x).astype(dt)


def ready_moments_kernel():
    """The compiled one-pass moments kernel (core.tensors.moments_kernel), waited for; the test is
    skipped where there is none to have (no numba, or $SMDEBUG_MOMENTS_KERNEL=0)."""
    pytest.importorskip("numba")
    from smdebug.core.tensors import moments_kernel

    if os.environ.get(moments_kernel.ENV) == "0":
        pytest.skip(f"{moments_kernel.ENV}=0")
    k = moments_kernel.wait(120)
    assert k is not None
    return k


class FakeClock:
    """A clock a test moves: ``clock()`` is the time, ``clock.sleep(dt)`` moves it on."""

    def __init__(self, now: float = 1000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now

    def sleep(self, dt: float) -> None:
        self.now += dt
