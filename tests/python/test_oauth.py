"""OAuth 2.1 (contract §8) against authorization servers nobody here wrote, started by the tests:

- the TypeScript SDK's example OAuth-protected MCP server (`simpleStreamableHttp.js --oauth
  --oauth-strict` from npm @modelcontextprotocol/sdk 1.x, with its demo authorization server):
  discovery, dynamic registration, the login through the library's loopback redirect with a
  resolver that follows the URL as a browser would, a tool call, then a second run with
  `auth.store` that needs no login; declined, cancelled and deferred logins; no resolver.
- oauth2-mock-server (npm) as the authorization server, in front of a small resource server
  written here (it only checks each JWT's `exp`): a refresh before the access token expires,
  and a refresh on the server's 401.

Every status, result, error and line the process printed during these runs is scanned for the
tokens, codes, verifiers and secrets (§9). Needs scripts/install-peers.sh (.cache/peers).
"""

import base64
import json
import os
import socket
import stat
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import tnlib  # noqa: E402
from conftest import stop  # noqa: E402
from tnlib import TN_DEFERRED, TN_RESOLVED  # noqa: E402

REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
PEERS = os.path.join(REPO, ".cache", "peers")
LOOPBACK = os.path.join(PEERS, "loopback.cjs")
TS_EXAMPLE = os.path.join(PEERS, "npm", "node_modules", "@modelcontextprotocol", "sdk", "dist",
                          "esm", "examples", "server", "simpleStreamableHttp.js")
MOCK_AS = os.path.join(REPO, "tests", "peers", "oauth_mock_as.mjs")
MOCK_AS_PKG = os.path.join(PEERS, "oauth-npm", "node_modules", "oauth2-mock-server", "package.json")

missing = [p for p in (TS_EXAMPLE, MOCK_AS_PKG, LOOPBACK) if not os.path.exists(p)]
pytestmark = pytest.mark.skipif(bool(missing), reason="run scripts/install-peers.sh: missing %s" % missing)

# Everything the library handed back during the runs (statuses, results, errors, Requests).
SEEN = []
# The secret values met during the runs.
SECRETS = set()
NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@pytest.fixture(autouse=True)
def printed(capfd):
    """Whatever the process printed during each test (the library's stderr included) joins
    what the last test scans."""
    yield
    out, err = capfd.readouterr()
    SEEN.extend([out, err])


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("the server exited: %s" % proc.stdout.read())
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("nothing listens on port %d" % port)


class Browser:
    """A resolver that does what a browser would: GET the authorization URL, following the
    redirects to the library's loopback redirect URI. `mode`: "inline" answers before
    returning; "deferred" returns TN_DEFERRED and answers from another thread; "decline" and
    "fail" do not open the URL."""

    def __init__(self, mode="inline"):
        self.mode = mode
        self.requests = []
        self.landed = []
        self.resolver = tnlib.Resolver(self)

    def open(self, url):
        with NO_PROXY.open(url, timeout=10) as r:
            self.landed.append(r.geturl())
            r.read()
        code = urllib.parse.parse_qs(urllib.parse.urlparse(r.geturl()).query).get("code")
        SECRETS.update(code or [])

    def __call__(self, request_json, responder):
        req = json.loads(request_json)
        self.requests.append(req)
        SEEN.append(request_json.decode())
        assert req["kind"] == "authorization" and req["data"]["source"] == "oauth", req
        if self.mode == "decline":
            tnlib.answer(responder, b'{"ok":false,"reason":"declined"}')
            return TN_RESOLVED
        if self.mode == "fail":
            return 3
        if self.mode == "deferred":
            def later():
                self.open(req["url"])
                tnlib.answer(responder, b'{"ok":true}')
            threading.Thread(target=later).start()
            return TN_DEFERRED
        self.open(req["url"])
        tnlib.answer(responder, b'{"ok":true}')
        return TN_RESOLVED


def status_of(client, name):
    text = client.statuses_text()
    SEEN.append(text)
    return json.loads(text)["servers"][name]


def call(client, name, args):
    text = client.result(name, json.dumps(args))
    SEEN.append(text)
    return json.loads(text)


def remember_store(path):
    for e in json.load(open(path))["entries"]:
        SECRETS.add(e["tokens"]["accessToken"])
        if e["tokens"].get("refreshToken"):
            SECRETS.add(e["tokens"]["refreshToken"])
        if e["client"].get("secret"):
            SECRETS.add(e["client"]["secret"])


