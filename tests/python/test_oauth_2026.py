"""The 2026 authorization rules through the C ABI (contract §8), against an
authorization server and an MCP server written here (they check what the library sends with
PyJWT on `cryptography`, code nobody here wrote):

- SEP-837: dynamic registration declares `application_type` ("native" for the loopback
  redirect, "web" for a host's https redirect).
- SEP-2468 / RFC 8414 §3.3: metadata naming another issuer than the one it was looked up for
  is refused, its endpoints never used.
- SEP-1933 workload identity: `auth.grant: "jwt-bearer"` with `auth.assertion` (from the
  environment) or `auth.assertionFile`, no browser, one token request even when refused.
- DPoP (RFC 9449): proofs at the token endpoint and on every MCP request, the DPoP scheme,
  nonces from both servers, the refresh with the same key, and a second run from `auth.store`
  with the key kept there.
- A server of the 2024-11-05 HTTP+SSE transport behind OAuth, configured as `type: "sse"` or
  reached by the fallback: its event stream's GET and every POST carry the token, a 401 on the
  GET runs the login.

Every status and result is scanned for the tokens, codes and assertions (§9).
"""

import base64
import hashlib
import json
import os
import queue
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

jwt = pytest.importorskip("jwt")
pytest.importorskip("cryptography")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import tnlib  # noqa: E402
from tnlib import TN_RESOLVED  # noqa: E402

NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))
AS_NONCE = "as-nonce-7"
RS_NONCE = "rs-nonce-9"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"


def b64url(raw):
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def thumbprint(jwk):
    canon = json.dumps({k: jwk[k] for k in ("crv", "kty", "x", "y")}, separators=(",", ":"), sort_keys=True)
    return b64url(hashlib.sha256(canon.encode()).digest())


