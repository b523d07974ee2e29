"""The standalone GET stream (contract §5) against the fixture server's HTTP mode, which, like
the TypeScript SDK, sends a question that is tied to no request only on the standalone stream
and drops it when none is open: the stream must be open, and answered, before the first call.
The fixture's request log pins the order on the wire."""

import json
import os
import subprocess
import threading
import time
import urllib.request

import pytest

import tnlib
from conftest import REPO, stop

FIXTURE = os.environ.get("TN_FIXTURE") or os.path.join(REPO, "target", "debug", "tn-fixture-server")


@pytest.fixture
def fixture_http(tmp_path):
    """Starts the fixture in HTTP mode with extra options; yields (url, read_log)."""
    procs = []

    def start(*opts):
        log = tmp_path / ("log-%d.jsonl" % len(procs))
        proc = subprocess.Popen([FIXTURE, "--http", "127.0.0.1:0", "--log", str(log), *opts],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        procs.append(proc)
        line = proc.stdout.readline().strip()
        assert line.startswith("listening on "), line
        url = line[len("listening on "):]

        def read_log():
            if not log.exists():
                return []
            return [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
        return url, read_log

    yield start
    for p in procs:
        stop(p)


def answering():
    seen = []

    def fn(request_json, responder):
        seen.append(json.loads(request_json))
        tnlib.answer(responder, '{"ok":true,"data":{"name":"Ada"}}')
        return tnlib.TN_RESOLVED
    return tnlib.Resolver(fn), seen


def wire(log):
    """The requests as (http method, rpc method or kind) in arrival order."""
    out = []
    for r in log:
        if "event" in r:
            out.append(("event", r["event"]))
        elif r["http"] == "POST":
            out.append(("POST", r["rpc"] or r["kind"]))
        else:
            out.append((r["http"], None))
    return out


def test_a_question_sent_at_the_start_of_the_first_call_is_always_answered(fixture_http):
    for _ in range(10):
        url, read_log = fixture_http()
        resolver, seen = answering()
        c = tnlib.Client({"mcpServers": {"fx": {"url": url, "timeout": 10000}}}, resolver)
        try:
            r = json.loads(c.result("fx_ask_unrelated", '{"message":"Unrelated?","wait_ms":3000}'))
        finally:
            c.disconnect()
        assert r["isError"] is False and json.loads(r["output"])["action"] == "accept", r
        assert [q["prompt"] for q in seen] == ["Unrelated?"]
        steps = wire(read_log())
        assert ("event", "dropped") not in steps, steps
        # the era probe, the handshake, the standalone GET, then the list and the call
        assert steps[:6] == [("POST", "server/discover"), ("POST", "initialize"),
                             ("POST", "notifications/initialized"), ("GET", None),
                             ("POST", "tools/list"), ("POST", "tools/call")], steps


def test_no_stream_offered_is_no_warning_and_a_failing_one_is(fixture_http):
    url, read_log = fixture_http("--get-status", "405")
    c = tnlib.Client({"mcpServers": {"fx": {"url": url}}})
    try:
        st = json.loads(c.statuses_text())["servers"]["fx"]
        assert st["status"] == "connected" and "warnings" not in st, st
    finally:
        c.disconnect()
    url, read_log = fixture_http("--get-status", "500")
    c = tnlib.Client({"mcpServers": {"fx": {"url": url}}})
    try:
        st = json.loads(c.statuses_text())["servers"]["fx"]
        assert st["status"] == "connected", st
        assert any("standalone GET stream could not be opened (HTTP 500" in w for w in st["warnings"]), st
    finally:
        c.disconnect()


def test_after_the_session_expires_the_stream_is_open_before_the_call_goes_on(fixture_http):
    url, read_log = fixture_http()
    resolver, seen = answering()
    c = tnlib.Client({"mcpServers": {"fx": {"url": url, "timeout": 10000}}}, resolver)
    try:
        assert json.loads(c.result("fx_echo", '{"text":"one"}'))["output"] == "one"
        session = next(r["session"] for r in read_log() if r.get("session"))
        # end the session behind the client's back: its next request meets a 404
        req = urllib.request.Request(url, method="DELETE", headers={"Mcp-Session-Id": session})
        urllib.request.urlopen(req).read()
        r = json.loads(c.result("fx_ask_unrelated", '{"message":"After?","wait_ms":3000}'))
        assert r["isError"] is False and json.loads(r["output"])["action"] == "accept", r
    finally:
        c.disconnect()
    steps = wire(read_log())
    assert ("event", "dropped") not in steps, steps
    # after the 404: initialize, initialized, the GET, and only then the call again (the tool
    # list the renewal asks for, on a thread of its own, may come anywhere among them)
    i = max(i for i, s in enumerate(steps) if s == ("POST", "initialize"))
    after = [s for s in steps[i:] if s != ("POST", "tools/list")]
    assert after[:4] == [("POST", "initialize"), ("POST", "notifications/initialized"), ("GET", None),
                         ("POST", "tools/call")], steps


def test_the_stream_reconnects_with_backoff_when_the_server_closes_it(fixture_http):
    url, read_log = fixture_http("--get-close-after-ms", "10", "--get-retry", "0")
    c = tnlib.Client({"mcpServers": {"fx": {"url": url}}})
    try:
        time.sleep(2.5)
    finally:
        c.disconnect()
    gets = [s for s in wire(read_log()) if s == ("GET", None)]
    # 250 ms doubling with jitter: about 4 in 2.5 s; without backoff, hundreds
    assert 2 <= len(gets) <= 6, len(gets)
