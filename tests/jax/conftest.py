"""Fixtures for the JAX hook tests; puts ``train_mlp`` (the training loop) on sys.path.

Every test here trains with JAX, Flax and optax: the modules skip themselves where those are not
installed, and in the framework-free run (make check: tests/conftest.py blocks their import)."""

import logging
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

_ENV = ("SMDEBUG_PROPAGATE_ERRORS", "SMDEBUG_CONFIG_FILE_PATH", "TRAINING_JOB_NAME", "SMDEBUG_NONFINITE_STEPS")


@pytest.fixture(autouse=True)
def _clean_hook_env(monkeypatch):
    """No SageMaker config, errors propagated (a test sees the hook's own errors), no active hook left."""
    for k in _ENV:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("SMDEBUG_PROPAGATE_ERRORS", "1")
    logging.disable(logging.NOTSET)
    yield
    from smdebug.jax import del_hook

    del_hook()


@pytest.fixture(scope="session")
def trained(tmp_path_factory):
    """tests/jax/train_mlp.py's run on one device, in this process: (trial path, train_mlp.Run)."""
    import train_mlp

    path = tmp_path_factory.mktemp("jax") / "trial"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SMDEBUG_PROPAGATE_ERRORS", "1")
        run = train_mlp.train(str(path))
    return path, run
