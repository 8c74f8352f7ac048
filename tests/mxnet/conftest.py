"""MXNet tests run in .venv-mxnet (mxnet 1.9.1 needs numpy<1.24): `make test` runs them there with
`-m mxnet`; elsewhere each module skips itself (mxskip.import_mxnet), saying why."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def pytest_collection_modifyitems(config, items):
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.mxnet)