class World:
    """An authorization server and an MCP server (one process, two ports) and what they saw.

    `issuer`: the metadata's `issuer` ("{as}" is the real one); `dpop`: ES256 offered and
    proofs required; `nonces`: both servers want a nonce; `expires_in` of the tokens."""

    def __init__(self, issuer="{as}", dpop=False, nonces=False, expires_in=3600, registration=True,
                 grants=("authorization_code", "refresh_token"), legacy=False, rotate=False):
        self.issuer_template, self.dpop, self.nonces = issuer, dpop, nonces
        # legacy: the MCP server speaks HTTP+SSE (2024-11-05) at /sse, POSTs at /messages.
        self.legacy, self.outbox, self.stopping = legacy, queue.Queue(), threading.Event()
        # rotate: with nonces, every response the MCP server gives hands out the next nonce
        # (RFC 9449 §8.2) and only the latest is accepted.
        self.rotate, self.rs_current, self.rs_challenges = rotate, RS_NONCE, 0
        self.expires_in, self.registration, self.grants = expires_in, registration, grants
        self.lock = threading.Lock()
        self.seen = []          # (server, method, path, headers, body) of every request
        self.registrations = []
        self.token_requests = []  # (form, proof claims or None)
        self.errors = []        # what a check here found wrong
        self.bound = {}         # token -> jkt (None: a bearer token)
        self.codes = {}
        self.jtis = set()
        self.rs_schemes = []
        self.rs_nonce_challenged = self.rs_nonce_honored = False
        self.as_nonce_challenged = self.as_nonce_honored = False
        self.secrets = set()
        self.counter = 0
        world = self

        class AS(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                world.on_as(self, "GET")

            def do_POST(self):
                world.on_as(self, "POST")

        class RS(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                world.on_rs(self, "GET")

            def do_POST(self):
                world.on_rs(self, "POST")

            def do_DELETE(self):
                world.on_rs(self, "DELETE")

        self.servers = [ThreadingHTTPServer(("127.0.0.1", 0), h) for h in (AS, RS)]
        for s in self.servers:
            threading.Thread(target=s.serve_forever, daemon=True).start()
        self.as_base = "http://127.0.0.1:%d" % self.servers[0].server_address[1]
        self.rs_base = "http://127.0.0.1:%d" % self.servers[1].server_address[1]
        self.url = self.rs_base + ("/sse" if legacy else "/mcp")

    def close(self):
        self.stopping.set()
        for s in self.servers:
            s.shutdown()
            s.server_close()

    # ------------------------------------------------------------------ plumbing

    @staticmethod
    def reply(h, code, body=None, headers=()):
        data = json.dumps(body).encode() if body is not None else b""
        h.send_response(code)
        for k, v in headers:
            h.send_header(k, v)
        if body is not None:
            h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def read(self, h, server, method):
        body = h.rfile.read(int(h.headers.get("Content-Length", 0) or 0)).decode()
        with self.lock:
            self.seen.append((server, method, h.path, dict(h.headers), body))
        return body

    def proof_claims(self, proof, htm, htu, token=None):
        """The claims of a valid proof, or None with the defect recorded in self.errors."""
        def bad(why):
            self.errors.append("%s %s: %s" % (htm, htu, why))
            return None
        if not proof or "," in proof:
            return bad("missing or several DPoP proofs")
        try:
            header = jwt.get_unverified_header(proof)
        except jwt.PyJWTError:
            return bad("not a JWT")
        jwk = header.get("jwk") or {}
        if header.get("typ") != "dpop+jwt" or header.get("alg") != "ES256" or "d" in jwk:
            return bad("header %r" % header)
        try:
            key = jwt.PyJWK(jwk, algorithm="ES256").key
            claims = jwt.decode(proof, key, algorithms=["ES256"], options={"verify_aud": False})
        except jwt.PyJWTError as e:
            return bad("signature: %s" % e)
        if claims.get("htm") != htm or claims.get("htu") != htu:
            return bad("htm/htu %r %r" % (claims.get("htm"), claims.get("htu")))
        if not isinstance(claims.get("iat"), int) or abs(claims["iat"] - time.time()) > 60:
            return bad("iat")
        with self.lock:
            if claims.get("jti") in self.jtis or not isinstance(claims.get("jti"), str):
                return bad("a jti seen before")
            self.jtis.add(claims["jti"])
        if token is not None:
            if claims.get("ath") != b64url(hashlib.sha256(token.encode()).digest()):
                return bad("ath")
            if self.bound.get(token) != thumbprint(jwk):
                return bad("the proof's key is not the token's")
        elif "ath" in claims:
            return bad("ath at the token endpoint")
        claims["_jkt"] = thumbprint(jwk)
        return claims

    # ------------------------------------------------------------------ the authorization server

    def metadata(self):
        m = {"issuer": self.issuer_template.replace("{as}", self.as_base),
             "authorization_endpoint": self.as_base + "/authorize",
             "token_endpoint": self.as_base + "/token",
             "response_types_supported": ["code"],
             "grant_types_supported": list(self.grants),
             "code_challenge_methods_supported": ["S256"],
             "token_endpoint_auth_methods_supported": ["none"],
             "authorization_response_iss_parameter_supported": True}
        if self.registration:
            m["registration_endpoint"] = self.as_base + "/register"
        if self.dpop:
            m["dpop_signing_alg_values_supported"] = ["RS256", "ES256"]
        return m

    def on_as(self, h, method):
        body = self.read(h, "as", method)
        path = urllib.parse.urlparse(h.path)
        if path.path == "/.well-known/oauth-authorization-server":
            return self.reply(h, 200, self.metadata())
        if path.path == "/register" and method == "POST":
            reg = json.loads(body)
            with self.lock:
                self.registrations.append(reg)
                self.counter += 1
                cid = "client-%d" % self.counter
            return self.reply(h, 201, dict(reg, client_id=cid))
        if path.path == "/authorize":
            q = dict(urllib.parse.parse_qsl(path.query))
            with self.lock:
                self.counter += 1
                code = "code-%d-%s" % (self.counter, os.urandom(6).hex())
                self.codes[code] = q
                self.secrets.add(code)
            to = q["redirect_uri"] + "?" + urllib.parse.urlencode(
                {"code": code, "state": q["state"], "iss": self.as_base})
            return self.reply(h, 302, None, [("Location", to)])
        if path.path == "/token" and method == "POST":
            return self.on_token(h, dict(urllib.parse.parse_qsl(body)))
        self.reply(h, 404, {"error": "not found"})

    def on_token(self, h, form):
        proof = h.headers.get("DPoP")
        claims = None
        if self.dpop:
            claims = self.proof_claims(proof, "POST", self.as_base + "/token")
            if claims is None:
                return self.reply(h, 400, {"error": "invalid_dpop_proof"})
            if self.nonces and claims.get("nonce") != AS_NONCE:
                self.as_nonce_challenged = True
                return self.reply(h, 400, {"error": "use_dpop_nonce"}, [("DPoP-Nonce", AS_NONCE)])
            if self.nonces:
                self.as_nonce_honored = True
        with self.lock:
            self.token_requests.append((form, claims))
            for k in ("code", "code_verifier", "refresh_token", "assertion"):
                if form.get(k):
                    self.secrets.add(form[k])
        grant = form.get("grant_type")
        if grant == "authorization_code":
            q = self.codes.get(form.get("code"))
            verifier = form.get("code_verifier", "")
            if not q or b64url(hashlib.sha256(verifier.encode()).digest()) != q["code_challenge"]:
                return self.reply(h, 400, {"error": "invalid_grant"})
        elif grant == "refresh_token":
            rt = form.get("refresh_token")
            if rt not in self.bound or self.bound[rt] != (claims or {}).get("_jkt"):
                return self.reply(h, 400, {"error": "invalid_grant", "error_description": "not bound to this key"})
        elif grant == JWT_BEARER:
            if form.get("assertion") != "eyJ.workload.good":
                return self.reply(h, 400, {"error": "invalid_grant",
                                           "error_description": "rejected %s" % form.get("assertion")})
        else:
            return self.reply(h, 400, {"error": "unsupported_grant_type"})
        with self.lock:
            self.counter += 1
            access = "at-%d-%s" % (self.counter, os.urandom(8).hex())
            refresh = "rt-%d-%s" % (self.counter, os.urandom(8).hex())
            jkt = claims["_jkt"] if claims else None
            self.bound[access] = self.bound[refresh] = jkt
            self.secrets.update([access, refresh])
        self.reply(h, 200, {"access_token": access, "refresh_token": refresh, "expires_in": self.expires_in,
                            "token_type": "DPoP" if claims else "Bearer"})

    # ------------------------------------------------------------------ the MCP server

    def on_rs(self, h, method):
        body = self.read(h, "rs", method)
        if method == "GET" and h.path == "/.well-known/oauth-protected-resource/mcp":
            return self.reply(h, 200, {"resource": self.url, "authorization_servers": [self.as_base]})
        scheme_word = "DPoP" if self.dpop else "Bearer"
        challenge = '%s resource_metadata="%s/.well-known/oauth-protected-resource/mcp"' % (scheme_word, self.rs_base)
        auth = h.headers.get("Authorization")
        if not auth:
            return self.reply(h, 401, {"error": "unauthorized"}, [("WWW-Authenticate", challenge)])
        scheme, _, token = auth.partition(" ")
        self.rs_schemes.append(scheme)
        if token not in self.bound:
            return self.reply(h, 401, {"error": "invalid_token"}, [("WWW-Authenticate", challenge)])
        if self.dpop:
            claims = self.proof_claims(h.headers.get("DPoP"), method, self.url, token)
            if claims is None or scheme != "DPoP":
                return self.reply(h, 401, {"error": "invalid_token"}, [("WWW-Authenticate", challenge)])
            with self.lock:
                current = self.rs_current
            if self.nonces and claims.get("nonce") != current:
                self.rs_nonce_challenged = True
                with self.lock:
                    self.rs_challenges += 1
                return self.reply(h, 401, {"error": "use_dpop_nonce"},
                                  [("WWW-Authenticate", 'DPoP error="use_dpop_nonce"'), ("DPoP-Nonce", current)])
            if self.nonces:
                self.rs_nonce_honored = True
        elif scheme != "Bearer":
            self.errors.append("scheme %s" % scheme)
        if self.legacy:
            return self.on_legacy(h, method, body)
        extra = []
        if self.rotate:
            with self.lock:
                self.counter += 1
                self.rs_current = "rs-nonce-r%d" % self.counter
                extra = [("DPoP-Nonce", self.rs_current)]
        if method == "GET":
            return self.reply(h, 405, None, extra)
        if method == "DELETE":
            return self.reply(h, 200, None, extra)
        msg = json.loads(body or "{}")
        if "id" not in msg:
            return self.reply(h, 202, None, extra)
        self.reply(h, 200, self.answer(msg, "2025-11-25"), extra)

    @staticmethod
    def answer(msg, version):
        m, rid = msg.get("method"), msg["id"]
        if m == "initialize":
            result = {"protocolVersion": version, "capabilities": {"tools": {}},
                      "serverInfo": {"name": "rs", "version": "1"}}
        elif m == "tools/list":
            result = {"tools": [{"name": "whoami", "inputSchema": {"type": "object"}}]}
        elif m == "tools/call":
            result = {"content": [{"type": "text", "text": "authorized"}]}
        else:
            return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": m}}
        return {"jsonrpc": "2.0", "id": rid, "result": result}

    def on_legacy(self, h, method, body):
        """HTTP+SSE (2024-11-05), authorized: GET /sse is the event stream (its `endpoint`
        first, then every answer); POST /messages takes a message; POST /sse is refused as a
        server of that transport refuses streamable HTTP."""
        if method == "GET" and h.path == "/sse":
            h.send_response(200)
            h.send_header("Content-Type", "text/event-stream")
            h.send_header("Cache-Control", "no-cache")
            h.end_headers()
            try:
                h.wfile.write(b"event: endpoint\ndata: /messages?session=1\n\n")
                h.wfile.flush()
                while not self.stopping.is_set():
                    try:
                        out = self.outbox.get(timeout=0.2)
                    except queue.Empty:
                        continue
                    h.wfile.write(b"event: message\ndata: " + json.dumps(out).encode() + b"\n\n")
                    h.wfile.flush()
            except OSError:
                pass
            return
        if method == "POST" and h.path.startswith("/messages"):
            msg = json.loads(body or "{}")
            self.reply(h, 202)
            if "id" in msg and "method" in msg:
                self.outbox.put(self.answer(msg, "2024-11-05"))
            return
        self.reply(h, 405)


@pytest.fixture
def world():
    made = []

    def make(**kw):
        w = World(**kw)
        made.append(w)
        return w

    yield make
    for w in made:
        w.close()


class Browser:
    """Follows the authorization URL as a browser would, to the library's loopback redirect;
    or, with `catch`, stops at the redirect and hands it back (`auth.redirectUri`)."""

    def __init__(self, catch=False):
        self.catch = catch
        self.requests = []
        self.resolver = tnlib.Resolver(self)

    def __call__(self, request_json, responder):
        req = json.loads(request_json)
        self.requests.append(req)
        assert req["kind"] == "authorization" and req["data"]["source"] == "oauth", req
        if not self.catch:
            with NO_PROXY.open(req["url"], timeout=10) as r:
                r.read()
            tnlib.answer(responder, b'{"ok":true}')
            return TN_RESOLVED

        class Stop(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *a, **k):
                return None
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), Stop)
        try:
            opener.open(req["url"], timeout=10)
            raise AssertionError("no redirect")
        except urllib.error.HTTPError as e:
            location = e.headers["Location"]
        tnlib.answer(responder, json.dumps({"ok": True, "data": {"redirect": location}}).encode())
        return TN_RESOLVED


