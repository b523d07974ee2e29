"""Streamable HTTP and legacy HTTP+SSE through the C ABI (contract §5), against real servers on
127.0.0.1: the Python `mcp` SDK peer (SSE and JSON replies, legacy SSE), server-everything
(streamable HTTP and legacy SSE), and the scripted server in scripted_http.py for the edge
cases (session expiry, resumption, legacy-only, stalls, 500, non-JSON bodies)."""

import json
import os
import socket
import subprocess
import threading
import time
import urllib.request

import pytest

import tnlib
from conftest import REPO, stop

PEERS = os.path.join(REPO, ".cache", "peers")
PY = os.path.join(PEERS, "py", "bin", "python")
EV = os.path.join(PEERS, "npm", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
LOOPBACK = os.path.join(PEERS, "loopback.cjs")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port, proc, within=20.0):
    deadline = time.time() + within
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("server exited early with %s" % proc.returncode)
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("port %d never opened" % port)


@pytest.fixture(scope="module")
def peers_installed():
    if not (os.path.exists(PY) and os.path.exists(EV)):
        pytest.skip("run scripts/install-peers.sh first (scripts/test always does)")


def start_server(argv, env=None):
    port = free_port()
    full_env = dict(os.environ, PORT=str(port), **(env or {}))
    argv = [a.replace("{port}", str(port)) for a in argv]
    proc = subprocess.Popen(argv, env=full_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_port(port, proc)
    except Exception:
        stop(proc)
        raise
    return proc, port


@pytest.fixture(scope="module")
def py_http(peers_installed):
    proc, port = start_server([PY, os.path.join(REPO, "tests", "peers", "peer_server.py"), "http", "--port", "{port}"])
    yield "http://127.0.0.1:%d/mcp" % port
    stop(proc)


@pytest.fixture(scope="module")
def py_http_json(peers_installed):
    proc, port = start_server([PY, os.path.join(REPO, "tests", "peers", "peer_server.py"), "http-json", "--port", "{port}"])
    yield "http://127.0.0.1:%d/mcp" % port
    stop(proc)


@pytest.fixture(scope="module")
def py_sse(peers_installed):
    proc, port = start_server([PY, os.path.join(REPO, "tests", "peers", "peer_server.py"), "sse", "--port", "{port}"])
    yield "http://127.0.0.1:%d/sse" % port
    stop(proc)


@pytest.fixture(scope="module")
def ev_http(peers_installed):
    proc, port = start_server(["node", "--require", LOOPBACK, EV, "streamableHttp"])
    yield "http://127.0.0.1:%d/mcp" % port
    stop(proc)


@pytest.fixture(scope="module")
def ev_sse(peers_installed):
    proc, port = start_server(["node", "--require", LOOPBACK, EV, "sse"])
    yield "http://127.0.0.1:%d/sse" % port
    stop(proc)


def server_log(base):
    with urllib.request.urlopen(base + "/_log") as r:
        return json.loads(r.read())


def answering(answer_json, seen=None):
    def fn(request_json, responder):
        if seen is not None:
            seen.append(json.loads(request_json))
        assert tnlib.answer(responder, answer_json) == tnlib.TN_OK
        return tnlib.TN_RESOLVED

    return tnlib.Resolver(fn)


def one(url, **extra):
    return {"mcpServers": {"h": dict({"url": url, "timeout": 10000}, **extra)}}


def output(text):
    r = json.loads(text)
    return r["output"], r["isError"]


# ---------------------------------------------------------------- the Python SDK peer


@pytest.mark.parametrize("answer, expected", [
    ('{"ok":true,"data":{"name":"Ada","age":36}}', '{"action": "accept", "content": {"name": "Ada", "age": 36}}'),
    ('{"ok":true,"data":{"name":"Bo"}}', '{"action": "accept", "content": {"name": "Bo", "age": 30}}'),
    ('{"ok":false,"reason":"declined"}', '{"action": "decline"}'),
    ('{"ok":false,"reason":"cancelled"}', '{"action": "cancel"}'),
])
def test_py_peer_form_elicitation_on_the_post_stream(connect, py_http, answer, expected):
    seen = []
    # the push API (ctx.elicit) of peer_server.py exists in the legacy era only
    c = connect(one(py_http, protocol="legacy"), answering(answer, seen))
    assert json.loads(c.statuses_text())["servers"]["h"]["status"] == "connected"
    out, err = output(c.result("h_ask_name"))
    assert (out, err) == (expected, False)
    assert seen[0]["kind"] == "input" and seen[0]["prompt"] == "Who are you?"
    assert seen[0]["data"]["schema"]["required"] == ["name"]


@pytest.mark.parametrize("answer, action", [
    ('{"ok":true}', "accept"), ('{"ok":false,"reason":"declined"}', "decline"), ('{"ok":false}', "cancel")])
def test_py_peer_url_elicitation(connect, py_http, answer, action):
    seen = []
    c = connect(one(py_http, protocol="legacy"), answering(answer, seen))
    out, err = output(c.result("h_authorize", '{"url":"https://example.com/auth"}'))
    assert not err and json.loads(out)["action"] == action
    assert seen[0] == {"id": seen[0]["id"], "kind": "authorization", "prompt": "Please authorize in your browser.",
                       "url": "https://example.com/auth"}


def test_py_peer_json_replies(connect, py_http_json):
    c = connect(one(py_http_json))
    assert output(c.result("h_echo", '{"text":"json mode é"}')) == ("json mode é", False)
    # This mode has no back-channel: the server refuses to elicit, and says so.
    out, err = output(c.result("h_ask_name"))
    assert err and "back-channel" in out


def test_py_peer_legacy_sse(connect, py_sse):
    c = connect(one(py_sse), answering('{"ok":true,"data":{"name":"Leg"}}'))
    st = json.loads(c.statuses_text())["servers"]["h"]
    assert st["status"] == "connected", st
    assert output(c.result("h_echo", '{"text":"over legacy"}')) == ("over legacy", False)
    out, _ = output(c.result("h_ask_name"))
    assert out == '{"action": "accept", "content": {"name": "Leg", "age": 30}}'


def test_py_peer_deferred_answer_over_http(connect, py_http):
    def fn(request_json, responder):
        threading.Timer(0.3, lambda: tnlib.answer(responder, '{"ok":true,"data":{"name":"Later"}}')).start()
        return tnlib.TN_DEFERRED

    c = connect(one(py_http, timeout=200, protocol="legacy"), tnlib.Resolver(fn))
    out, err = output(c.result("h_ask_name"))
    assert (out, err) == ('{"action": "accept", "content": {"name": "Later", "age": 30}}', False)


# ---------------------------------------------------------------- server-everything


@pytest.mark.parametrize("which", ["ev_http", "ev_sse"])
def test_server_everything_over_http(connect, request, which):
    url = request.getfixturevalue(which)
    seen = []
    c = connect(one(url), answering('{"ok":true,"data":{"name":"Ada","check":true,"integer":7}}', seen))
    tools = [t["remoteName"] for t in json.loads(c.tools_text())]
    assert "trigger-elicitation-request" in tools and "trigger-url-elicitation" in tools and len(tools) == 15
    assert output(c.result("h_echo", '{"message":"hi"}')) == ("Echo: hi", False)
    out, err = output(c.result("h_trigger-elicitation-request"))
    assert not err and out.startswith("✅ User provided the requested information!\nUser inputs:\n- Name: Ada\n- Agreed to terms: true\n- Favorite Integer: 7")
    out, err = output(c.result("h_trigger-url-elicitation", '{"url":"https://example.com/auth","elicitationId":"el-1"}'))
    assert out.startswith("✅ User completed the URL elicitation flow.\nElicitation ID: el-1\nURL: https://example.com/auth")
    assert seen[-1]["kind"] == "authorization" and seen[-1]["url"] == "https://example.com/auth"


def test_server_everything_decline_and_cancel(connect, ev_http):
    for answer, text in [('{"ok":false,"reason":"declined"}', "❌ User declined to provide the requested information."),
                         ('{"ok":false,"reason":"cancelled"}', "⚠️ User cancelled the elicitation dialog.")]:
        c = connect(one(ev_http), answering(answer))
        out, err = output(c.result("h_trigger-elicitation-request"))
        assert not err and out.startswith(text), out


# ---------------------------------------------------------------- the scripted server


def test_headers_session_and_version(connect, scripted, monkeypatch):
    monkeypatch.setenv("TN_TEST_TOKEN", "s3cr3t-token")
    urllib.request.urlopen(urllib.request.Request(scripted + "/_reset", data=b"", method="POST")).read()
    c = connect(one(scripted + "/json/mcp", headers={"Authorization": "Bearer ${TN_TEST_TOKEN}", "X-Empty": "${TN_UNSET_VAR_X}"}))
    assert output(c.result("h_echo", '{"text":"hi"}')) == ("echo: hi", False)
    c.disconnect()
    log = [r for r in server_log(scripted) if r["path"].startswith("/json/")
           and not (r["body"] and json.loads(r["body"]).get("method") == "server/discover")]
    init, later = log[0], [r for r in log[1:] if r["method"] == "POST"]
    assert json.loads(init["body"])["method"] == "initialize"
    assert init["headers"]["accept"] == "application/json, text/event-stream"
    assert init["headers"]["content-type"] == "application/json"
    assert init["headers"]["authorization"] == "Bearer s3cr3t-token"
    assert init["headers"]["x-empty"] == ""
    assert "mcp-session-id" not in init["headers"]
    for r in later:
        assert r["headers"]["mcp-session-id"] and r["headers"]["mcp-protocol-version"] == "2025-11-25", r
    assert [r["method"] for r in log][-1] == "DELETE", "disconnect ends the session"
    assert log[-1]["headers"]["mcp-session-id"] == later[0]["headers"]["mcp-session-id"]


def test_secrets_never_appear_in_errors(connect, scripted, monkeypatch):
    monkeypatch.setenv("TN_TEST_TOKEN", "s3cr3t-token")
    c = connect({"mcpServers": {
        "bad": {"url": scripted + "/error500/mcp", "headers": {"Authorization": "Bearer ${TN_TEST_TOKEN}"}},
        "badheader": {"url": scripted + "/json/mcp", "headers": {"X-Bad": "line\nbreak ${TN_TEST_TOKEN}"}},
        "down": {"url": "http://127.0.0.1:1/mcp?key=${TN_TEST_TOKEN}", "headers": {"Authorization": "${TN_TEST_TOKEN}"}, "timeout": 2000},
    }})
    statuses = c.statuses_text()
    assert "s3cr3t" not in statuses
    assert "the value of `headers.X-Bad` is not a valid HTTP header value" in statuses
    assert "cannot connect" in statuses and "http://127.0.0.1:1/mcp" in statuses
    out, err = output(c.result("bad_echo", '{"text":"x"}'))
    assert err and "HTTP 500" in out and "boom" in out and "s3cr3t" not in out


def test_sse_replies_and_elicitation_on_the_call_stream(connect, scripted):
    seen = []
    c = connect(one(scripted + "/sse/mcp", timeout=300), tnlib.Resolver(lambda req, r: (
        seen.append(json.loads(req)), time.sleep(0.6), tnlib.answer(r, '{"ok":true,"data":{"name":"S"}}'), 0)[-1]))
    assert output(c.result("h_echo", '{"text":"sse"}')) == ("echo: sse", False)
    out, err = output(c.result("h_elicit"))
    # answered by a separate POST while the stream stayed open; SEP-1034 default filled in;
    # the 600 ms the resolver took did not count against the 300 ms call timeout
    assert (json.loads(out), err) == ({"action": "accept", "content": {"name": "S", "n": 7}}, False)
    assert seen[0]["prompt"] == "Name?"


def test_elicitation_without_a_resolver_over_http(connect, scripted):
    """§4 "Capability": with no resolver the server's question gets -32601, and over HTTP only
    the call whose stream carried it gets the note as its output's last line."""
    note = "the server asked for input; no resolver is registered"
    c = connect(one(scripted + "/sse/mcp"))
    slow = []
    t = threading.Thread(target=lambda: slow.append(c.result("h_echo", '{"text":"slow","delay_ms":600}')))
    t.start()
    time.sleep(0.2)
    out, err = output(c.result("h_elicit"))
    last = out.split("\n")[-1]
    assert (json.loads(out.split("\n")[0])["error"]["code"], last, err) == (-32601, note, False), out
    t.join(5)
    assert [output(r) for r in slow] == [("echo: slow", False)]
    assert json.loads(c.statuses_text())["servers"]["h"]["lastElicitationError"] == note


def test_session_expiry_reinitializes_once(connect, scripted):
    urllib.request.urlopen(urllib.request.Request(scripted + "/_reset", data=b"", method="POST")).read()
    c = connect(one(scripted + "/expire/mcp"))
    assert output(c.result("h_echo", '{"text":"one"}')) == ("echo: one", False)
    assert output(c.result("h_echo", '{"text":"two"}')) == ("echo: two", False)
    log = [r for r in server_log(scripted) if r["path"].startswith("/expire/") and r["method"] == "POST"]
    method = lambda r: r["body"] and json.loads(r["body"]).get("method")
    # Up to the second call's retry: the new session also has its tools listed again (issue
    # 28), a request of its own that this scenario's sessions may meet a 404 on too.
    last_call = max(i for i, r in enumerate(log) if method(r) == "tools/call")
    inits = [r for r in log[:last_call] if method(r) == "initialize"]
    assert len(inits) == 2, "re-initialized after the 404"
    assert "mcp-session-id" not in inits[1]["headers"]


def test_concurrent_404s_reinitialize_once(connect, scripted):
    urllib.request.urlopen(urllib.request.Request(scripted + "/_reset", data=b"", method="POST")).read()
    c = connect(one(scripted + "/expireonce/mcp"))
    assert output(c.result("h_echo", '{"text":"first"}')) == ("echo: first", False)
    results = [None] * 4

    def call(i):
        results[i] = output(c.result("h_echo", '{"text":"c%d"}' % i))

    threads = [threading.Thread(target=call, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [("echo: c%d" % i, False) for i in range(4)], results
    c.disconnect()
    log = [r for r in server_log(scripted) if r["path"].startswith("/expireonce/")]
    inits = [r for r in log if r["method"] == "POST" and json.loads(r["body"]).get("method") == "initialize"]
    assert len(inits) == 2, "one re-initialization for all the calls that met the 404"
    delete = [r for r in log if r["method"] == "DELETE"]
    assert delete and delete[-1]["headers"].get("mcp-protocol-version") == "2025-11-25", delete


def test_stream_closed_before_result_resumes_with_last_event_id(connect, scripted):
    urllib.request.urlopen(urllib.request.Request(scripted + "/_reset", data=b"", method="POST")).read()
    c = connect(one(scripted + "/resume/mcp"))
    assert output(c.result("h_echo", '{"text":"r"}')) == ("resumed: r", False)
    gets = [r for r in server_log(scripted) if r["path"].startswith("/resume/") and r["method"] == "GET"]
    assert any(r["headers"].get("last-event-id") == "ev-1" for r in gets), gets


def test_legacy_only_server(connect, scripted):
    c = connect(one(scripted + "/legacy/mcp"))
    st = json.loads(c.statuses_text())["servers"]["h"]
    assert st["status"] == "connected" and st["protocolVersion"] == "2024-11-05", st
    assert output(c.result("h_echo", '{"text":"old"}')) == ("legacy echo: old", False)


def test_type_sse_goes_straight_to_legacy_http_sse(connect, scripted):
    """contract §2: `"type": "sse"` is legacy HTTP+SSE from the start: no streamable-HTTP POST
    to the configured URL and no 2026-07-28 probe, even with a resolver registered."""
    urllib.request.urlopen(urllib.request.Request(scripted + "/_reset", data=b"", method="POST")).read()
    c = connect(one(scripted + "/legacy/mcp", type="sse"), answering('{"ok":true,"data":{}}'))
    st = json.loads(c.statuses_text())["servers"]["h"]
    assert st["status"] == "connected" and st["protocolVersion"] == "2024-11-05", st
    assert '"type": "sse"' in st["eraReason"], st
    assert output(c.result("h_echo", '{"text":"old"}')) == ("legacy echo: old", False)
    log = [r for r in server_log(scripted) if r["path"].startswith("/legacy/")]
    assert not [r for r in log if r["method"] == "POST" and r["path"] == "/legacy/mcp"], log
    bodies = [r["body"] or "" for r in log]
    assert not any("server/discover" in b for b in bodies), bodies
    assert log[0]["method"] == "GET" and log[0]["path"] == "/legacy/mcp", log


def test_type_sse_with_protocol_modern_is_a_config_error(connect, scripted):
    c = connect({"mcpServers": {"h": {"url": scripted + "/legacy/mcp", "type": "sse", "protocol": "modern"},
                                "ok": {"url": scripted + "/legacy/mcp", "type": "sse"}},
                 "toolnexus": {"protocol": "modern-first"}})
    st = json.loads(c.statuses_text())["servers"]
    assert st["h"]["status"] == "failed", st
    assert '`type` "sse" is legacy HTTP+SSE (2024-11-05), which has no 2026-07-28 era: `protocol` "modern"' in st["h"]["error"], st
    # The client-wide default does not apply to an HTTP+SSE server.
    assert st["ok"]["status"] == "connected" and st["ok"]["protocolVersion"] == "2024-11-05", st


def test_type_sse_against_a_server_without_an_event_stream_says_so(connect, scripted):
    c = connect(one(scripted + "/error500/mcp", type="sse"))
    st = json.loads(c.statuses_text())["servers"]["h"]
    assert st["status"] == "failed", st
    assert "HTTP+SSE GET got HTTP 405" in st["error"] and "fallback" not in st["error"], st


def test_legacy_endpoint_on_another_origin_is_refused(connect, scripted, monkeypatch):
    monkeypatch.setenv("TN_TEST_TOKEN", "s3cr3t-token")
    c = connect(one(scripted + "/legacyevil/mcp", headers={"Authorization": "Bearer ${TN_TEST_TOKEN}"}))
    st = json.loads(c.statuses_text())["servers"]["h"]
    assert st["status"] == "failed", st
    assert "the legacy `endpoint` event names another origin (http://elsewhere.invalid/steal); refused" in st["error"]
    assert "s3cr3t" not in c.statuses_text()


def test_stall_mid_stream_times_out(connect, scripted):
    c = connect(one(scripted + "/stall/mcp", timeout=500))
    t0 = time.time()
    out, err = output(c.result("h_echo", '{"text":"x"}'))
    assert err and "timed out" in out and time.time() - t0 < 3
    # the server is still usable for other calls
    out, err = output(c.result("h_echo", '{"text":"y"}'))
    assert err and "timed out" in out


def test_500_and_non_json_bodies_fail_the_call_not_the_host(connect, scripted):
    c = connect({"mcpServers": {"e": {"url": scripted + "/error500/mcp"}, "n": {"url": scripted + "/notjson/mcp"}}})
    out, err = output(c.result("e_echo", '{"text":"x"}'))
    assert err and out.startswith("server `e`: tools/call `echo` failed: HTTP 500 Internal Server Error: boom"), out
    out, err = output(c.result("n_echo", '{"text":"x"}'))
    assert err and "the server's reply is not JSON" in out and "this is not json" in out, out


def test_unreachable_and_bad_urls_fail_the_server(connect):
    c = connect({"mcpServers": {"down": {"url": "http://127.0.0.1:1/mcp", "timeout": 2000},
                                "ftp": {"url": "ftp://example.test/x"}, "junk": {"url": "not a url"}}})
    st = json.loads(c.statuses_text())["servers"]
    assert st["down"]["status"] == "failed" and "failed during `initialize`: cannot connect" in st["down"]["error"]
    assert "`url` must be http or https" in st["ftp"]["error"]
    assert "`url` is not a valid URL" in st["junk"]["error"]


# ---------------------------------------------------------------- recovery and secrets (§5, §9)


def reset_log(base):
    urllib.request.urlopen(urllib.request.Request(base + "/_reset", data=b"", method="POST")).read()


def test_a_resumed_stream_that_closes_empty_is_resumed_again(connect, scripted):
    reset_log(scripted)
    c = connect(one(scripted + "/resumeempty/mcp"))
    t0 = time.time()
    assert output(c.result("h_echo", '{"text":"again"}')) == ("resumed: again", False)
    gets = [r for r in server_log(scripted) if r["path"].startswith("/resumeempty/") and r["method"] == "GET"
            and r["headers"].get("last-event-id")]
    # two resumed streams closed before any event, the third brought the result; each one
    # resumed with the last id seen, after the server's `retry: 100`
    assert [r["headers"]["last-event-id"] for r in gets] == ["r-1"] * 3, gets
    assert time.time() - t0 >= 0.3


@pytest.mark.parametrize("scenario", ["getclose", "getclose0"])
def test_the_standalone_stream_backs_off(connect, scripted, scenario):
    reset_log(scripted)
    c = connect(one(scripted + "/%s/mcp" % scenario))
    time.sleep(3)
    c.disconnect()
    gets = [r for r in server_log(scripted) if r["path"].startswith("/%s/" % scenario) and r["method"] == "GET"]
    # 250 ms doubling (with jitter): about 4 in 3 s, where a reconnect loop does hundreds
    assert 2 <= len(gets) <= 6, len(gets)


def test_a_refused_standalone_stream_is_left_alone(connect, scripted):
    reset_log(scripted)
    c = connect(one(scripted + "/json/mcp"))
    time.sleep(1.5)
    st = json.loads(c.statuses_text())["servers"]["h"]
    c.disconnect()
    gets = [r for r in server_log(scripted) if r["path"].startswith("/json/") and r["method"] == "GET"]
    assert len(gets) == 1, gets  # 405: no stream offered, asked once
    assert "warnings" not in st, st


def test_cross_origin_redirects_are_refused(connect, scripted, monkeypatch):
    monkeypatch.setenv("TN_TEST_KEY", "k3y-s3cr3t")
    reset_log(scripted)
    c = connect(one(scripted + "/xredirect/mcp", headers={"X-Api-Key": "${TN_TEST_KEY}"}))
    st = json.loads(c.statuses_text())["servers"]["h"]
    port = scripted.rsplit(":", 1)[1]
    assert st["status"] == "failed", st
    assert "redirected to another origin (http://localhost:%s); refused" % port in st["error"], st
    assert "k3y-s3cr3t" not in c.statuses_text()
    log = server_log(scripted)
    assert not [r for r in log if r["path"].startswith("/xredirect-target/")], "nothing reached the other origin"
    # a redirect within the origin is still followed, headers and all
    reset_log(scripted)
    c = connect(one(scripted + "/samehop/mcp", headers={"X-Api-Key": "${TN_TEST_KEY}"}))
    assert output(c.result("h_echo", '{"text":"hop"}')) == ("echo: hop", False)
    hops = [r for r in server_log(scripted) if r["path"].startswith("/json/")]
    assert hops and all(r["headers"].get("x-api-key") == "k3y-s3cr3t" for r in hops if r["method"] == "POST")


def test_an_error_body_that_echoes_headers_is_masked(connect, scripted, monkeypatch):
    monkeypatch.setenv("TN_TEST_KEY", "k3y-s3cr3t")
    monkeypatch.setenv("TN_TEST_TOKEN", "t0k3n-s3cr3t")
    c = connect(one(scripted + "/echo401/mcp", headers={"X-Api-Key": "${TN_TEST_KEY}",
                                                         "Authorization": "Bearer ${TN_TEST_TOKEN}"}))
    text = c.statuses_text()
    st = json.loads(text)["servers"]["h"]
    assert st["status"] == "failed" and "401" in st["error"], st
    assert "x-api-key" in st["error"] and "***" in st["error"], st  # the body is quoted, masked
    assert "k3y-s3cr3t" not in text and "t0k3n-s3cr3t" not in text, text


def test_the_first_attempts_error_survives_the_legacy_fallback(connect, scripted):
    c = connect(one(scripted + "/modern400/mcp"))
    st = json.loads(c.statuses_text())["servers"]["h"]
    assert st["status"] == "failed", st
    assert "initialize got HTTP 400 Bad Request" in st["error"] and "-32022" in st["error"], st
    assert "Unsupported protocol version" in st["error"] and "legacy HTTP+SSE" in st["error"], st


@pytest.mark.parametrize("direct", [True, False], ids=["direct", "async"])
def test_a_notification_flood_is_bounded_and_counted(connect, scripted, direct):
    """3000 notifications arrive while the resolver holds the thread reading the call's stream.
    On the direct path (plain HTTP, the call's own thread reads its reply) TCP holds them back
    and none is lost; on the async path (here forced by userinfo in the URL, which the direct
    path leaves to reqwest) the reader's queue is bounded and the excess is dropped and counted."""
    def slow_answer(request_json, responder):
        time.sleep(1.5)  # the reader is held here while 3000 notifications arrive
        tnlib.answer(responder, '{"ok":true,"data":{"name":"F"}}')
        return tnlib.TN_RESOLVED

    base = scripted if direct else scripted.replace("http://", "http://u:p@")
    c = connect(one(base + "/floodask/mcp"), tnlib.Resolver(slow_answer))
    out, err = output(c.result("h_elicit"))
    assert (json.loads(out), err) == ({"action": "accept", "content": {"name": "F", "n": 7}}, False)
    st = json.loads(c.statuses_text())["servers"]["h"]
    assert st["status"] == "connected", st
    if direct:
        assert "droppedMessages" not in st, st
    else:
        assert st.get("droppedMessages", 0) > 1000, st


# ---------------------------------------------------------------- the direct HTTP/1.1 path

def test_plain_http_calls_reuse_one_kept_alive_connection(connect, scripted):
    """Over plain HTTP a call's POST goes out on the caller's thread over a pooled keep-alive
    connection: sequential calls all travel on one TCP connection."""
    reset_log(scripted)
    c = connect(one(scripted + "/json/mcp"))
    for i in range(20):
        assert output(c.result("h_echo", json.dumps({"text": str(i)}))) == ("echo: %d" % i, False)
    calls = [r for r in server_log(scripted) if r["path"].startswith("/json/") and r["method"] == "POST"
             and json.loads(r["body"]).get("method") == "tools/call"]
    assert len(calls) == 20 and len({r["peer"] for r in calls}) == 1, calls


def test_kept_alive_connections_the_server_closed_are_not_used(connect, scripted):
    """The server closes every connection after its reply without saying so. Three calls at
    once leave three dead connections in the pool; each later call skips every dead one (it is
    looked at before being written to) and goes out exactly once on a fresh connection."""
    reset_log(scripted)
    c = connect(one(scripted + "/dropidle/mcp"))
    first = [c.start("h_echo", json.dumps({"text": "a%d" % i, "delay_ms": 200})) for i in range(3)]
    assert sorted(output(call.wait(10))[0] for call in first) == ["echo: a0", "echo: a1", "echo: a2"]
    for i in range(5):
        time.sleep(0.05)  # let the close arrive before the connection is reused
        assert output(c.result("h_echo", json.dumps({"text": str(i)}))) == ("echo: %d" % i, False)
    calls = [r for r in server_log(scripted) if r["path"].startswith("/dropidle/")
             and r["method"] == "POST" and json.loads(r["body"]).get("method") == "tools/call"]
    texts = [json.loads(r["body"])["params"]["arguments"]["text"] for r in calls]
    assert sorted(texts[:3]) == ["a0", "a1", "a2"] and texts[3:] == [str(i) for i in range(5)], texts
    assert len({r["peer"] for r in calls}) == 8, calls


def test_a_cancelled_call_is_sent_once_and_ends_promptly(connect, scripted):
    """A call in flight on a kept-alive connection is cancelled: its reader is woken at once,
    and the request is not sent a second time (a closed connection is never a reason to
    resend what the server may have run)."""
    reset_log(scripted)
    c = connect(one(scripted + "/json/mcp", timeout=60000))
    assert output(c.result("h_echo", '{"text":"warm"}')) == ("echo: warm", False)  # pools one
    call = c.start("h_echo", '{"text":"slow","delay_ms":3000}')
    time.sleep(0.5)
    t0 = time.time()
    assert c.cancel(call.call_id) == (tnlib.TN_OK, "")
    out, err = output(call.wait(10))
    assert err and "cancelled" in out and time.time() - t0 < 2, (out, time.time() - t0)
    time.sleep(3)  # the server's handler is done by now
    slow = [r for r in server_log(scripted) if r["path"].startswith("/json/") and r["method"] == "POST"
            and '"slow"' in (r["body"] or "")]
    assert len(slow) == 1, slow


def test_a_cancel_does_not_wait_for_a_blocked_resolver(connect, scripted):
    """An elicitation arrives on an asynchronous call's stream and the host's resolver blocks:
    a cancel still ends the call at once (the resolver runs on the connection's reader thread,
    not on the thread running the call)."""
    release = threading.Event()

    def slow(request_json, responder):
        release.wait(5)
        return tnlib.TN_RESOLVED

    c = connect(one(scripted + "/sse/mcp", timeout=60000), tnlib.Resolver(slow))
    call = c.start("h_elicit", "{}")
    time.sleep(0.7)
    t0 = time.time()
    assert c.cancel(call.call_id) == (tnlib.TN_OK, "")
    out, err = output(call.wait(10))
    release.set()
    assert err and "cancelled" in out and time.time() - t0 < 2, (out, time.time() - t0)


def test_a_401_that_authorization_does_not_handle_is_sent_once(connect, scripted):
    """The config sets its own Authorization header, so a 401 on a call is not the library's to
    handle: the call fails with the status and the body, after one POST."""
    reset_log(scripted)
    c = connect(one(scripted + "/call401/mcp", headers={"Authorization": "Bearer fixed-token-1"}))
    out, err = output(c.result("h_echo", '{"text":"x"}'))
    assert err and "HTTP 401 Unauthorized: denied" in out, out
    calls = [r for r in server_log(scripted) if r["path"].startswith("/call401/")
             and r["method"] == "POST" and json.loads(r["body"]).get("method") == "tools/call"]
    assert len(calls) == 1, calls


def test_a_cancel_ends_a_read_blocked_on_a_stalled_stream(connect, scripted):
    """A call whose reply stalls is cancelled from another thread: the thread running it,
    blocked reading the stalled stream (the direct path reads on the call's own thread), is
    woken by the cancel rather than by the 60 s timeout."""
    c = connect(one(scripted + "/stall/mcp", timeout=60000))
    call = c.start("h_echo", '{"text":"x"}')
    time.sleep(0.5)
    t0 = time.time()
    assert c.cancel(call.call_id) == (tnlib.TN_OK, "")
    out, err = output(call.wait(10))
    assert err and "cancelled" in out and time.time() - t0 < 3, out
