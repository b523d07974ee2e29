"""Both protocol eras (contract §6) through the C ABI, against real peers started here: the
TypeScript SDK 2.4 server (tests/peers/ts_peer.mjs) modern-only and dual-era, over stdio and
stateless streamable HTTP; the Python `mcp` 2.3 dual-era server (tests/peers/py_dual_peer.py)
over stdio and stateless HTTP; server-everything (legacy only) and the fixture server in the
same config. MRTR onto the same resolver (inline, deferred, two questions in a round, a server
that never stops asking), -32042, durable suspension resumed from a second process."""

import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

import tnlib
from conftest import HERE, REPO, stop

PEERS = os.path.join(REPO, ".cache", "peers")
NM = os.path.join(PEERS, "npm-modern", "node_modules")
PY = os.path.join(PEERS, "py", "bin", "python")
TS_PEER = os.path.join(REPO, "tests", "peers", "ts_peer.mjs")
PY_PEER = os.path.join(REPO, "tests", "peers", "py_dual_peer.py")
EV = os.path.join(PEERS, "npm", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
FIXTURE = os.environ.get("TN_FIXTURE") or os.path.join(REPO, "target", "debug", "tn-fixture-server")

pytestmark = pytest.mark.skipif(not (os.path.isdir(NM) and os.path.exists(PY)),
                                reason="run scripts/install-peers.sh first (scripts/test always does)")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def serve(argv, log=None):
    port = free_port()
    argv = argv + ["--port", str(port)]
    proc = subprocess.Popen(argv, env=dict(os.environ, PEER_NODE_MODULES=NM), stdout=subprocess.DEVNULL,
                            stderr=log or subprocess.DEVNULL)
    deadline = time.time() + 20
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("peer exited early: %s" % argv)
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, "http://127.0.0.1:%d/mcp" % port
        except OSError:
            time.sleep(0.05)
    stop(proc)
    raise RuntimeError("peer never listened: %s" % argv)


@pytest.fixture(scope="module")
def http_peers(tmp_path_factory):
    logs = tmp_path_factory.mktemp("peer-logs")
    started, urls = [], {}
    try:
        for name, argv in [("hm", ["node", TS_PEER, "http-modern"]), ("hd", ["node", TS_PEER, "http-dual"]),
                           ("hp", [PY, PY_PEER, "http-stateless"])]:
            log = open(os.path.join(logs, name + ".log"), "w")
            proc, url = serve(argv, log)
            started.append(proc)
            urls[name] = (url, os.path.join(logs, name + ".log"))
        yield urls
    finally:
        for p in started:
            stop(p)


def config(http_peers, **extra):
    """Every kind of server in one config (§6: users mix them)."""
    env = {"PEER_NODE_MODULES": NM}
    servers = {
        "tsm": {"command": ["node", TS_PEER, "stdio-modern"], "env": env},
        # Dual-era servers over stdio speak the handshake era by default when a resolver is
        # registered (docs/protocol-eras.md, tests/python/test_dual_era.py); here they are asked for
        # MCP 2026-07-28, whose features these tests are about.
        "tsd": {"command": ["node", TS_PEER, "stdio-dual"], "env": env, "protocol": "modern-first"},
        "pyd": {"command": [PY, PY_PEER, "stdio"], "protocol": "modern-first"},
        "hm": {"url": http_peers["hm"][0]},
        "hd": {"url": http_peers["hd"][0]},
        "hp": {"url": http_peers["hp"][0]},
        "ev": {"command": ["node", EV, "stdio"]},
        "fx": {"command": [FIXTURE]},
    }
    for s in servers.values():
        s.update(extra)
    return {"mcpServers": servers}


MODERN = ["tsm", "tsd", "pyd", "hm", "hd", "hp"]
ASK = {"tsm": "ask", "tsd": "ask", "hm": "ask", "hd": "ask", "pyd": "ask_name_dual", "hp": "ask_name_dual"}


class Asker:
    """A resolver that answers from a script and records every Request it was given."""

    def __init__(self, answer='{"ok":true,"data":{"name":"Ada","ok":true}}', mode="inline"):
        self.answer, self.mode, self.seen = answer, mode, []
        self.resolver = tnlib.Resolver(self.fn)

    def fn(self, request_json, responder):
        req = json.loads(request_json)
        self.seen.append(req)
        if self.mode == "suspend":
            return tnlib.TN_SUSPEND
        if self.mode == "deferred":
            threading.Timer(0.2, lambda: tnlib.answer(responder, self.answer)).start()
            return tnlib.TN_DEFERRED
        tnlib.answer(responder, self.answer)
        return tnlib.TN_RESOLVED


@pytest.fixture(scope="module")
def everyone(http_peers):
    asker = Asker()
    c = tnlib.Client(config(http_peers), asker.resolver)
    yield c, asker
    c.disconnect()


def output(text):
    r = json.loads(text)
    return r["output"], r["isError"]


def test_every_era_in_one_config(everyone):
    c, _ = everyone
    st = json.loads(c.statuses_text())["servers"]
    for name in MODERN:
        assert st[name]["status"] == "connected" and st[name]["era"] == "modern", (name, st[name])
        assert st[name]["protocolVersion"] == "2026-07-28", st[name]
    for name in ("ev", "fx"):
        assert st[name]["era"] == "legacy" and st[name]["protocolVersion"] == "2025-11-25", st[name]
    names = [t["name"] for t in json.loads(c.tools_text())]
    for name in MODERN:
        assert name + "_echo" in names
        assert output(c.result(name + "_echo", '{"text":"hi é"}')) == ("hi é", False), name


@pytest.mark.parametrize("server", MODERN)
@pytest.mark.parametrize("answer, action", [
    ('{"ok":true,"data":{"name":"Ada","age":36}}', "accept"),
    ('{"ok":false,"reason":"declined"}', "decline"),
    ('{"ok":false,"reason":"cancelled"}', "cancel"),
])
@pytest.mark.parametrize("mode", ["inline", "deferred"])
def test_mrtr_answers(http_peers, server, answer, action, mode):
    asker = Asker(answer, mode)
    c = tnlib.Client({"mcpServers": {server: config(http_peers)["mcpServers"][server]}}, asker.resolver)
    try:
        out, err = output(c.result("%s_%s" % (server, ASK[server])))
    finally:
        c.disconnect()
    assert not err, out
    got = json.loads(out)
    assert got["action"] == action, got
    if action == "accept":
        assert got["content"] == {"name": "Ada", "age": 36}, got
    assert [r["prompt"] for r in asker.seen] == ["Who are you?"]
    assert asker.seen[0]["kind"] == "input" and asker.seen[0]["data"]["schema"]["required"] == ["name"]


@pytest.mark.parametrize("server, tool", [("tsm", "ask_two"), ("hd", "ask_two"), ("pyd", "ask_two"), ("hp", "ask_two")])
def test_two_questions_in_one_round(everyone, server, tool):
    c, asker = everyone
    asker.seen.clear()
    out, err = output(c.result("%s_%s" % (server, tool)))
    assert not err, out
    assert sorted(r["prompt"] for r in asker.seen) == ["Proceed?", "Who are you?"] if server.startswith(("p", "hp")) \
        else [r["prompt"] for r in asker.seen] == ["Your name?", "Proceed?"], asker.seen
    assert "accept" in out and "cancel" not in out, out


@pytest.mark.parametrize("server", ["tsm", "hm", "pyd"])
def test_a_server_that_never_stops_asking(everyone, server):
    c, asker = everyone
    asker.seen.clear()
    out, err = output(c.result(server + "_ask_forever"))
    assert err and "still asked for input after 10 rounds" in out, out
    assert len(asker.seen) == 10, len(asker.seen)


def test_url_mode_mrtr_and_a_request_only_round(everyone):
    c, asker = everyone
    asker.seen.clear()
    out, err = output(c.result("tsm_ask_url", '{"url":"https://example.com/auth"}'))
    assert not err and json.loads(out)["auth"] == {"action": "accept"}, out
    assert asker.seen == [{"id": asker.seen[0]["id"], "kind": "authorization", "prompt": "Please authorize.",
                           "url": "https://example.com/auth", "data": {"server": "tsm", "source": "retry"}}], asker.seen
    out, err = output(c.result("hm_state_only"))
    assert not err and json.loads(out)["requestState"] == "come-back", out


def test_routing_headers_over_http(everyone):
    c, _ = everyone
    # the TS server checks Mcp-Param-Region against the body (400 -32020 on a mismatch)
    out, err = output(c.result("hm_region", '{"region":"Hello, 世界","query":"q"}'))
    assert (out, err) == ("Hello, 世界: q", False)
    out, err = output(c.result("hm_region", '{"region":"eu-west","query":"q"}'))
    assert (out, err) == ("eu-west: q", False)


def test_without_a_resolver_a_modern_server_that_asks_says_so(http_peers):
    c = tnlib.Client({"mcpServers": {"tsm": config(http_peers)["mcpServers"]["tsm"],
                                     "hp": config(http_peers)["mcpServers"]["hp"]}})
    try:
        for name, tool in [("tsm", "ask"), ("hp", "ask_name_dual")]:
            out, err = output(c.result("%s_%s" % (name, tool)))
            # both SDKs refuse to ask a client that declared no elicitation (-32021)
            assert err and "-32021" in out and out.endswith("no resolver is registered"), out
        st = json.loads(c.statuses_text())["servers"]
        assert st["tsm"]["lastElicitationError"] == "the server asked for input; no resolver is registered"
    finally:
        c.disconnect()


def test_minus_32042_is_asked_and_retried_once(http_peers):
    """server-everything (legacy) answers -32042 first, then takes the request path."""
    asker = Asker('{"ok":true}')
    c = tnlib.Client({"mcpServers": {"ev": {"command": ["node", EV, "stdio"]}}}, asker.resolver)
    try:
        out, err = output(c.result("ev_trigger-url-elicitation",
                                   '{"url":"https://example.com/a","elicitationId":"el-9","errorPath":true}'))
    finally:
        c.disconnect()
    assert not err and "User completed the URL elicitation flow" in out, out
    first = asker.seen[0]
    assert first["kind"] == "authorization" and first["url"] == "https://modelcontextprotocol.io", first
    assert first["data"] == {"server": "ev", "source": "retry"}, first
    # the retry's own push is a legacy URL-mode elicitation: the §4 shape (no data)
    assert asker.seen[1]["kind"] == "authorization" and "data" not in asker.seen[1], asker.seen


def test_a_declined_browser_step_names_it(http_peers):
    asker = Asker('{"ok":false,"reason":"declined"}')
    c = tnlib.Client({"mcpServers": {"ev": {"command": ["node", EV, "stdio"]}}}, asker.resolver)
    try:
        out, err = output(c.result("ev_trigger-url-elicitation", '{"url":"https://example.com/a","errorPath":true}'))
    finally:
        c.disconnect()
    assert err and "was declined" in out and "https://modelcontextprotocol.io" in out, out


RESUME_SCRIPT = r"""
import json, sys
sys.path.insert(0, %r)
import tnlib
cfg, token, answers = sys.argv[1], sys.argv[2], sys.argv[3]
c = tnlib.Client(cfg)
try:
    print(json.dumps(c.resume(token, answers)))
finally:
    c.disconnect()
""" % HERE


@pytest.mark.parametrize("server", ["tsm", "hp"])
def test_suspension_is_resumed_from_a_second_process(http_peers, server):
    cfg = {"mcpServers": {server: config(http_peers)["mcpServers"][server]}}
    asker = Asker(mode="suspend")
    c = tnlib.Client(cfg, asker.resolver)
    try:
        r = json.loads(c.result("%s_%s" % (server, ASK[server])))
    finally:
        c.disconnect()
    assert r["isError"] is False and r["output"] == "The server asked for input; the call is suspended.\nWho are you?", r
    pending = r["metadata"]["pending"]
    assert [q["id"] for q in pending["requests"]] == [asker.seen[0]["id"]]
    token = pending["resume"]
    assert token.startswith("tn1.") and NM not in token
    answers = json.dumps({pending["requests"][0]["id"]: {"ok": True, "data": {"name": "Resumed"}}})
    env = dict(os.environ, PEER_NODE_MODULES=NM)
    done = subprocess.run([sys.executable, "-c", RESUME_SCRIPT, json.dumps(cfg), token, answers],
                          capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    status, text = json.loads(done.stdout)
    assert status == tnlib.TN_OK, text
    out, err = output(text)
    assert not err and json.loads(out)["content"] == {"name": "Resumed", "age": 30}, out


def test_resume_tokens_are_checked(everyone, http_peers):
    c, _ = everyone
    assert c.resume("nope", "{}")[0] == tnlib.TN_ERR_INVALID_ARGUMENT
    assert c.resume("tn1.!!!", "{}")[0] == tnlib.TN_ERR_INVALID_ARGUMENT
    asker = Asker(mode="suspend")
    one = tnlib.Client({"mcpServers": {"tsm": config(http_peers)["mcpServers"]["tsm"]}}, asker.resolver)
    try:
        r = json.loads(one.result("tsm_ask"))
    finally:
        one.disconnect()
    token = r["metadata"]["pending"]["resume"]
    status, msg = c.resume(token, '{"elc-not-in-token":{"ok":true}}')
    assert status == tnlib.TN_ERR_INVALID_ARGUMENT and "not the id of a Request" in msg, msg
    other = tnlib.Client({"mcpServers": {"fx": {"command": [FIXTURE]}}})
    try:
        status, msg = other.resume(token, "{}")
        assert status == tnlib.TN_ERR_NOT_FOUND and "`tsm`" in msg, msg
    finally:
        other.disconnect()
    # the same server, now configured for the legacy era: an isError, nothing sent
    legacy = tnlib.Client({"mcpServers": {"tsm": dict(config(http_peers)["mcpServers"]["tsd"], protocol="legacy")}})
    try:
        status, text = legacy.resume(token, "{}")
        assert status == tnlib.TN_OK and "cannot be resumed" in text, text
    finally:
        legacy.disconnect()


def test_protocol_modern_against_a_legacy_server_names_2026(http_peers):
    c = tnlib.Client({"mcpServers": {"fx": {"command": [FIXTURE], "protocol": "modern"}}})
    try:
        st = json.loads(c.statuses_text())["servers"]["fx"]
    finally:
        c.disconnect()
    assert st["status"] == "failed" and "2026-07-28" in st["error"] and "`discover`" in st["error"], st


def test_modern_cancel_closes_the_stream_and_progress_flows(http_peers):
    url, log = http_peers["hm"]
    c = tnlib.Client({"mcpServers": {"hm": {"url": url}}})
    try:
        call = c.start("hm_slow", '{"steps":20,"ms":200}')
        while not call.progress:
            time.sleep(0.02)
        assert c.cancel(call.call_id)[0] == tnlib.TN_OK
        out, err = output(call.wait(10))
        assert err and "was cancelled" in out, out
        deadline = time.time() + 5
        while time.time() < deadline and "slow aborted" not in open(log).read():
            time.sleep(0.05)
        assert "slow aborted" in open(log).read(), "the server saw its stream closed"
        assert json.loads(call.progress[0][0])["message"] == "step 1"
    finally:
        c.disconnect()