def status_of(client):
    return json.loads(client.statuses_text())["servers"]["rs"]


def no_secret_in(w, *texts):
    text = "\n".join(texts)
    leaked = [s[:8] for s in w.secrets if len(s) >= 6 and s in text]
    assert not leaked, "secrets in the library's output: %s" % leaked


def test_registration_declares_native_for_the_loopback_redirect(world):
    w = world()
    browser = Browser()
    with tnlib.Client({"mcpServers": {"rs": {"url": w.url}}}, browser.resolver) as c:
        st = status_of(c)
        assert st["status"] == "connected", st
        out = c.result("rs_whoami", "{}")
        assert json.loads(out)["output"] == "authorized"
    assert len(w.registrations) == 1
    reg = w.registrations[0]
    assert reg["application_type"] == "native", reg
    assert reg["redirect_uris"][0].startswith("http://127.0.0.1:")
    assert "dpop_bound_access_tokens" not in reg
    assert all(s == "Bearer" for s in w.rs_schemes) and w.errors == []
    no_secret_in(w, json.dumps(st), out)


def test_registration_declares_web_for_a_remote_https_redirect(world):
    w = world()
    browser = Browser(catch=True)
    cfg = {"mcpServers": {"rs": {"url": w.url, "auth": {"redirectUri": "https://app.example.com/oauth/cb"}}}}
    with tnlib.Client(cfg, browser.resolver) as c:
        st = status_of(c)
        assert st["status"] == "connected", st
    reg = w.registrations[0]
    assert reg["application_type"] == "web", reg
    assert reg["redirect_uris"] == ["https://app.example.com/oauth/cb"]
    assert w.token_requests[0][0]["redirect_uri"] == "https://app.example.com/oauth/cb"


