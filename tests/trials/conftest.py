"""Fixtures for the Trial/Tensor tests; puts ``trialgen`` (the trial writer helper) on sys.path."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

_ENV_KNOBS = (
    "SMDEBUG_INCOMPLETE_STEP_WAIT_WINDOW",
    "SMDEBUG_COLLECTION_WAIT_TIMEOUT",
    "SMDEBUG_POLL_INTERVAL",
)


@pytest.fixture(autouse=True)
def _clean_trial_env(monkeypatch):
    """Every test starts from the defaults of the trial knobs, except a tiny poll interval."""
    for k in _ENV_KNOBS:
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("SMDEBUG_POLL_INTERVAL", "0.01")
