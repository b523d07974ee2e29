"""Shared pytest fixtures for the Python tests (test_client.py, test_real_peers.py).

`connect` yields a factory for tnlib.Client objects and disconnects whatever a test left
connected when it ends (pass or fail), so no child process outlives its test.
"""

import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import tnlib  # noqa: E402

REPO = os.path.normpath(os.path.join(HERE, "..", ".."))


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "valgrind: also run under valgrind by scripts/test (\"python valgrind\", `-m valgrind`): "
        "the parity vectors and the client tests of the C ABI's memory paths, kept quick under valgrind",
    )


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


def stop(proc):
    """Ends a server process the tests started: SIGTERM, then SIGKILL after 5 s."""
    proc.terminate()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module")
def scripted():
    """The scripted HTTP server (scripted_http.py), its base URL; one per test module."""
    proc = subprocess.Popen([sys.executable, os.path.join(HERE, "scripted_http.py")],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    port = int(proc.stdout.readline())
    yield "http://127.0.0.1:%d" % port
    stop(proc)
