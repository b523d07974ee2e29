"""Stops the session early when the fixture server is missing (helpers: tn_support.py)."""

import os

import pytest

from tn_support import FIXTURE


@pytest.fixture(scope="session", autouse=True)
def _fixture_server_exists():
    if not os.path.exists(FIXTURE):
        pytest.exit("fixture server not found at %s (run `cargo build --workspace`)" % FIXTURE, 2)
