"""The profiler tests: no SageMaker profiler config from the environment, no active hook left behind."""

import pytest


@pytest.fixture(autouse=True)
def _no_profiler_env(monkeypatch, tmp_path):
    monkeypatch.setenv("SMPROFILER_CONFIG_PATH", str(tmp_path / "no-profilerconfig.json"))
    monkeypatch.delenv("SMDEBUG_PROPAGATE_ERRORS", raising=False)
    yield
