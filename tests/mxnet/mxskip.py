"""Skip a test module, with the reason, where mxnet cannot be imported."""

from __future__ import annotations

import sys

import pytest


def import_mxnet():
    try:
        import mxnet

        if getattr(mxnet, "__file__", None) is None:  # tests/ is on sys.path: tests/mxnet, a namespace package
            sys.modules.pop("mxnet", None)
            raise ImportError("No module named 'mxnet'")
    except Exception as exc:  # ImportError; AttributeError with numpy>=1.24 (np.bool), numpy 2 (np.PZERO)
        pytest.skip(
            f"mxnet is not importable here ({type(exc).__name__}: {exc}); MXNet 1.9.1 needs "
            "numpy<1.24, so these tests run in .venv-mxnet (make test)",
            allow_module_level=True,
        )
    return mxnet
