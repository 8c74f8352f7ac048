"""Shared test helpers: where ../shared lives, smdebug 1.0.34's interpreter, running a JSON script."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
FIXTURES = SHARED / "fixtures" / "smdebug-1.0.34"
ORACLE = SHARED / "tools" / "oracle.py"


def peer_python() -> str:
    """The python of the side virtualenv holding smdebug 1.0.34 (made by `make peer`)."""
    exe = os.environ.get("SMDEBUG_PEER_PYTHON") or str(REPO / ".venv-peer" / "bin" / "python")
    if not Path(exe).exists():
        pytest.fail(f"smdebug 1.0.34 interpreter not found at {exe}: run `make peer` (make test does)")
    return exe


def run_json(python: str, script: Path | str, *args: str, timeout: int = 300):
    import json

    env = None
    if python != sys.executable:  # another interpreter (smdebug 1.0.34's) must not import our sources
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
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
