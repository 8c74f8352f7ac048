"""Fixtures for the Trial/Tensor tests; puts ``trialgen`` (the trial writer helper) on sys.path.

Every test that asks for ``backend`` (directly, or through ``root`` / ``module_root``) runs twice:
on a local folder (id ``...[local]``) and on ``s3://`` against the session's moto server (id
``...[s3]``), with the same assertions.
"""

import os
import sys
import uuid

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from trialgen import Root  # noqa: E402

BACKENDS = ("local", "s3")

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


@pytest.hookimpl(trylast=True)
def pytest_generate_tests(metafunc):
    # trylast: after the tests' own parametrize marks, so the backend is the id's last part
    # (test_x[local], test_y[3-s3]); module scope groups a module's tests by backend
    if "backend" in metafunc.fixturenames:
        metafunc.parametrize("backend", BACKENDS, indirect=True, scope="module")


@pytest.fixture(scope="module")
def backend(request) -> str:
    """The backend, "local" or "s3"; for "s3" the moto server is up and the AWS environment points to it."""
    if request.param == "s3":
        request.getfixturevalue("aws_env")
    return request.param


@pytest.fixture
def root(backend, request, tmp_path) -> Root:
    """An empty trial location for one test: ``<tmp>/trial`` or ``s3://<fresh bucket>/trial``."""
    if backend == "s3":
        return Root(f"s3://{request.getfixturevalue('bucket')}/trial")
    return Root(str(tmp_path / "trial"))


@pytest.fixture(scope="module")
def module_root(backend, request, tmp_path_factory) -> Root:
    """An empty location shared by a module's tests (for trials written once per module)."""
    if backend == "s3":
        name = f"smd-trials-{uuid.uuid4().hex[:12]}"
        request.getfixturevalue("boto_client").create_bucket(Bucket=name)
        return Root(f"s3://{name}/trials")
    return Root(str(tmp_path_factory.mktemp("trials")))
