"""Session fixtures shared by every test folder."""

from __future__ import annotations

import sys

import pytest

from smdtest import peer_python


@pytest.fixture(scope="session")
def peer():
    return peer_python()


@pytest.fixture(scope="session")
def ours_python():
    return sys.executable
