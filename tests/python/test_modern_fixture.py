"""The modern era (MCP 2026-07-28, contract §6) through the C ABI against the project's own
fixture server in `--modern` / `--dual` mode, over stdio and stateless HTTP: deterministic
cases the real SDK peers (test_eras.py) cannot script. The fixture's `--log` records every
message the library sent, so the tests check the wire too: the `_meta` envelope on every
request, `inputResponses`, `requestState`, a new id per round, the number of rounds."""

import json
import os
import subprocess
import threading
import time

import pytest

import tnlib
from conftest import REPO, stop

FIXTURE = os.environ.get("TN_FIXTURE") or os.path.join(REPO, "target", "debug", "tn-fixture-server")
VERSION = "2026-07-28"
K_VERSION = "io.modelcontextprotocol/protocolVersion"
K_CAPS = "io.modelcontextprotocol/clientCapabilities"
NO_RESOLVER = "the server asked for input; no resolver is registered"
ACCEPT = '{"ok":true,"data":{"name":"Ada","age":36}}'

pytestmark = pytest.mark.skipif(not os.path.exists(FIXTURE), reason="build tn-fixture-server first")


# ---------------------------------------------------------------- helpers


class Http:
    """A fixture server in HTTP mode (`--http 127.0.0.1:0`), with its log."""

    def __init__(self, tmp_path, *flags):
        self.log = str(tmp_path / ("http%d.log" % id(self)))
        self.proc = subprocess.Popen([FIXTURE, "--http", "127.0.0.1:0", "--log", self.log] + list(flags),
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.proc.stdout.readline()
        assert line.startswith("listening on "), line
        self.url = line.split()[-1]

    def lines(self):
        return read_log(self.log)


def read_log(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(x) for x in f if x.strip()]


@pytest.fixture
def http(tmp_path):
    made = []

    def make(*flags):
        h = Http(tmp_path, *flags)
        made.append(h)
        return h

    yield make
    for h in made:
        stop(h.proc)


@pytest.fixture
def server(request, tmp_path, http):
    """A `--modern` fixture over the parametrized transport: (its config entry, a function
    returning the requests the library sent, in order, each with "rpc", "id", "params", and
    over HTTP the headers as the fixture logs them)."""
    return make_server(request.param, tmp_path, http, ["--modern"])


def make_server(transport, tmp_path, http, flags, **extra):
    if transport == "stdio":
        log = str(tmp_path / "stdio.log")
        spec = {"command": [FIXTURE] + flags + ["--log", log]}
        sent = lambda: [x for x in read_log(log) if x["kind"] == "request"]  # noqa: E731
    else:
        h = http(*flags)
        spec = {"url": h.url}
        sent = lambda: [x for x in h.lines() if x.get("kind") == "request"]  # noqa: E731
    spec.update(extra)
    return spec, sent


class Asker:
    """A resolver that answers from a script and records every Request it was given."""

    def __init__(self, answer=ACCEPT, mode="inline"):
        self.answer, self.mode, self.seen, self.responders = answer, mode, [], []
        self.resolver = tnlib.Resolver(self.fn)

    def fn(self, request_json, responder):
        self.seen.append(json.loads(request_json))
        self.responders.append(responder)
        if self.mode == "suspend":
            return tnlib.TN_SUSPEND
        if self.mode == "never":
            return tnlib.TN_DEFERRED
        if self.mode == "deferred":
            threading.Timer(0.1, lambda: tnlib.answer(responder, self.answer)).start()
            return tnlib.TN_DEFERRED
        tnlib.answer(responder, self.answer)
        return tnlib.TN_RESOLVED


def output(text):
    r = json.loads(text)
    return r["output"], r["isError"]


def calls(sent, tool):
    return [r for r in sent() if r["rpc"] == "tools/call" and r["params"]["name"] == tool]


BOTH = pytest.mark.parametrize("server", ["stdio", "http"], indirect=True)


# ---------------------------------------------------------------- era and envelope


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("mode", ["--modern", "--dual"])
def test_the_era_in_the_statuses(tmp_path, http, transport, mode, connect):
    spec, sent = make_server(transport, tmp_path, http, [mode])
    c = connect({"mcpServers": {"fx": spec}})
    st = json.loads(c.statuses_text())["servers"]["fx"]
    assert st["status"] == "connected" and st["era"] == "modern" and st["protocolVersion"] == VERSION, st
    assert output(c.result("fx_echo", '{"text":"hi é"}')) == ("hi é", False)
    rpcs = [r["rpc"] for r in sent()]
    assert rpcs[0] == "server/discover" and "initialize" not in rpcs, rpcs


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_protocol_legacy_against_a_dual_server_stays_legacy(tmp_path, http, transport, connect):
    spec, sent = make_server(transport, tmp_path, http, ["--dual"], protocol="legacy")
    c = connect({"mcpServers": {"fx": spec}})
    st = json.loads(c.statuses_text())["servers"]["fx"]
    assert st["era"] == "legacy" and st["protocolVersion"] == "2025-11-25", st
    assert [r["rpc"] for r in sent()][0] == "initialize"


@BOTH
@pytest.mark.parametrize("with_resolver", [True, False])
def test_the_envelope_is_on_every_request(server, with_resolver, connect):
    spec, sent = server
    c = connect({"mcpServers": {"fx": spec}}, Asker().resolver if with_resolver else None)
    c.result("fx_echo", '{"text":"x"}')
    c.result("fx_add", '{"a":1,"b":2}')
    caps = {"elicitation": {"form": {}, "url": {}}} if with_resolver else {}
    # The era policy (docs/protocol-eras.md): with a resolver, the handshake is tried for push-style
    # questions (first over stdio; over HTTP after the probe, for a session); this
    # 2026-07-28-only server refuses it. The envelope is on every request but that one.
    rpcs = [r["rpc"] for r in sent()]
    if not with_resolver:
        assert rpcs[:2] == ["server/discover", "tools/list"], rpcs
    elif "url" in spec:
        assert rpcs[:3] == ["server/discover", "initialize", "tools/list"], rpcs
    else:
        assert rpcs[:2] == ["initialize", "tools/list"], rpcs
    reqs = [r for r in sent() if r["rpc"] != "initialize"]
    assert len(reqs) >= 3
    for r in reqs:
        meta = r["params"]["_meta"]
        assert meta[K_VERSION] == VERSION and meta[K_CAPS] == caps, r
        assert meta["io.modelcontextprotocol/clientInfo"]["name"] == "toolnexus", r
        if "http" in r:
            assert r["protocolVersion"] == VERSION and r["mcpMethod"] == r["rpc"] and r["session"] is None, r
            assert r["mcpName"] == (r["params"]["name"] if r["rpc"] == "tools/call" else None), r
    # discover carries the envelope and nothing else; a call carries a progressToken
    assert list(reqs[0]["params"]) == ["_meta"] and "progressToken" not in reqs[0]["params"]["_meta"]
    assert "progressToken" in calls(sent, "echo")[0]["params"]["_meta"]


@pytest.mark.parametrize("delay_ms", [0, 50, 200])
def test_a_modern_only_child_that_exits_after_refusing_the_handshake_is_started_again(
        tmp_path, http, delay_ms, connect):
    # With a resolver a stdio server gets `initialize` first; this one refuses it (-32022
    # listing 2026-07-28), reads nothing more and exits 1 `delay_ms` later, as an rmcp server's
    # `main` does. When the refusal is read the child may or may not be gone: a fresh child
    # gets the first 2026-07-28 request either way.
    spec, sent = make_server("stdio", tmp_path, http, ["--modern", "--exit-after-refusal-ms", str(delay_ms)])
    asker = Asker()
    c = connect({"mcpServers": {"fx": spec}}, asker.resolver)
    st = json.loads(c.statuses_text())["servers"]["fx"]
    assert st["status"] == "connected" and st["era"] == "modern", st
    assert "-32022" in st["eraReason"] and "started again" in st["eraReason"], st
    assert output(c.result("fx_echo", '{"text":"hi"}')) == ("hi", False)
    out, err = output(c.result("fx_mrtr_ask"))
    assert not err and asker.seen, out
    rpcs = [r["rpc"] for r in sent()]
    assert rpcs[0] == "initialize" and rpcs.count("initialize") == 1 and rpcs[1] == "tools/list", rpcs


def test_a_modern_only_child_that_refuses_then_fails_names_both(tmp_path, http, connect):
    # The second child fails too (its tool list errors): the failure names the refusal before it.
    spec, _ = make_server("stdio", tmp_path, http, ["--modern", "--exit-after-refusal-ms", "20",
                                                    "--no-tools-list"])
    c = connect({"mcpServers": {"fx": spec}}, Asker().resolver)
    st = json.loads(c.statuses_text())["servers"]["fx"]
    assert st["status"] == "failed", st
    msg = st["error"]
    assert "tools/list" in msg and "exploded" in msg, msg
    assert "(before: `initialize` was answered -32022 listing 2026-07-28 (the server was started again))" in msg, msg


def test_a_modern_only_http_server_that_refuses_the_handshake_costs_a_request(tmp_path, http, connect):
    # Over HTTP the probe goes first; with a resolver `initialize` is tried for a session and
    # refused: one request, no restart, the same server spoken to in 2026-07-28.
    spec, sent = make_server("http", tmp_path, http, ["--modern"])
    asker = Asker()
    c = connect({"mcpServers": {"fx": spec}}, asker.resolver)
    st = json.loads(c.statuses_text())["servers"]["fx"]
    assert st["status"] == "connected" and st["era"] == "modern", st
    assert "refused the handshake" in st["eraReason"] and "started again" not in st["eraReason"], st
    assert not output(c.result("fx_mrtr_ask"))[1] and asker.seen
    rpcs = [r["rpc"] for r in sent()]
    assert rpcs[:3] == ["server/discover", "initialize", "tools/list"], rpcs


def test_modern_tools_list_and_results(tmp_path, http, connect):
    spec, _ = make_server("stdio", tmp_path, http, ["--modern"])
    c = connect({"mcpServers": {"fx": spec}})
    names = [t["name"] for t in json.loads(c.tools_text())]
    for t in ("fx_mrtr_ask", "fx_mrtr_two", "fx_ask_anyway", "fx_slow_progress", "fx_echo", "fx_structured"):
        assert t in names, names
    legacy = connect({"mcpServers": {"fx": {"command": [FIXTURE]}}})
    assert json.loads(legacy.statuses_text())["servers"]["fx"]["era"] == "legacy"
    # the same results shaped the same in both eras (resultType is not part of the ToolResult)
    for tool in ("fx_structured", "fx_fail", "fx_image", "fx_mixed", "fx_big_text"):
        args = '{"bytes":100000}' if tool == "fx_big_text" else None
        assert c.result(tool, args) == legacy.result(tool, args), tool


# ---------------------------------------------------------------- MRTR


@BOTH
@pytest.mark.parametrize("answer, want", [
    (ACCEPT, {"action": "accept", "content": {"name": "Ada", "age": 36}}),
    ('{"ok":false,"reason":"declined"}', {"action": "decline"}),
    ('{"ok":false,"reason":"cancelled"}', {"action": "cancel"}),
])
@pytest.mark.parametrize("mode", ["inline", "deferred"])
def test_mrtr_answers(server, answer, want, mode, connect):
    spec, sent = server
    asker = Asker(answer, mode)
    c = connect({"mcpServers": {"fx": spec}}, asker.resolver)
    out, err = output(c.result("fx_mrtr_ask"))
    assert not err, out
    assert json.loads(out) == dict({"requestState": "s1"}, **want), out
    assert [(r["kind"], r["prompt"]) for r in asker.seen] == [("input", "Who are you?")]
    assert asker.seen[0]["data"]["schema"]["required"] == ["name"]
    first, retry = calls(sent, "mrtr_ask")
    assert first["id"] != retry["id"]
    assert "inputResponses" not in first["params"] and "requestState" not in first["params"]
    assert retry["params"]["inputResponses"] == {"who": want} and retry["params"]["requestState"] == "s1"
    assert retry["params"]["arguments"] == first["params"]["arguments"] == {}
    assert retry["params"]["_meta"][K_VERSION] == VERSION


@BOTH
def test_two_questions_in_one_round(server, connect):
    spec, sent = server
    asker = Asker('{"ok":true,"data":{"name":"Ada","ok":true}}', "deferred")
    c = connect({"mcpServers": {"fx": spec}}, asker.resolver)
    out, err = output(c.result("fx_mrtr_two"))
    assert not err, out
    got = json.loads(out)
    assert got["requestState"] == "two-1" and list(got) == ["requestState", "name", "confirm"], got
    assert got["name"]["action"] == "accept" and got["confirm"]["action"] == "accept", got
    # asked one at a time, in the server's key order, all in one round
    assert [r["prompt"] for r in asker.seen] == ["Your name?", "Proceed?"], asker.seen
    first, retry = calls(sent, "mrtr_two")
    assert list(retry["params"]["inputResponses"]) == ["name", "confirm"]


@BOTH
def test_a_server_that_never_stops_asking_gets_ten_rounds(server, connect):
    spec, sent = server
    asker = Asker('{"ok":true,"data":{"name":"Ada"}}')
    c = connect({"mcpServers": {"fx": spec}}, asker.resolver)
    out, err = output(c.result("fx_mrtr_forever"))
    assert err and "still asked for input after 10 rounds" in out, out
    assert [r["prompt"] for r in asker.seen] == ["question %d" % i for i in range(1, 11)]
    reqs = calls(sent, "mrtr_forever")
    assert len(reqs) == 11, "the 11th input_required is not retried"
    assert len({r["id"] for r in reqs}) == 11, "a new id every round"
    assert [r["params"].get("requestState") for r in reqs] == [None] + [str(i) for i in range(1, 11)]
    assert list(reqs[3]["params"]["inputResponses"]) == ["q3"]


@BOTH
def test_a_request_state_only_round_is_retried_without_the_resolver(server, connect):
    spec, sent = server
    asker = Asker()
    c = connect({"mcpServers": {"fx": spec}}, asker.resolver)
    out, err = output(c.result("fx_mrtr_state_only"))
    assert not err and json.loads(out)["requestState"] == "come-back", out
    assert asker.seen == []
    first, retry = calls(sent, "mrtr_state_only")
    assert retry["params"]["requestState"] == "come-back" and retry["id"] != first["id"]
    # nothing was asked, so nothing is answered (an empty object at most)
    assert retry["params"].get("inputResponses", {}) == {}, retry


@BOTH
def test_url_mode_question(server, connect):
    spec, sent = server
    asker = Asker('{"ok":true}')
    c = connect({"mcpServers": {"fx": spec}}, asker.resolver)
    out, err = output(c.result("fx_mrtr_url"))
    assert not err and json.loads(out) == {"requestState": "url-1", "auth": {"action": "accept"}}, out
    (q,) = asker.seen
    assert q["kind"] == "authorization" and q["url"] == "https://example.test/auth", q
    assert q["prompt"] == "Please authorize." and q["data"] == {"server": "fx", "source": "retry"}, q


@BOTH
@pytest.mark.parametrize("tool, names", [
    ("mrtr_unknown_result", ["resultType", "`weird`"]),
    ("mrtr_bad_method", ["`sampling/createMessage`", "`llm`"]),
])
def test_what_the_client_cannot_answer_is_an_error_naming_it(server, tool, names, connect):
    spec, sent = server
    asker = Asker()
    c = connect({"mcpServers": {"fx": spec}}, asker.resolver)
    out, err = output(c.result("fx_" + tool))
    assert err and out.startswith("server `fx`: tools/call `%s` failed" % tool), out
    for n in names:
        assert n in out, out
    assert asker.seen == [] and len(calls(sent, tool)) == 1, "nothing asked, nothing retried"


@BOTH
def test_a_server_that_asks_anyway_without_a_resolver(server, connect):
    spec, sent = server
    c = connect({"mcpServers": {"fx": spec}})
    out, err = output(c.result("fx_ask_anyway"))
    assert err and out.endswith(NO_RESOLVER), out
    assert len(calls(sent, "ask_anyway")) == 1
    st = json.loads(c.statuses_text())["servers"]["fx"]
    assert st["lastElicitationError"] == NO_RESOLVER, st


@BOTH
def test_minus_32021_without_a_resolver_says_so(server, connect):
    spec, sent = server
    c = connect({"mcpServers": {"fx": spec}})
    out, err = output(c.result("fx_mrtr_ask"))
    assert err and "-32021" in out and out.endswith(NO_RESOLVER), out
    assert calls(sent, "mrtr_ask")[0]["params"]["_meta"][K_CAPS] == {}
    assert json.loads(c.statuses_text())["servers"]["fx"]["lastElicitationError"] == NO_RESOLVER


# ---------------------------------------------------------------- probing


def test_a_child_that_exits_on_the_probe_is_restarted_and_speaks_legacy(tmp_path, connect):
    log = str(tmp_path / "fx.log")
    c = connect({"mcpServers": {"fx": {"command": [FIXTURE, "--exit-on-discover", "--log", log]}}})
    st = json.loads(c.statuses_text())["servers"]["fx"]
    assert st["status"] == "connected" and st["era"] == "legacy" and st["protocolVersion"] == "2025-11-25", st
    assert output(c.result("fx_echo", '{"text":"again"}')) == ("again", False)
    rpcs = [r["rpc"] for r in read_log(log) if r["kind"] == "request"]
    # the first child saw only the probe; the second one was not probed again
    assert rpcs[0] == "server/discover" and rpcs.count("server/discover") == 1, rpcs
    assert rpcs[1:3] == ["initialize", "tools/list"], rpcs


def test_a_silent_probe_falls_back_after_probe_timeout(tmp_path, connect):
    log = str(tmp_path / "fx.log")
    t0 = time.monotonic()
    c = connect({"mcpServers": {"fx": {"command": [FIXTURE, "--silent-on-discover", "--log", log],
                                       "probeTimeoutMs": 300}}})
    took = time.monotonic() - t0
    st = json.loads(c.statuses_text())["servers"]["fx"]
    assert st["status"] == "connected" and st["era"] == "legacy", st
    assert 0.3 <= took < 10, took
    rpcs = [r["rpc"] for r in read_log(log) if r["kind"] in ("request", "notification")]
    assert rpcs[:3] == ["server/discover", "initialize", "notifications/initialized"], rpcs
    assert output(c.result("fx_echo", '{"text":"late"}')) == ("late", False)


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_protocol_modern_against_a_legacy_fixture_names_2026(tmp_path, http, transport, connect):
    spec, _ = make_server(transport, tmp_path, http, [], protocol="modern")
    c = connect({"mcpServers": {"fx": spec}})
    st = json.loads(c.statuses_text())["servers"]["fx"]
    assert st["status"] == "failed" and VERSION in st["error"], st


# ---------------------------------------------------------------- async: progress, cancel


@BOTH
def test_progress_in_the_modern_era(server, connect):
    spec, sent = server
    c = connect({"mcpServers": {"fx": spec}})
    call = c.start("fx_slow_progress", '{"steps":3,"ms":50}')
    assert call.status == tnlib.TN_OK, call.error
    out, err = output(call.wait(20))
    assert (out, err) == ("done after 3 steps", False)
    got = [json.loads(p) for p, _, after_done in call.progress]
    assert [p["message"] for p in got] == ["step 1", "step 2", "step 3"], got
    assert [p["progress"] for p in got] == [1, 2, 3] and all(p["total"] == 3 for p in got), got
    assert not any(after_done for _, _, after_done in call.progress)
    (req,) = calls(sent, "slow_progress")
    assert req["params"]["_meta"][K_VERSION] == VERSION and "progressToken" in req["params"]["_meta"]


@BOTH
def test_a_cancel_while_the_resolver_waits(server, connect):
    spec, sent = server
    asker = Asker(mode="never")
    c = connect({"mcpServers": {"fx": spec}}, asker.resolver)
    call = c.start("fx_mrtr_ask")
    assert call.status == tnlib.TN_OK, call.error
    deadline = time.time() + 10
    while not asker.seen and time.time() < deadline:
        time.sleep(0.01)
    assert asker.seen, "the question reached the resolver"
    assert c.cancel(call.call_id)[0] == tnlib.TN_OK
    out, err = output(call.wait(10))
    assert err and out.endswith("was cancelled"), out
    assert tnlib.answer(asker.responders[0], ACCEPT) == tnlib.TN_ERR_CLOSED
    assert len(calls(sent, "mrtr_ask")) == 1, "no retry after the cancel"


# ---------------------------------------------------------------- suspension


def suspended(c, asker, tool="fx_mrtr_ask"):
    r = json.loads(c.result(tool))
    assert r["isError"] is False and r["output"].startswith("The server asked for input; the call is suspended."), r
    pending = r["metadata"]["pending"]
    assert [q["id"] for q in pending["requests"]] == [q["id"] for q in asker.seen]
    return pending


@BOTH
def test_suspension_then_resume(server, connect):
    spec, sent = server
    asker = Asker(mode="suspend")
    c = connect({"mcpServers": {"fx": spec}}, asker.resolver)
    pending = suspended(c, asker)
    qid = pending["requests"][0]["id"]
    status, text = c.resume(pending["resume"], json.dumps({qid: {"ok": True, "data": {"name": "Later"}}}))
    assert status == tnlib.TN_OK, text
    out, err = output(text)
    assert not err and json.loads(out) == {"requestState": "s1", "action": "accept",
                                           "content": {"name": "Later", "age": 30}}, out
    first, retry = calls(sent, "mrtr_ask")
    assert retry["id"] != first["id"] and retry["params"]["requestState"] == "s1"
    assert retry["params"]["inputResponses"]["who"]["action"] == "accept"


@BOTH
def test_suspension_resumed_by_a_second_client(server, connect):
    spec, sent = server
    cfg = {"mcpServers": {"fx": spec}}
    asker = Asker(mode="suspend")
    first = connect(cfg, asker.resolver)
    r = json.loads(first.result("fx_mrtr_two"))
    pending = r["metadata"]["pending"]
    # the resolver saw the first question only; the token carries the whole round
    assert [q["prompt"] for q in asker.seen] == ["Your name?"], asker.seen
    assert [q["prompt"] for q in pending["requests"]] == ["Your name?", "Proceed?"], pending
    first.disconnect()
    second = connect(cfg)
    answers = {q["id"]: {"ok": True, "data": {"name": "Two", "ok": True}} for q in pending["requests"]}
    status, text = second.resume(pending["resume"], json.dumps(answers))
    assert status == tnlib.TN_OK, text
    out, err = output(text)
    got = json.loads(out)
    assert not err and got["requestState"] == "two-1", out
    assert got["name"]["action"] == "accept" and got["confirm"]["action"] == "accept", got
    retry = calls(sent, "mrtr_two")[-1]
    assert retry["params"]["requestState"] == "two-1" and list(retry["params"]["inputResponses"]) == ["name", "confirm"]


@BOTH
def test_rounds_are_counted_across_resumes(server, connect):
    spec, sent = server
    asker = Asker(mode="suspend")
    c = connect({"mcpServers": {"fx": spec}}, asker.resolver)
    r = json.loads(c.result("fx_mrtr_forever"))
    for i in range(1, 11):
        pending = r["metadata"]["pending"]
        assert [q["prompt"] for q in pending["requests"]] == ["question %d" % i], (i, pending)
        answers = {q["id"]: {"ok": True, "data": {"name": "n"}} for q in pending["requests"]}
        status, text = c.resume(pending["resume"], json.dumps(answers))
        assert status == tnlib.TN_OK, text
        r = json.loads(text)
    assert r["isError"] and "still asked for input after 10 rounds" in r["output"], r
    reqs = calls(sent, "mrtr_forever")
    assert len(reqs) == 11 and len({x["id"] for x in reqs}) == 11
    assert [x["params"].get("requestState") for x in reqs] == [None] + [str(i) for i in range(1, 11)]


@BOTH
def test_a_cancel_closes_every_open_question_of_the_round(server, connect):
    spec, sent = server
    asker = Asker(mode="never")
    c = connect({"mcpServers": {"fx": spec}}, asker.resolver)
    call = c.start("fx_mrtr_two")
    deadline = time.time() + 10
    while len(asker.seen) < 2 and time.time() < deadline:
        time.sleep(0.01)
    assert [q["prompt"] for q in asker.seen] == ["Your name?", "Proceed?"], "a deferred one does not hold back the next"
    assert c.cancel(call.call_id)[0] == tnlib.TN_OK
    out, err = output(call.wait(10))
    assert err and out.endswith("was cancelled"), out
    assert [tnlib.answer(r, ACCEPT) for r in asker.responders] == [tnlib.TN_ERR_CLOSED] * 2
    assert len(calls(sent, "mrtr_two")) == 1


@BOTH
def test_a_suspension_closes_the_deferred_questions_of_its_round(server, connect):
    spec, sent = server
    asker = Asker()
    asker.fn_modes = iter([tnlib.TN_DEFERRED, tnlib.TN_SUSPEND])

    def fn(request_json, responder):
        asker.seen.append(json.loads(request_json))
        asker.responders.append(responder)
        return next(asker.fn_modes)

    asker.resolver = tnlib.Resolver(fn)
    c = connect({"mcpServers": {"fx": spec}}, asker.resolver)
    r = json.loads(c.result("fx_mrtr_two"))
    assert [q["prompt"] for q in r["metadata"]["pending"]["requests"]] == ["Your name?", "Proceed?"], r
    assert tnlib.answer(asker.responders[0], ACCEPT) == tnlib.TN_ERR_CLOSED
    assert len(calls(sent, "mrtr_two")) == 1


def test_a_modern_cancel_over_stdio_is_a_notification(tmp_path, http, connect):
    spec, sent = make_server("stdio", tmp_path, http, ["--modern"])
    log = spec["command"][-1]
    c = connect({"mcpServers": {"fx": spec}})
    call = c.start("fx_slow_progress", '{"steps":100,"ms":50}')
    while not call.progress:
        time.sleep(0.01)
    assert c.cancel(call.call_id)[0] == tnlib.TN_OK
    out, err = output(call.wait(10))
    assert err and out.endswith("was cancelled"), out
    (req,) = calls(sent, "slow_progress")
    deadline = time.time() + 5
    while time.time() < deadline:
        notes = [x for x in read_log(log) if x["rpc"] == "notifications/cancelled"]
        if notes:
            break
        time.sleep(0.02)
    assert [n["params"]["requestId"] for n in notes] == [req["id"]], notes
    # the next call goes through
    assert output(c.result("fx_echo", '{"text":"after"}')) == ("after", False)


def test_a_modern_cancel_over_http_closes_the_stream(http, connect):
    h = http("--modern")
    c = connect({"mcpServers": {"fx": {"url": h.url}}})
    call = c.start("fx_slow_progress", '{"steps":100,"ms":50}')
    while not call.progress:
        time.sleep(0.01)
    t0 = time.monotonic()
    assert c.cancel(call.call_id)[0] == tnlib.TN_OK
    out, err = output(call.wait(10))
    assert err and out.endswith("was cancelled") and time.monotonic() - t0 < 2, out
    assert not [x for x in h.lines() if x.get("rpc") == "notifications/cancelled"]
    assert output(c.result("fx_echo", '{"text":"after"}')) == ("after", False)


def test_a_tool_name_the_routing_header_must_carry(http, connect):
    h = http("--modern")
    c = connect({"mcpServers": {"fx": {"url": h.url}}})
    names = [t["name"] for t in json.loads(c.tools_text())]
    weird = [n for n in names if n.startswith("fx_dots")]
    assert len(weird) == 1, names
    assert output(c.result(weird[0])) == ("weird ok", False)
    (req,) = [x for x in h.lines() if x.get("rpc") == "tools/call"]
    assert req["mcpName"] == "dots.and spaces", req


@BOTH
def test_two_calls_in_their_rounds_at_once(server, connect):
    spec, sent = server
    names = iter(["First", "Second"])
    lock = threading.Lock()
    asker = Asker()

    def fn(request_json, responder):
        with lock:
            name = next(names)
        asker.seen.append(json.loads(request_json))
        answer = json.dumps({"ok": True, "data": {"name": name}})
        threading.Timer(0.2, lambda: tnlib.answer(responder, answer)).start()
        return tnlib.TN_DEFERRED

    asker.resolver = tnlib.Resolver(fn)
    c = connect({"mcpServers": {"fx": spec}}, asker.resolver)
    a, b = c.start("fx_mrtr_ask"), c.start("fx_mrtr_ask")
    got = sorted(json.loads(output(x.wait(20))[0])["content"]["name"] for x in (a, b))
    assert got == ["First", "Second"], got
    reqs = calls(sent, "mrtr_ask")
    assert len(reqs) == 4 and len({r["id"] for r in reqs}) == 4, reqs


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_protocol_modern_against_a_modern_fixture(tmp_path, http, transport, connect):
    spec, sent = make_server(transport, tmp_path, http, ["--dual"], protocol="modern")
    c = connect({"mcpServers": {"fx": spec}})
    st = json.loads(c.statuses_text())["servers"]["fx"]
    assert st["status"] == "connected" and st["era"] == "modern", st
    assert "initialize" not in [r["rpc"] for r in sent()]


@BOTH
def test_the_time_the_host_takes_to_answer_is_not_a_timeout(server, connect):
    spec, sent = server
    spec = dict(spec, timeout=300, maxTotalTimeout=500)

    def fn(request_json, responder):
        threading.Timer(0.8, lambda: tnlib.answer(responder, ACCEPT)).start()
        return tnlib.TN_DEFERRED

    resolver = tnlib.Resolver(fn)
    c = connect({"mcpServers": {"fx": spec}}, resolver)
    out, err = output(c.result("fx_mrtr_ask"))
    assert not err and json.loads(out)["content"]["name"] == "Ada", out


# ---------------------------------------------------------------- fixes from review


@BOTH
def test_disconnect_from_an_mrtr_resolver_is_refused_not_a_deadlock(server, connect):
    """The resolver of an MRTR question runs on the call's thread; tn_disconnect from it must
    be TN_ERR_REENTRANT (c-api.md "Callbacks"), for a synchronous and an async call."""
    spec, _ = server
    seen = []
    holder = {}

    def fn(request_json, responder):
        tnlib.lib().tn_disconnect(holder["c"].handle)
        seen.append(tnlib.last_error())
        tnlib.answer(responder, ACCEPT)
        return tnlib.TN_RESOLVED

    c = holder["c"] = connect({"mcpServers": {"fx": spec}}, tnlib.Resolver(fn))
    out, err = output(c.result("fx_mrtr_ask"))
    assert not err and json.loads(out)["action"] == "accept", out
    call = c.start("fx_mrtr_ask")
    out, err = output(call.wait(10))
    assert not err, out
    assert len(seen) == 2 and all("would deadlock" in (m or "") for m in seen), seen
    assert output(c.result("fx_echo", '{"text":"alive"}')) == ("alive", False)


@BOTH
def test_a_cancel_from_inside_the_resolver_closes_its_question(server, connect):
    """The question is registered with the call before the resolver runs: a cancel while the
    resolver runs closes it, and the resolver's own answer afterwards is TN_ERR_CLOSED."""
    spec, sent = server
    got = {}
    holder = {}

    def fn(request_json, responder):
        while "call" not in holder:
            time.sleep(0.01)
        got["cancel"] = holder["c"].cancel(holder["call"].call_id)[0]
        got["answer"] = tnlib.answer(responder, ACCEPT)
        return tnlib.TN_RESOLVED

    c = holder["c"] = connect({"mcpServers": {"fx": spec}}, tnlib.Resolver(fn))
    holder["call"] = c.start("fx_mrtr_ask")
    out, err = output(holder["call"].wait(10))
    assert err and "was cancelled" in out, out
    assert got == {"cancel": tnlib.TN_OK, "answer": tnlib.TN_ERR_CLOSED}, got
    assert len(calls(sent, "mrtr_ask")) == 1, "nothing sent after the cancel"


@BOTH
def test_a_resume_on_a_client_without_a_resolver_makes_a_new_pending(server, connect):
    """c-api.md "Suspended calls": the retry advertises elicitation as the first attempt did,
    and on a client with no resolver a new question becomes a new pending."""
    spec, sent = server
    cfg = {"mcpServers": {"fx": spec}}
    asker = Asker(mode="suspend")
    first = connect(cfg, asker.resolver)
    pending = suspended(first, asker, "fx_mrtr_forever")
    first.disconnect()
    plain = connect(cfg)
    answers = json.dumps({pending["requests"][0]["id"]: {"ok": True, "data": {"ok": True}}})
    status, text = plain.resume(pending["resume"], answers)
    assert status == tnlib.TN_OK, text
    r = json.loads(text)
    assert r["isError"] is False and r["metadata"]["pending"]["requests"][0]["prompt"] == "question 2", r
    retry = calls(sent, "mrtr_forever")[-1]
    assert "elicitation" in retry["params"]["_meta"][K_CAPS], retry