@pytest.mark.parametrize("named", ["https://attacker.example.com", "{as}/"])
def test_metadata_naming_another_issuer_is_refused(world, named):
    w = world(issuer=named)
    browser = Browser()
    with tnlib.Client({"mcpServers": {"rs": {"url": w.url}}}, browser.resolver) as c:
        st = status_of(c)
    assert st["status"] == "failed", st
    assert "failed during `auth`" in st["error"] and "RFC 8414 §3.3" in st["error"], st
    assert 'not "%s"' % w.as_base in st["error"], st
    assert named.replace("{as}", w.as_base) in st["error"], st
    # Nothing the document names was used: no registration, no login, no token request.
    used = [p for (srv, _m, p, _h, _b) in w.seen if srv == "as" and not p.startswith("/.well-known/")]
    assert used == [] and browser.requests == [], used


def test_jwt_bearer_grant_without_a_browser(world, monkeypatch):
    w = world(grants=(JWT_BEARER,), registration=False)
    monkeypatch.setenv("TN_TEST_WORKLOAD_JWT", "eyJ.workload.good")
    cfg = {"mcpServers": {"rs": {"url": w.url, "auth": {
        "grant": "jwt-bearer", "assertion": "${TN_TEST_WORKLOAD_JWT}", "clientId": "workload-1"}}}}
    with tnlib.Client(cfg) as c:  # no resolver: there is no browser step
        st = status_of(c)
        assert st["status"] == "connected", st
        out = c.result("rs_whoami", "{}")
    assert len(w.token_requests) == 1
    form = w.token_requests[0][0]
    assert form["grant_type"] == JWT_BEARER
    assert form["assertion"] == "eyJ.workload.good"
    assert form["client_id"] == "workload-1" and form["resource"] == w.url
    assert not any(p.startswith("/authorize") for (_s, _m, p, _h, _b) in w.seen)
    no_secret_in(w, json.dumps(st), out)


