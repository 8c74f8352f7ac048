"""Fixtures for the XGBoost hook tests; puts ``xgbutil`` (the helpers) on sys.path."""

import logging
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

_ENV = ("SMDEBUG_PROPAGATE_ERRORS", "SMDEBUG_CONFIG_FILE_PATH", "TRAINING_JOB_NAME")


@pytest.fixture(autouse=True)
def _clean_hook_env(monkeypatch):
    """No SageMaker config, errors not propagated, logging on, no active hook left behind."""
    for k in _ENV:
        monkeypatch.delenv(k, raising=False)
    logging.disable(logging.NOTSET)
    yield
    from smdebug.xgboost import del_hook

    del_hook()
