"""The era policy for dual-era servers (docs/protocol-eras.md), through the C ABI,
against the default servers of four SDKs nobody here wrote: the Python `mcp` SDK 2.3
(tests/peers/py_dual_peer.py), FastMCP 4.2 (tests/peers/fastmcp_peer.py), rmcp 3.11
(tests/rmcp-peer) and the TypeScript SDK 2.4 (tests/peers/ts_peer.mjs), each over stdio and
stateful streamable HTTP, with no per-server config:
- every push-style asking tool is answered on its first call (accept, decline, cancel);
- MRTR-style tools: answered where the SDK bridges them into the handshake era (TypeScript,
  Python's resolver API); where it does not (FastMCP, rmcp) the call says how to reach them,
  and `"protocol": "modern-first"` does;
- stateless HTTP (no session can carry a push question) speaks MCP 2026-07-28, where MRTR
  asks; without a resolver every dual-era server speaks 2026-07-28;
- the status names how each era was reached (`eraReason`);
- a dozen dual-era servers connected beside two busy loops get the eras each gets alone, run
  after run, with and without a resolver."""

import json
import os
import socket
import subprocess
import sys
import time

import pytest

import tnlib
from conftest import REPO, stop

PEERS = os.path.join(REPO, ".cache", "peers")
NM = os.path.join(PEERS, "npm-modern", "node_modules")
PY = os.path.join(PEERS, "py", "bin", "python")
FM = os.path.join(PEERS, "fastmcp", "bin", "python")
TS_PEER = os.path.join(REPO, "tests", "peers", "ts_peer.mjs")
PY_PEER = os.path.join(REPO, "tests", "peers", "py_dual_peer.py")
FM_PEER = os.path.join(REPO, "tests", "peers", "fastmcp_peer.py")
RMCP = os.path.join(REPO, "target", "debug", "tn-rmcp-peer")
ENV = {"PEER_NODE_MODULES": NM}

pytestmark = pytest.mark.skipif(
    not (os.path.isdir(NM) and os.path.exists(PY) and os.path.exists(FM) and os.path.exists(RMCP)),
    reason="run scripts/install-peers.sh and cargo build --workspace first (scripts/test does both)")

# sdk -> how to start it (stdio; stateful HTTP; stateless HTTP), its push-style and MRTR-style
# asking tools, and whether it bridges an MRTR tool into the handshake era.
SDKS = {
    "py": {"stdio": [PY, PY_PEER, "stdio"], "http": [PY, PY_PEER, "http"],
           "stateless": [PY, PY_PEER, "http-stateless-sse"],
           "push": "ask_ctx", "mrtr": "ask_name_dual", "bridges": True},
    "fm": {"stdio": [FM, FM_PEER, "stdio"], "http": [FM, FM_PEER, "http"],
           "stateless": [FM, FM_PEER, "http-stateless"],
           "push": "ask_push", "mrtr": "ask_mrtr", "bridges": False},
    "rs": {"stdio": [RMCP, "stdio"], "http": [RMCP, "http"], "stateless": [RMCP, "http-stateless"],
           "push": "ask_push", "mrtr": "ask_mrtr", "bridges": False},
    "ts": {"stdio": ["node", TS_PEER, "stdio-dual"], "http": ["node", TS_PEER, "http-sessions"],
           "stateless": ["node", TS_PEER, "http-dual"],
           "push": "ask_push", "mrtr": "ask_shim", "bridges": True},
}

ANSWERS = {
    "accept": '{"ok":true,"data":{"name":"Ada"}}',
    "decline": '{"ok":false,"reason":"declined"}',
    "cancel": '{"ok":false,"reason":"cancelled"}',
}


