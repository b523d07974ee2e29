"""Calls the host controls (contract §7) through the C ABI: progress in order before done, an
idle timeout that progress restarts and maxTotalTimeout still bounds, cancel and per-call
timeouts, over stdio and streamable HTTP, against server-everything (its
trigger-long-running-operation reports progress) and the fixture server."""

import json
import os
import threading
import time

import pytest

import tnlib
from conftest import REPO
from test_http import EV, LOOPBACK, ev_http, output, peers_installed, start_server  # noqa: F401


def ev_config(transport, url=None, **extra):
    if transport == "stdio":
        return {"mcpServers": {"ev": dict({"command": ["node", EV, "stdio"], "timeout": 10000}, **extra)}}
    return {"mcpServers": {"ev": dict({"url": url, "timeout": 10000}, **extra)}}


@pytest.fixture(params=["stdio", "http"])
def ev(request, peers_installed):  # noqa: F811
    """(transport, a config factory) for server-everything over stdio or streamable HTTP."""
    if request.param == "stdio":
        yield "stdio", lambda **extra: ev_config("stdio", **extra)
    else:
        url = request.getfixturevalue("ev_http")
        yield "http", lambda **extra: ev_config("http", url, **extra)


def test_progress_arrives_in_order_before_done(connect, ev):
    _, cfg = ev
    c = connect(cfg())
    call = c.start("ev_trigger-long-running-operation", '{"duration":1,"steps":4}')
    assert call.status == tnlib.TN_OK, call.error
    out, err = output(call.wait())
    assert not err and "Long running operation completed" in out, out
    notes = [json.loads(p) for p, _, _ in call.progress]
    assert [n["progress"] for n in notes] == [1, 2, 3, 4], notes
    assert all(n["total"] == 4 for n in notes), notes
    assert not any(after for _, _, after in call.progress), "no progress after done"
    me = threading.get_ident()
    assert all(t != me for _, t, _ in call.progress) and call.done_calls[0][2] != me
    assert len(call.done_calls) == 1


def test_progress_restarts_the_timeout_and_max_total_still_ends_it(connect, ev):
    _, cfg = ev
    # a 3 s job with progress every 300 ms against a 1 s (idle) timeout: it survives
    c = connect(cfg(timeout=1000))
    t0 = time.time()
    out, err = output(c.result("ev_trigger-long-running-operation", '{"duration":3,"steps":10}'))
    assert not err and "Long running operation completed" in out, out
    assert time.time() - t0 >= 2.5
    # the same with maxTotalTimeout 1.5 s: it ends there, server told
    c2 = connect(cfg(timeout=1000, maxTotalTimeout=1500))
    t0 = time.time()
    call = c2.start("ev_trigger-long-running-operation", '{"duration":3,"steps":10}')
    out, err = output(call.wait())
    assert err and "still running after maxTotalTimeout (1500 ms)" in out, out
    assert 1.3 < time.time() - t0 < 2.8
    assert len(call.progress) >= 3


def test_without_progress_the_idle_timeout_ends_it(connect, ev):
    _, cfg = ev
    c = connect(cfg(timeout=10000))
    call = c.start("ev_trigger-long-running-operation", '{"duration":3,"steps":1}', '{"timeoutMs":700}')
    out, err = output(call.wait())
    assert err and "timed out: no answer within 700 ms" in out, out


def test_cancel_over_both_transports(connect, ev):
    transport, cfg = ev
    c = connect(cfg())
    call = c.start("ev_trigger-long-running-operation", '{"duration":20,"steps":20}')
    while not call.progress:
        time.sleep(0.02)
    t0 = time.time()
    assert c.cancel(call.call_id) == (tnlib.TN_OK, "")
    out, err = output(call.wait(10))
    assert err and "was cancelled" in out and time.time() - t0 < 3, out
    n = len(call.progress)
    time.sleep(1.5)
    assert len(call.progress) == n, "no progress after done"
    assert c.cancel(call.call_id)[0] == tnlib.TN_ERR_NOT_FOUND
    # the server goes on serving
    out, err = output(c.result("ev_echo", '{"message":"after"}'))
    assert not err and "after" in out


def test_a_cancel_that_loses_the_race_is_not_found(connect):
    fx = os.environ.get("TN_FIXTURE") or os.path.join(REPO, "target", "debug", "tn-fixture-server")
    c = connect({"mcpServers": {"fx": {"command": [fx]}}})
    call = c.start("fx_echo", '{"text":"quick"}')
    assert output(call.wait()) == ("quick", False)
    assert c.cancel(call.call_id)[0] == tnlib.TN_ERR_NOT_FOUND