@pytest.fixture(scope="module")
def ts_server():
    mcp_port, auth_port = free_port(), free_port()
    env = dict(os.environ, MCP_PORT=str(mcp_port), MCP_AUTH_PORT=str(auth_port))
    proc = subprocess.Popen(["node", "--require", LOOPBACK, TS_EXAMPLE, "--oauth", "--oauth-strict"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_port(mcp_port, proc)
        wait_port(auth_port, proc)
        # Its resource is http://localhost:PORT/mcp: configure `localhost` (§8 compares as written).
        yield "http://localhost:%d/mcp" % mcp_port
    finally:
        stop(proc)


def test_ts_example_login_call_then_store(ts_server, tmp_path):
    store = str(tmp_path / "tokens.json")
    cfg = {"mcpServers": {"ts": {"url": ts_server, "auth": {"store": store}}}}
    browser = Browser()
    with tnlib.Client(cfg, browser.resolver) as c:
        st = status_of(c, "ts")
        assert st["status"] == "connected", st
        assert browser.resolver.errors == []
        assert len(browser.requests) == 1
        q = urllib.parse.parse_qs(urllib.parse.urlparse(browser.requests[0]["url"]).query)
        assert q["code_challenge_method"] == ["S256"] and q["resource"] == [ts_server]
        assert q["redirect_uri"][0].startswith("http://127.0.0.1:") and q["redirect_uri"][0].endswith("/callback")
        assert browser.requests[0]["data"] == {"server": "ts", "source": "oauth"}
        assert browser.landed[0].startswith(q["redirect_uri"][0] + "?code=")
        out = call(c, "ts_greet", {"name": "oauth"})
        assert out["isError"] is False and "oauth" in out["output"], out
    assert stat.S_IMODE(os.stat(store).st_mode) == 0o600
    remember_store(store)
    # A second run with the store: no login at all.
    nobody = Browser(mode="fail")
    with tnlib.Client(cfg, nobody.resolver) as c:
        st = status_of(c, "ts")
        assert st["status"] == "connected", st
        assert nobody.requests == []
        assert call(c, "ts_greet", {"name": "again"})["isError"] is False


def test_ts_example_declined_cancelled_deferred_and_no_resolver(ts_server):
    cfg = {"mcpServers": {"ts": {"url": ts_server}}}
    declined = Browser(mode="decline")
    with tnlib.Client(cfg, declined.resolver) as c:
        st = status_of(c, "ts")
        assert st["status"] == "failed"
        assert st["error"] == "server `ts` failed during `auth`: the login was declined", st
    failing = Browser(mode="fail")
    with tnlib.Client(cfg, failing.resolver) as c:
        st = status_of(c, "ts")
        assert st["error"] == "server `ts` failed during `auth`: the login was cancelled", st
    deferred = Browser(mode="deferred")
    with tnlib.Client(cfg, deferred.resolver) as c:
        assert status_of(c, "ts")["status"] == "connected"
        assert call(c, "ts_greet", {"name": "later"})["isError"] is False
    with tnlib.Client(cfg) as c:
        st = status_of(c, "ts")
        assert st["status"] == "failed"
        assert "failed during `auth`" in st["error"] and "no resolver is registered" in st["error"], st
    # A login that nobody completes waits at most elicitationTimeout.
    slow = {"mcpServers": {"ts": {"url": ts_server, "elicitationTimeout": 300}}}
    idle = tnlib.Resolver(lambda req, responder: TN_DEFERRED)
    t0 = time.time()
    with tnlib.Client(slow, idle) as c:
        st = status_of(c, "ts")
    assert time.time() - t0 < 5
    assert "not completed within elicitationTimeout (300 ms)" in st["error"], st


class ResourceServer(BaseHTTPRequestHandler):
    """A minimal streamable-HTTP MCP server (JSON replies) that takes a bearer JWT while its
    `exp` is in the future and answers 401 with a challenge otherwise."""

    issuer = None
    denied = []
    tokens = []

    def log_message(self, *a):
        pass

    def reply(self, code, body=None, headers=()):
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def base(self):
        return "http://127.0.0.1:%d" % self.server.server_address[1]

    def do_GET(self):
        if self.path == "/.well-known/oauth-protected-resource/mcp":
            self.reply(200, {"resource": self.base() + "/mcp", "authorization_servers": [self.issuer],
                             "scopes_supported": ["mcp"]})
        elif self.path == "/mcp":
            self.reply(405)
        else:
            self.reply(404, {"error": "not found"})

    def do_DELETE(self):
        self.reply(200)

    def valid(self):
        h = self.headers.get("Authorization", "")
        if not h.startswith("Bearer "):
            return False
        tok = h[7:]
        try:
            payload = tok.split(".")[1]
            claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        except Exception:
            return False
        return claims.get("exp", 0) > time.time()

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        if not self.valid():
            ResourceServer.denied.append(self.headers.get("Authorization", ""))
            meta = self.base() + "/.well-known/oauth-protected-resource/mcp"
            return self.reply(401, {"error": "invalid_token"},
                              [("WWW-Authenticate", 'Bearer error="invalid_token", resource_metadata="%s"' % meta)])
        ResourceServer.tokens.append(self.headers["Authorization"][7:])
        if "id" not in body:
            return self.reply(202)
        m, rid = body.get("method"), body["id"]
        if m == "initialize":
            result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                      "serverInfo": {"name": "rs", "version": "1"}}
        elif m == "tools/list":
            result = {"tools": [{"name": "whoami", "inputSchema": {"type": "object"}},
                                {"name": "echo-token", "inputSchema": {"type": "object"}}]}
        elif m == "tools/call" and body["params"]["name"] == "echo-token":
            # A server that echoes the request's credentials in an error body.
            return self.reply(403, {"error": "forbidden", "got": self.headers["Authorization"]})
        elif m == "tools/call":
            result = {"content": [{"type": "text", "text": "authorized"}]}
        else:
            return self.reply(200, {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": m}})
        self.reply(200, {"jsonrpc": "2.0", "id": rid, "result": result})


@pytest.fixture
def mock_as():
    """oauth2-mock-server with access tokens living `ttl` seconds; `expires_in` as told."""
    procs = []

    def start(ttl, announced="honest"):
        proc = subprocess.Popen(["node", MOCK_AS, str(ttl), announced], cwd=REPO, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                env=dict(os.environ, OAUTH_NPM=os.path.join(PEERS, "oauth-npm")))
        procs.append(proc)
        issuer = proc.stdout.readline().strip()
        assert issuer.startswith("http://"), issuer
        log = []

        def read():
            for line in proc.stdout:
                try:
                    log.append(json.loads(line))
                except ValueError:
                    pass
        threading.Thread(target=read, daemon=True).start()
        ResourceServer.issuer = issuer
        ResourceServer.denied, ResourceServer.tokens = [], []
        rs = ThreadingHTTPServer(("127.0.0.1", 0), ResourceServer)
        threading.Thread(target=rs.serve_forever, daemon=True).start()
        procs.append(rs)
        return "http://127.0.0.1:%d/mcp" % rs.server_address[1], log

    yield start
    for p in procs:
        if isinstance(p, ThreadingHTTPServer):
            p.shutdown()
        else:
            stop(p)


def remember_log(log):
    for entry in log:
        for k, v in entry.items():
            if v and k != "grant_type":
                SECRETS.add(v)


SECRET = "mock-client-secret-0123456789"


def test_refresh_before_expiry(mock_as, tmp_path):
    url, log = mock_as(ttl=4)
    store = str(tmp_path / "t.json")
    cfg = {"mcpServers": {"rs": {"url": url, "auth": {"clientId": "toolnexus-test", "clientSecret": SECRET,
                                                       "store": store}}}}
    SECRETS.add(SECRET)
    browser = Browser()
    with tnlib.Client(cfg, browser.resolver) as c:
        assert status_of(c, "rs")["status"] == "connected"
        assert call(c, "rs_whoami", {})["isError"] is False
        denied_before = len(ResourceServer.denied)
        time.sleep(3)  # 1 s left: less than min(60 s, half of expires_in) -> due
        assert call(c, "rs_whoami", {})["output"] == "authorized"
        grants = [e["grant_type"] for e in log]
        assert grants == ["authorization_code", "refresh_token"], log
        assert len(ResourceServer.denied) == denied_before, "refreshed before the server had to refuse"
        assert log[1]["refresh_token"] == log[0]["issued_refresh_token"]
        assert log[0]["code_verifier"]
        echoed = call(c, "rs_echo-token", {})
        assert echoed["isError"] is True and "HTTP 403" in echoed["output"], echoed
        assert "Bearer ***" in echoed["output"], echoed
    remember_log(log)
    remember_store(store)


def test_refresh_on_401(mock_as):
    url, log = mock_as(ttl=2, announced="3600")  # the server says an hour; the token lives 2 s
    cfg = {"mcpServers": {"rs": {"url": url, "auth": {"clientId": "toolnexus-test"}}}}
    browser = Browser()
    with tnlib.Client(cfg, browser.resolver) as c:
        assert status_of(c, "rs")["status"] == "connected"
        time.sleep(2.5)
        denied_before = len(ResourceServer.denied)
        assert call(c, "rs_whoami", {})["output"] == "authorized"
        assert len(ResourceServer.denied) == denied_before + 1
        assert [e["grant_type"] for e in log] == ["authorization_code", "refresh_token"], log
        assert len(browser.requests) == 1, "a refresh, not a second login"
    remember_log(log)


def test_zz_no_secret_in_any_output(capfd):
    """Runs last (file order): every status, result, Request and line printed above, plus the
    library's own output captured here, holds none of the secret values met."""
    out, err = capfd.readouterr()
    SEEN.extend([out, err])
    secrets = {s for s in SECRETS if s and len(s) >= 6}
    assert len(secrets) >= 8, "the runs above should have met tokens, codes, verifiers: %s" % len(secrets)
    text = "\n".join(SEEN)
    leaked = [s[:6] + "…" for s in secrets if s in text]
    assert not leaked, "secrets found in the library's output: %s" % leaked
