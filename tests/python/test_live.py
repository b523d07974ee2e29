"""Long-lived hosts through the C ABI, over HTTP and against a real peer (the stdio
cases are tests/c/live.c): tool-list changes over streamable HTTP in the handshake era (the
standalone GET stream) and in MCP 2026-07-28 (the `subscriptions/listen` stream), against the
fixture and the TypeScript SDK 2.4 server (`registerTool` / `RegisteredTool.remove()`, the SDK's
own list-changed notifications, over stdio and HTTP); log messages over HTTP in both eras; a
remote server that went away and came back, reconnected by the next call on a new session
(and, in MCP 2026-07-28, its subscription opened again)."""

import json
import os
import socket
import subprocess
import time

import pytest

import tnlib
from conftest import REPO, stop

FIXTURE = os.environ.get("TN_FIXTURE") or os.path.join(REPO, "target", "debug", "tn-fixture-server")
NM = os.path.join(REPO, ".cache", "peers", "npm-modern", "node_modules")
TS_PEER = os.path.join(REPO, "tests", "peers", "ts_peer.mjs")

pytestmark = pytest.mark.skipif(not os.path.exists(FIXTURE), reason="build tn-fixture-server first")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def fixture_http(port, *flags):
    """A fixture server in HTTP mode on 127.0.0.1:`port`; (process, URL)."""
    proc = subprocess.Popen([FIXTURE, "--http", "127.0.0.1:%d" % port] + list(flags),
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()
    assert line.startswith("listening on "), line
    return proc, line.split()[-1]


@pytest.fixture
def procs():
    started = []
    yield started
    for p in started:
        stop(p)


def tools_event(ev, start=0, **want):
    """The next tools event from `start` whose lists contain what `want` names."""
    return ev.wait(lambda e: e["type"] == "tools" and all(set(v) <= set(e[k]) for k, v in want.items()),
                   start=start)


def check_list_changes(c, ev, server, add, toggle_on, toggle_off, extra_output):
    """`toggle_on` adds tool `add` of `server`, `toggle_off` removes it: the events name the change,
    tn_list_tools follows, a call to the removed tool says it was removed."""
    name = "%s_%s" % (server, add)
    assert name not in [t["name"] for t in json.loads(c.tools_text())]
    assert json.loads(c.result(*toggle_on))["isError"] is False
    i, e = tools_event(ev, added=[name])
    assert e == {"type": "tools", "server": server, "added": [name], "removed": [], "changed": []}, e
    listed = [t for t in json.loads(c.tools_text()) if t["name"] == name]
    assert len(listed) == 1 and listed[0]["server"] == server and listed[0]["remoteName"] == add, listed
    assert json.loads(c.result(name, "{}")) == {"output": extra_output, "isError": False}
    assert json.loads(c.result(*toggle_off))["isError"] is False
    _, e = tools_event(ev, start=i + 1, removed=[name])
    assert e["added"] == [] and e["server"] == server, e
    assert name not in [t["name"] for t in json.loads(c.tools_text())]
    assert c.call(name, "{}") == (tnlib.TN_ERR_NOT_FOUND,
                                  "no tool named `%s`: server `%s` removed it (its tool list changed)" % (name, server))
    status = json.loads(c.statuses_text())["servers"][server]
    assert status["status"] == "connected" and isinstance(status["toolsRefreshedAtMs"], int), status


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_list_changes_over_http(procs, connect, era):
    proc, url = fixture_http(0, "--live", *(["--modern"] if era == "modern" else []))
    procs.append(proc)
    c = connect({"mcpServers": {"fx": {"url": url}}})
    assert json.loads(c.statuses_text())["servers"]["fx"]["era"] == era
    ev = c.events()
    check_list_changes(c, ev, "fx", "live_extra", ("fx_toggle_tool", '{"on":true}'),
                       ("fx_toggle_tool", '{"on":false}'), "live_extra ok")


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_log_messages_over_http(procs, connect, era):
    proc, url = fixture_http(0, "--live", *(["--modern"] if era == "modern" else []))
    procs.append(proc)
    c = connect({"mcpServers": {"fx": {"url": url, "logLevel": "warning"}}})
    ev = c.events()
    assert "not logged info" in c.result("fx_log", '{"level":"info","message":"quiet"}')
    assert "logged error" in c.result("fx_log", '{"level":"error","logger":"db","message":"boom"}')
    _, e = ev.wait(lambda e: e["type"] == "log")
    assert e == {"type": "log", "server": "fx", "level": "error", "logger": "db", "data": "boom"}, e
    assert not [x for x in ev.items if x["type"] == "log" and x["data"] == "quiet"]


@pytest.mark.skipif(not os.path.isdir(NM), reason="run scripts/install-peers.sh first (scripts/test always does)")
@pytest.mark.parametrize("mode", ["stdio-modern", "stdio-dual", "http-modern"])
def test_ts_sdk_server_tool_list_changes(procs, connect, mode):
    """A real peer: the TypeScript SDK 2.4 registers and removes a tool and announces it itself
    (stdio: notifications/tools/list_changed in the handshake era, on the subscription in
    MCP 2026-07-28; HTTP: the handler's subscriptions/listen bus)."""
    if mode.startswith("stdio"):
        entry = {"command": ["node", TS_PEER, mode, "--live"], "env": {"PEER_NODE_MODULES": NM}}
    else:
        port = free_port()
        proc = subprocess.Popen(["node", TS_PEER, mode, "--live", "--port", str(port)],
                                env=dict(os.environ, PEER_NODE_MODULES=NM),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(proc)
        deadline = time.time() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.time() < deadline and proc.poll() is None, "the peer never listened"
                time.sleep(0.05)
        entry = {"url": "http://127.0.0.1:%d/mcp" % port}
    c = connect({"mcpServers": {"ts": entry}})
    status = json.loads(c.statuses_text())["servers"]["ts"]
    assert status["status"] == "connected", status
    # stdio-dual without a resolver: the probe finds 2026-07-28 too; both eras are covered by
    # the handshake-era fixture and server-everything (test_real_peers.py) besides.
    ev = c.events()
    check_list_changes(c, ev, "ts", "extra", ("ts_toggle", "{}"), ("ts_toggle", "{}"), "extra ok")


def test_ts_sdk_server_tool_list_changes_in_the_handshake_era(connect):
    if not os.path.isdir(NM):
        pytest.skip("run scripts/install-peers.sh first (scripts/test always does)")
    entry = {"command": ["node", TS_PEER, "stdio-dual", "--live"], "env": {"PEER_NODE_MODULES": NM},
             "protocol": "legacy"}
    c = connect({"mcpServers": {"ts": entry}})
    assert json.loads(c.statuses_text())["servers"]["ts"]["era"] == "legacy"
    ev = c.events()
    check_list_changes(c, ev, "ts", "extra", ("ts_toggle", "{}"), ("ts_toggle", "{}"), "extra ok")


def test_a_remote_server_that_went_away_is_reconnected_on_the_next_call(procs, connect):
    port = free_port()
    proc, url = fixture_http(port, "--live")
    c = connect({"mcpServers": {"fx": {"url": url, "timeout": 3000}}})
    assert json.loads(c.result("fx_echo", '{"text":"one"}'))["output"] == "one"
    stop(proc)
    r = json.loads(c.result("fx_echo", '{"text":"away"}'))
    assert r["isError"] is True and "server `fx`" in r["output"], r
    proc, url2 = fixture_http(port, "--live")
    procs.append(proc)
    assert url2 == url
    # The new process knows nothing of the old session: a 404, a new session, the call sent on it.
    assert json.loads(c.result("fx_echo", '{"text":"two"}')) == {"output": "two", "isError": False}
    deadline = time.time() + 10
    while "toolsRefreshedAtMs" not in json.loads(c.statuses_text())["servers"]["fx"]:
        assert time.time() < deadline, "the new session's tools are listed again"
        time.sleep(0.05)
    assert json.loads(c.statuses_text())["servers"]["fx"]["status"] == "connected"


def test_a_modern_server_that_came_back_gets_its_subscription_again(procs, connect):
    port = free_port()
    proc, url = fixture_http(port, "--live", "--modern")
    c = connect({"mcpServers": {"fx": {"url": url}}})
    ev = c.events()
    stop(proc)
    proc, _ = fixture_http(port, "--live", "--modern")
    procs.append(proc)
    # The listen stream is opened again (with backoff, from 250 ms): the new acknowledgement
    # lists the tools again (changes while it was away may have been missed), and changes on
    # the new process arrive.
    deadline = time.time() + 15
    while True:
        r = json.loads(c.result("fx_toggle_tool", '{"on":true}'))
        assert r["isError"] is False, r
        try:
            tools_event(ev, added=["fx_live_extra"])
            break
        except AssertionError:
            assert time.time() < deadline, ev.items
            c.result("fx_toggle_tool", '{"on":false}')
    assert "fx_live_extra" in [t["name"] for t in json.loads(c.tools_text())]