def test_jwt_bearer_refused_once_and_masked(world, tmp_path):
    w = world(grants=(JWT_BEARER,), registration=False)
    f = tmp_path / "token"
    f.write_text("eyJ.workload.expired\n")
    cfg = {"mcpServers": {"rs": {"url": w.url, "auth": {"grant": "jwt-bearer", "assertionFile": str(f)}}}}
    with tnlib.Client(cfg) as c:
        st = status_of(c)
    assert st["status"] == "failed", st
    assert "the jwt-bearer grant was refused" in st["error"] and "invalid_grant" in st["error"], st
    assert "eyJ.workload.expired" not in st["error"], st
    tokens = [p for (s, _m, p, _h, _b) in w.seen if s == "as" and p == "/token"]
    assert len(tokens) == 1, "no retry and no other grant"
    assert "client_id" not in w.token_requests[0][0]


def test_dpop_with_nonces_refresh_and_store(world, tmp_path):
    w = world(dpop=True, nonces=True, expires_in=4)
    store = str(tmp_path / "tokens.json")
    cfg = {"mcpServers": {"rs": {"url": w.url, "auth": {"store": store}}}}
    browser = Browser()
    texts = []
    with tnlib.Client(cfg, browser.resolver) as c:
        st = status_of(c)
        assert st["status"] == "connected", st
        texts.append(json.dumps(st))
        texts.append(c.result("rs_whoami", "{}"))
        # Less than min(60 s, half of expires_in) left: refreshed before the call, with a proof.
        time.sleep(2.5)
        texts.append(c.result("rs_whoami", "{}"))
    assert w.errors == [], w.errors
    assert len(browser.requests) == 1
    assert w.registrations[0]["dpop_bound_access_tokens"] is True
    grants = [form["grant_type"] for form, _claims in w.token_requests]
    assert grants == ["authorization_code", "refresh_token"], grants
    jkts = {claims["_jkt"] for _form, claims in w.token_requests}
    assert len(jkts) == 1, "one key for the login and the refresh"
    assert all(claims["nonce"] == AS_NONCE for _f, claims in w.token_requests)
    assert w.as_nonce_challenged and w.as_nonce_honored
    assert w.rs_nonce_challenged and w.rs_nonce_honored
    assert w.rs_schemes and all(s == "DPoP" for s in w.rs_schemes), w.rs_schemes
    kept = json.load(open(store))["entries"][0]
    assert kept["tokens"]["tokenType"] == "DPoP" and isinstance(kept["dpopKey"], str)
    w.secrets.add(kept["dpopKey"])
    # A second run from the store: no login, the kept key still proves possession.
    before = len(w.token_requests)
    nobody = Browser()
    with tnlib.Client(cfg, nobody.resolver) as c:
        st = status_of(c)
        assert st["status"] == "connected", st
        texts.append(json.dumps(st))
        texts.append(c.result("rs_whoami", "{}"))
    assert nobody.requests == []
    assert w.errors == [], w.errors
    assert all(f["grant_type"] == "refresh_token" for f, _c in w.token_requests[before:])
    no_secret_in(w, *texts)


