"""Session fixtures shared by every test folder."""

from __future__ import annotations

import itertools
import sys

import pytest

from chromium import Chromium
from s3server import MotoServer, S3Proxy
from smdtest import peer_python


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