class Asker:
    """A resolver whose answer a test sets; records the Requests it was given."""

    def __init__(self):
        self.answer = ANSWERS["accept"]
        self.seen = []
        self.resolver = tnlib.Resolver(self.fn)

    def fn(self, request_json, responder):
        self.seen.append(json.loads(request_json))
        tnlib.answer(responder, self.answer)
        return tnlib.TN_RESOLVED


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def serve(argv):
    port = free_port()
    proc = subprocess.Popen(argv + ["--port", str(port)], env=dict(os.environ, **ENV),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 30
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
def http_servers():
    """Every SDK's stateful and stateless HTTP server: {(sdk, kind): url}."""
    started, urls = [], {}
    try:
        for sdk, d in SDKS.items():
            for kind in ("http", "stateless"):
                proc, url = serve(d[kind])
                started.append(proc)
                urls[(sdk, kind)] = url
        yield urls
    finally:
        for p in started:
            stop(p)


def entry(sdk, transport, http_servers, **extra):
    if transport == "stdio":
        e = {"command": SDKS[sdk]["stdio"], "env": ENV}
    else:
        e = {"url": http_servers[(sdk, transport)]}
    e.update(extra)
    return e


@pytest.fixture(scope="module")
def defaults(http_servers):
    """One client, every SDK over stdio and stateful HTTP, no per-server config."""
    asker = Asker()
    servers = {}
    for sdk in SDKS:
        servers[sdk + "_stdio"] = entry(sdk, "stdio", http_servers)
        servers[sdk + "_http"] = entry(sdk, "http", http_servers)
    c = tnlib.Client({"mcpServers": servers}, asker.resolver)
    yield c, asker
    c.disconnect()


def call(c, name, args="{}"):
    r = json.loads(c.result(name, args))
    return r["output"], r["isError"]


def action_of(out):
    got = json.loads(out)
    return got["action"], got.get("content")


CASES = [(sdk, t) for sdk in SDKS for t in ("stdio", "http")]


def test_the_statuses_name_the_era_and_why(defaults):
    c, _ = defaults
    st = json.loads(c.statuses_text())["servers"]
    for sdk, t in CASES:
        s = st["%s_%s" % (sdk, t)]
        assert s["status"] == "connected" and s["era"] == "legacy", (sdk, t, s)
        if t == "stdio":
            assert "stdio carries push-style questions" in s["eraReason"], s
        else:
            assert "offers an HTTP session" in s["eraReason"] and "2026-07-28 too" in s["eraReason"], s


@pytest.mark.parametrize("sdk, transport", CASES)
@pytest.mark.parametrize("answer", ["accept", "decline", "cancel"])
def test_push_style_questions_are_answered_on_the_first_call(defaults, sdk, transport, answer):
    c, asker = defaults
    asker.answer, asker.seen = ANSWERS[answer], []
    out, err = call(c, "%s_%s_%s" % (sdk, transport, SDKS[sdk]["push"]))
    assert not err, out
    action, content = action_of(out)
    assert action == answer, out
    if answer == "accept":
        assert content["name"] == "Ada", out  # plus any schema defaults (SEP-1034)
    assert [r["prompt"] for r in asker.seen] == ["Who are you?"], asker.seen


@pytest.mark.parametrize("sdk, transport", [(s, t) for s, t in CASES if SDKS[s]["bridges"]])
@pytest.mark.parametrize("answer", ["accept", "decline", "cancel"])
def test_mrtr_style_questions_that_the_sdk_bridges_are_answered(defaults, sdk, transport, answer):
    c, asker = defaults
    asker.answer = ANSWERS[answer]
    out, err = call(c, "%s_%s_%s" % (sdk, transport, SDKS[sdk]["mrtr"]))
    assert not err, out
    assert action_of(out)[0] == answer, out


@pytest.mark.parametrize("sdk, transport", [(s, t) for s, t in CASES if not SDKS[s]["bridges"]])
def test_mrtr_only_tools_say_how_to_reach_them_and_modern_first_does(defaults, http_servers, sdk, transport):
    c, asker = defaults
    asker.answer = ANSWERS["accept"]
    out, err = call(c, "%s_%s_%s" % (sdk, transport, SDKS[sdk]["mrtr"]))
    assert err and '"protocol": "modern-first"' in out, out
    a = Asker()
    c2 = tnlib.Client({"mcpServers": {"s": entry(sdk, transport, http_servers, protocol="modern-first")}}, a.resolver)
    try:
        st = json.loads(c2.statuses_text())["servers"]["s"]
        assert st["era"] == "modern" and "server/discover" in st["eraReason"], st
        out, err = call(c2, "s_" + SDKS[sdk]["mrtr"])
        assert not err and action_of(out)[0] == "accept" and action_of(out)[1]["name"] == "Ada", out
    finally:
        c2.disconnect()


@pytest.mark.parametrize("sdk", list(SDKS))
def test_stateless_http_asks_through_mrtr(http_servers, sdk):
    a = Asker()
    c = tnlib.Client({"mcpServers": {"s": entry(sdk, "stateless", http_servers)}}, a.resolver)
    try:
        st = json.loads(c.statuses_text())["servers"]["s"]
        assert st["era"] == "modern" and "no HTTP session" in st["eraReason"], st
        out, err = call(c, "s_" + SDKS[sdk]["mrtr"])
        assert not err and action_of(out)[0] == "accept", out
    finally:
        c.disconnect()


@pytest.mark.parametrize("sdk, transport", CASES)
def test_without_a_resolver_dual_servers_speak_2026(http_servers, sdk, transport):
    c = tnlib.Client({"mcpServers": {"s": entry(sdk, transport, http_servers)}})
    try:
        st = json.loads(c.statuses_text())["servers"]["s"]
        assert st["era"] == "modern" and st["eraReason"] == "the server answered server/discover (2026-07-28)", st
        assert call(c, "s_echo", '{"text":"hi"}') == ("hi", False)
    finally:
        c.disconnect()


def test_protocol_modern_first_for_the_whole_client(http_servers):
    cfg = {"toolnexus": {"protocol": "modern-first"},
           "mcpServers": {"a": entry("ts", "stdio", http_servers), "b": entry("rs", "http", http_servers),
                          "c": entry("py", "stdio", http_servers, protocol="auto")}}
    c = tnlib.Client(cfg, Asker().resolver)
    try:
        st = json.loads(c.statuses_text())["servers"]
        assert st["a"]["era"] == "modern" and st["b"]["era"] == "modern", st
        assert st["c"]["era"] == "legacy", "a server's own protocol wins: %s" % st["c"]
    finally:
        c.disconnect()
    with pytest.raises(tnlib.ConnectError) as e:
        tnlib.Client({"toolnexus": {"protocol": "newest"}, "mcpServers": {}})
    assert e.value.status == tnlib.TN_ERR_CONFIG and "toolnexus.protocol" in e.value.message


# ---------------------------------------------------------------- under load

LOADED = {**{"ts%d" % i: ("ts", "stdio") for i in range(8)}, **{"py%d" % i: ("py", "stdio") for i in range(4)}}


def eras(c):
    st = json.loads(c.statuses_text())["servers"]
    return {n: (s["status"], s.get("era"), s.get("eraReason")) for n, s in st.items()}


@pytest.mark.parametrize("with_resolver", [True, False])
def test_the_era_does_not_depend_on_load(http_servers, with_resolver):
    resolver = Asker().resolver if with_resolver else None
    alone = {}
    for kind in ("ts", "py"):
        c = tnlib.Client({"mcpServers": {"one": entry(kind, "stdio", http_servers)}}, resolver)
        alone[kind] = eras(c)["one"]
        c.disconnect()
    assert alone["ts"][0] == alone["py"][0] == "connected", alone
    cfg = {"mcpServers": {n: entry(sdk, t, http_servers) for n, (sdk, t) in LOADED.items()}}
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        for run in range(10):
            c = tnlib.Client(cfg, resolver)
            got = eras(c)
            c.disconnect()
            for name, (sdk, _) in LOADED.items():
                assert got[name] == alone[sdk], "run %d, %s: %s alone, %s loaded" % (run, name, alone[sdk], got[name])
    finally:
        for b in busy:
            b.kill()
            b.wait()


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_modern_only_rmcp_server_with_a_resolver_connects_in_2026(transport):
    # rmcp 3.11 with `supported_protocol_versions` set to 2026-07-28 alone and its usual
    # `serve(stdio()).await?` main: over stdio it answers `initialize` with -32022 and exits 1
    # soon after; the library starts it again and speaks 2026-07-28 to the new child. Over HTTP
    # the probe goes first and the refused `initialize` costs a request, not a process.
    proc = None
    if transport == "stdio":
        spec = {"command": [RMCP, "stdio-modern"]}
    else:
        proc, url = serve([RMCP, "http-modern"])
        spec = {"url": url}
    a = Asker()
    c = tnlib.Client({"mcpServers": {"rs": spec}}, a.resolver)
    try:
        st = json.loads(c.statuses_text())["servers"]["rs"]
        assert st["status"] == "connected" and st["era"] == "modern", st
        assert st["protocolVersion"] == "2026-07-28", st
        if transport == "stdio":
            assert "-32022" in st["eraReason"] and "started again" in st["eraReason"], st
        else:
            assert "refused the handshake" in st["eraReason"], st
        assert call(c, "rs_echo", '{"text":"hé"}') == ("hé", False)
        out, err = call(c, "rs_ask_mrtr")
        assert not err and action_of(out) == ("accept", {"name": "Ada"}), out
        assert [r["prompt"] for r in a.seen] == ["Who are you?"], a.seen
    finally:
        c.disconnect()
        if proc:
            stop(proc)
