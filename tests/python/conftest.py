"""Shared pytest fixtures for the Python tests (test_client.py, test_real_peers.py).

`connect` yields a factory for tnlib.Client objects and disconnects whatever a test left
connected when it ends (pass or fail), so no child process outlives its test.
"""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import tnlib  # noqa: E402

REPO = os.path.normpath(os.path.join(HERE, "..", ".."))


@pytest.fixture
def connect():
    made = []

    def make(config, resolver=None):
        client = tnlib.Client(config, resolver)
        made.append(client)
        return client

    yield make
    for client in made:
        client.disconnect()
