"""TLS and networks (contract §5) through the C ABI, against the scripted MCP server serving
HTTPS on 127.0.0.1 with certificates made at test time by the openssl command: the platform's
store (SSL_CERT_FILE, SSL_CERT_DIR), a per-server `tls.caFile`, name mismatch, client
certificates, and CONNECT proxies from the variables or a per-server `proxy`. Also the fixture
server's HTTPS mode (`--http … --tls-cert … --tls-key …`, what the benchmark's HTTPS leg runs)
with the library: calls, an elicitation on the call's stream and one on the standalone GET
stream, calls in flight from several threads."""

import json
import os
import shutil
import subprocess
import sys
import threading
import urllib.request

import pytest
import tnlib

from conftest import HERE, REPO, stop

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")


def sh(*argv, cwd):
    subprocess.run(argv, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_cert(d, name, ca, san, usage):
    sh("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
       "-keyout", name + ".key", "-out", name + ".csr", "-subj", "/CN=" + name, cwd=d)
    with open(os.path.join(d, name + ".ext"), "w") as f:
        f.write("basicConstraints=CA:FALSE\nextendedKeyUsage=%s\n%s" % (usage, ("subjectAltName=" + san + "\n") if san else ""))
    sh("openssl", "x509", "-req", "-in", name + ".csr", "-CA", ca + ".pem", "-CAkey", ca + ".key",
       "-CAcreateserial", "-out", name + ".pem", "-days", "2", "-extfile", name + ".ext", cwd=d)


def make_ca(d, name):
    sh("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
       "-keyout", name + ".key", "-out", name + ".pem", "-days", "2", "-subj", "/CN=" + name,
       "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=d)


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("pki"))
    make_ca(d, "ca")
    make_ca(d, "clientca")
    make_cert(d, "server", "ca", "IP:127.0.0.1,DNS:localhost", "serverAuth")
    make_cert(d, "other", "ca", "DNS:other.test", "serverAuth")
    make_cert(d, "client", "clientca", None, "clientAuth")
    os.makedirs(os.path.join(d, "certdir"))
    shutil.copy(os.path.join(d, "ca.pem"), os.path.join(d, "certdir", "ca.pem"))
    return lambda name: os.path.join(d, name)


def start(argv):
    proc = subprocess.Popen([sys.executable] + argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return proc, int(proc.stdout.readline())


@pytest.fixture(scope="module")
def https(pki):
    proc, port = start([os.path.join(HERE, "scripted_http.py"), "--tls", pki("server.pem"), pki("server.key")])
    yield port
    stop(proc)


@pytest.fixture(scope="module")
def https_other(pki):
    proc, port = start([os.path.join(HERE, "scripted_http.py"), "--tls", pki("other.pem"), pki("other.key")])
    yield port
    stop(proc)


@pytest.fixture(scope="module")
def https_mtls(pki):
    proc, port = start([os.path.join(HERE, "scripted_http.py"), "--tls", pki("server.pem"), pki("server.key"),
                        "--client-ca", pki("clientca.pem")])
    yield port
    stop(proc)


@pytest.fixture
def proxy():
    proc, port = start([os.path.join(HERE, "connect_proxy.py")])
    yield port
    stop(proc)


def proxied(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/_log" % port) as r:
        return json.loads(r.read())


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for k in ("SSL_CERT_FILE", "SSL_CERT_DIR", "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy",
              "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(k, raising=False)


def status(c):
    return json.loads(c.statuses_text())["servers"]["s"]


def server(port, **extra):
    return {"mcpServers": {"s": dict({"url": "https://127.0.0.1:%d/json/mcp" % port, "timeout": 5000}, **extra)}}


def works(c):
    st = status(c)
    assert st["status"] == "connected", st
    r = json.loads(c.result("s_echo", '{"text":"tls"}'))
    assert (r["output"], r["isError"]) == ("echo: tls", False), r


def test_an_untrusted_ca_fails_with_the_hint(connect, https):
    st = status(connect(server(https)))
    assert st["status"] == "failed", st
    assert "unknown issuer" in st["error"] and "`tls.caFile`" in st["error"] and "SSL_CERT_FILE" in st["error"], st
    assert "server `s` failed" in st["error"], st


def test_trusted_through_ssl_cert_file(connect, https, pki, monkeypatch):
    monkeypatch.setenv("SSL_CERT_FILE", pki("ca.pem"))
    works(connect(server(https)))


def test_trusted_through_ssl_cert_dir(connect, https, pki, monkeypatch):
    monkeypatch.setenv("SSL_CERT_DIR", pki("certdir"))
    works(connect(server(https)))


def test_trusted_through_tls_ca_file(connect, https, pki):
    works(connect(server(https, tls={"caFile": pki("ca.pem")})))


def test_a_name_mismatch_fails(connect, https_other, pki):
    st = status(connect(server(https_other, tls={"caFile": pki("ca.pem")})))
    assert st["status"] == "failed" and "does not match its host name" in st["error"], st
    assert 'not valid for name "127.0.0.1"' in st["error"] and "other.test" in st["error"], st


def test_a_client_certificate_when_the_server_requires_one(connect, https_mtls, pki):
    st = status(connect(server(https_mtls, tls={"caFile": pki("ca.pem")})))
    assert st["status"] == "failed" and "client certificate" in st["error"], st
    works(connect(server(https_mtls, tls={"caFile": pki("ca.pem"), "certFile": pki("client.pem"),
                                          "keyFile": pki("client.key")})))


def test_missing_tls_files_fail_that_server_naming_key_and_path(connect, https, pki):
    c = connect({"mcpServers": {
        "s": {"url": "https://127.0.0.1:%d/json/mcp" % https, "tls": {"caFile": "/nonexistent/ca.pem"}},
        "k": {"url": "https://127.0.0.1:%d/json/mcp" % https,
              "tls": {"caFile": pki("ca.pem"), "certFile": pki("client.pem"), "keyFile": "/nonexistent/k.pem"}},
        "v": {"url": "https://127.0.0.1:%d/json/mcp" % https, "tls": {"verify": False}},
        "ok": {"url": "https://127.0.0.1:%d/json/mcp" % https, "tls": {"caFile": pki("ca.pem")}},
    }})
    st = json.loads(c.statuses_text())["servers"]
    assert "`tls.caFile` (/nonexistent/ca.pem) cannot be read" in st["s"]["error"], st
    assert "`tls.keyFile` (/nonexistent/k.pem) cannot be read" in st["k"]["error"], st
    assert "`tls.verify` is not a TLS option" in st["v"]["error"], st
    assert st["ok"]["status"] == "connected", st


def test_https_proxy_variable_is_used(connect, https, pki, proxy, monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:%d" % proxy)
    works(connect(server(https, tls={"caFile": pki("ca.pem")})))
    assert "127.0.0.1:%d" % https in proxied(proxy)


def test_no_proxy_goes_direct(connect, https, pki, proxy, monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:%d" % proxy)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    works(connect(server(https, tls={"caFile": pki("ca.pem")})))
    assert proxied(proxy) == []


def test_an_empty_proxy_goes_direct(connect, https, pki, proxy, monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:%d" % proxy)
    works(connect(server(https, tls={"caFile": pki("ca.pem")}, proxy="")))
    assert proxied(proxy) == []


def test_a_per_server_proxy_without_variables(connect, https, pki, proxy):
    works(connect(server(https, tls={"caFile": pki("ca.pem")}, proxy="http://127.0.0.1:%d" % proxy)))
    assert "127.0.0.1:%d" % https in proxied(proxy)


# ---------------------------------------------------------------- the fixture server's HTTPS mode

FIXTURE = os.environ.get("TN_FIXTURE") or os.path.join(REPO, "target", "debug", "tn-fixture-server")


@pytest.fixture(scope="module")
def fixture_https(pki):
    proc = subprocess.Popen([FIXTURE, "--http", "127.0.0.1:0", "--tls-cert", pki("server.pem"),
                             "--tls-key", pki("server.key")],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline().strip()
    assert line.startswith("listening on https://127.0.0.1:") and line.endswith("/mcp"), line
    yield line[len("listening on "):]
    stop(proc)


def accepting(seen):
    def fn(request_json, responder):
        seen.append(json.loads(request_json))
        assert tnlib.answer(responder, '{"ok":true,"data":{"name":"x"}}') == tnlib.TN_OK
        return tnlib.TN_RESOLVED
    return tnlib.Resolver(fn)


def test_the_fixture_serves_https_to_the_library(connect, fixture_https, pki):
    seen = []
    c = connect({"mcpServers": {"s": {"url": fixture_https, "timeout": 10000,
                                      "tls": {"caFile": pki("ca.pem")}}}}, accepting(seen))
    assert status(c)["status"] == "connected", status(c)
    r = json.loads(c.result("s_echo", '{"text":"hello"}'))
    assert (r["output"], r["isError"]) == ("hello", False), r
    # the elicitation as an event on the call's stream, answered by a second POST
    r = json.loads(c.result("s_ask_form", "{}"))
    assert r["isError"] is False and json.loads(r["output"])["action"] == "accept", r
    # one on the standalone GET stream: written by the tool's thread while the GET's connection
    # thread waits to read on the same TLS connection
    r = json.loads(c.result("s_ask_unrelated", '{"message":"Over TLS?","wait_ms":5000}'))
    assert r["isError"] is False and json.loads(r["output"])["action"] == "accept", r
    assert [q["prompt"] for q in seen][-1] == "Over TLS?", seen
    # 16 calls in flight (as the benchmark's throughput windows), a few hundred in all
    bad = []

    def loop(i):
        for k in range(20):
            text = "t%d-%d" % (i, k)
            r = json.loads(c.result("s_echo", json.dumps({"text": text})))
            if (r["output"], r["isError"]) != (text, False):
                bad.append(r)
    threads = [threading.Thread(target=loop, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert bad == []


def test_the_fixture_over_https_is_refused_without_the_ca(connect, fixture_https):
    st = status(connect({"mcpServers": {"s": {"url": fixture_https, "timeout": 5000}}}))
    assert st["status"] == "failed" and "unknown issuer" in st["error"], st