@pytest.mark.parametrize("typed", [True, False], ids=["type-sse", "fallback"])
def test_legacy_sse_server_behind_oauth(world, typed):
    w = world(legacy=True)
    browser = Browser()
    entry = {"url": w.url, "type": "sse"} if typed else {"url": w.url}
    with tnlib.Client({"mcpServers": {"rs": entry}}, browser.resolver) as c:
        st = status_of(c)
        assert st["status"] == "connected", st
        out = c.result("rs_whoami", "{}")
        assert json.loads(out)["output"] == "authorized"
    assert len(browser.requests) == 1 and len(w.registrations) == 1
    rs = [(m, p, {k.lower(): v for k, v in hd.items()}) for (srv, m, p, hd, _b) in w.seen
          if srv == "rs" and not p.startswith("/.well-known/")]
    streams = [hd for (m, p, hd) in rs if m == "GET" and p == "/sse"]
    posts = [hd for (m, p, hd) in rs if m == "POST" and p.startswith("/messages")]
    # The stream was opened with the token (after a 401 when it went first), and every POST
    # to the endpoint carried it.
    assert streams and streams[-1].get("authorization", "").startswith("Bearer "), rs
    assert len(posts) >= 3 and all(hd.get("authorization", "").startswith("Bearer ") for hd in posts), rs
    assert w.errors == [], w.errors
    no_secret_in(w, json.dumps(st), out)


def test_dpop_nonce_handed_out_on_success_is_used_next(world):
    # RFC 9449 §8.2: a fresh nonce on a 200 is the one the next proof carries; a client that
    # only learns nonces from 401s pays a refused round trip on every request.
    w = world(dpop=True, nonces=True, rotate=True)
    browser = Browser()
    with tnlib.Client({"mcpServers": {"rs": {"url": w.url}}}, browser.resolver) as c:
        assert status_of(c)["status"] == "connected"
        for _ in range(4):
            assert json.loads(c.result("rs_whoami", "{}"))["output"] == "authorized"
    assert w.errors == [], w.errors
    # The first request with the token learns the nonce from its 401; none after it is refused.
    assert w.rs_challenges == 1, w.rs_challenges
