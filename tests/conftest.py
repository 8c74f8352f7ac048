"""Session fixtures shared by every test folder."""

from __future__ import annotations

import importlib.abc
import itertools
import logging
import sys

import pytest

from chromium import Chromium
from s3server import MotoServer, S3Proxy
from smdtest import peer_python, ready_moments_kernel


@pytest.fixture(autouse=True)
def _logging_enabled():
    """Logging on for every test: a test that imports the recipes (tests/golden/tools/fixture_recipes.py calls
    logging.disable) or a command that silences logging must not hide what a later test asserts."""
    logging.disable(logging.NOTSET)
    yield


@pytest.fixture
def kernel():
    return ready_moments_kernel()


@pytest.fixture(params=["numba kernel", "framework ops"])
def moments_by(request, monkeypatch):
    """Each test twice: with the moments kernel ready, and as before it is (or without numba)."""
    if request.param == "numba kernel":
        ready_moments_kernel()
    else:
        from smdebug.core.tensors import moments_kernel

        monkeypatch.setattr(moments_kernel, "kernel", lambda: None)
    return request.param


@pytest.fixture(scope="session")
def peer():
    return peer_python()


@pytest.fixture(scope="session")
def ours_python():
    return sys.executable


# ---------------------------------------------------------------- S3: a moto server process
_BUCKETS = itertools.count()

# the standard AWS chain, pinned to dummy values so nothing real is ever reached
_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_CONFIG_FILE": "/nonexistent/aws-config",
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws-credentials",
}
_AWS_UNSET = ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_REGION", "AWS_ENDPOINT_URL")


@pytest.fixture(scope="session")
def moto_server(tmp_path_factory):
    server = MotoServer(str(tmp_path_factory.mktemp("moto") / "moto.log"))
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def aws_env(moto_server):
    """Dummy credentials and AWS_ENDPOINT_URL_S3 -> moto for the whole session."""
    with pytest.MonkeyPatch.context() as mp:
        for k, v in _AWS_ENV.items():
            mp.setenv(k, v)
        for k in _AWS_UNSET:
            mp.delenv(k, raising=False)
        mp.setenv("AWS_ENDPOINT_URL_S3", moto_server.url)
        yield moto_server.url


@pytest.fixture(scope="session")
def boto_client(aws_env):
    import boto3

    return boto3.client("s3", endpoint_url=aws_env, region_name="us-east-1")


@pytest.fixture
def bucket(boto_client) -> str:
    """A fresh, empty bucket (created directly on moto, not through the proxy)."""
    name = f"smd-test-{next(_BUCKETS)}"
    boto_client.create_bucket(Bucket=name)
    return name


@pytest.fixture(scope="session")
def _proxy(moto_server):
    proxy = S3Proxy(moto_server.url)
    yield proxy
    proxy.close()


@pytest.fixture
def proxy(_proxy, aws_env, monkeypatch) -> S3Proxy:
    """The counting proxy, counters cleared and faults off; stores opened now go through it."""
    _proxy.reset()
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", _proxy.url)
    yield _proxy
    _proxy.reset()


# ---------------------------------------------------------------- headless Chromium (tests/chromium.py)
@pytest.fixture
def chromium(tmp_path):
    browser = Chromium(tmp_path / "chromium-profile")
    yield browser
    browser.close()


# ---------------------------------------------------------------- make check: the framework-free tests
# `pytest --framework-free` (make check) runs what a clone of the repo alone can run in well under a
# minute: no framework, no smdebug 1.0.34, no moto, no browser. A test that needs one is skipped
# and says which (the summary counts them); nothing is passed without running.
_BLOCKED = ("torch", "tensorflow", "keras", "xgboost", "mxnet", "jax", "flax", "optax", "moto")
_NEEDS = {
    "peer": "smdebug 1.0.34's virtualenv (.venv-peer)",
    "moto_server": "a moto S3 server",
    "chromium": "headless Chromium",
    "trace_viewer": "chrome://tracing's trace viewer in headless Chromium",
    "trainer": "a PyTorch training process",
}

# tests whose training runs in a child process (the blocker sees only this one)
_CHILD_NEEDS = {
    "pytorch/test_hook_distributed.py::": "torch",
    "rules/test_stop_training_e2e.py::test_exploding_tensor_stops_a_running_job": "torch",
    "rules/test_rule_realtime.py::test_invoke_rule_follows_a_running_training": "torch",
    "cli/test_cli_watch_s3.py::test_watch_follows_a_running_job_and_stops_it": "torch",
    "compat/test_1034_quirks.py::test_star_import_brings_collection_keys[smdebug.pytorch.": "torch",
    "integrations/test_optional_engines.py::test_smdebug_imports_no_engine": "torch",
    "reliability/test_backtracking_regex.py::test_hook_answers_at_once": "torch",
}


class _FrameworkBlocker(importlib.abc.MetaPathFinder):
    """Test code importing a framework skips its test (or module); a library probing for one
    (``try: import torch``) finds it not installed, as it would in a clone without it."""

    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        if top not in _BLOCKED:
            return None
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename.startswith("<frozen"):
            frame = frame.f_back
        caller = frame.f_code.co_filename if frame is not None else ""
        if "site-packages" in caller:
            raise ModuleNotFoundError(f"No module named {top!r} (left out by --framework-free)", name=top)
        pytest.skip(f"needs {top}: left out of the framework-free run (make check)", allow_module_level=True)


def pytest_addoption(parser):
    parser.addoption(
        "--framework-free",
        action="store_true",
        help="skip every test that needs a framework, smdebug 1.0.34, moto or Chromium (make check)",
    )


def pytest_configure(config):
    if config.getoption("--framework-free"):
        sys.meta_path.insert(0, _FrameworkBlocker())


# folders where every test trains a framework's model: not even collected
_FRAMEWORK_DIRS = ("pytorch", "tfhook", "xgboost", "mxnet", "s3")


def pytest_ignore_collect(collection_path, config):
    if config.getoption("--framework-free") and collection_path.parent.name == "tests":
        return collection_path.name in _FRAMEWORK_DIRS or None
    return None


def pytest_report_header(config):
    if config.getoption("--framework-free"):
        left = ", ".join(f"tests/{d}" for d in _FRAMEWORK_DIRS)
        return f"framework-free run (make check): {left} left out, tests needing a framework skipped"
    return None


def pytest_collection_modifyitems(config, items):
    if not config.getoption("--framework-free"):
        return
    for item in items:
        needs = [why for name, why in _NEEDS.items() if name in getattr(item, "fixturenames", ())]
        needs += [top for prefix, top in _CHILD_NEEDS.items() if item.nodeid.partition("tests/")[2].startswith(prefix)]
        callspec = getattr(item, "callspec", None)
        if callspec is not None and callspec.params.get("backend") == "s3":
            needs.append("a moto S3 server")
        if needs:
            item.add_marker(
                pytest.mark.skip(reason=f"needs {needs[0]}: left out of the framework-free run (make check)")
            )
