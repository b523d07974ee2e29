"""Durable suspension (contract §6) through toolnexus_c: a resolver returns SUSPEND for the
TypeScript SDK 2.4 modern-only server's question (tests/peers/ts_peer.mjs stdio-modern, tool
`ask`), the call returns at once with result.pending, and a second Python process connected
with the same config finishes it with Client.resume; resume_async in this process; malformed
tokens are InvalidArgument, a token for a server the client does not have is NotFound."""

import asyncio
import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading

import pytest

import toolnexus_c as tn
from tn_support import FIXTURE, REPO

NM = os.path.join(REPO, ".cache", "peers", "npm-modern", "node_modules")
TS_PEER = os.path.join(REPO, "tests", "peers", "ts_peer.mjs")
PROMPT = "Who are you?"


@pytest.fixture
def modern():
    if not (os.path.isdir(NM) and shutil.which("node")):
        pytest.skip("the TypeScript SDK 2.4 peer is not installed (scripts/install-peers.sh)")
    return {"mcpServers": {"tsm": {"command": ["node", TS_PEER, "stdio-modern"], "env": {"PEER_NODE_MODULES": NM}}}}


class Suspender:
    """A resolver that suspends every question and records the Requests it was given."""

    def __init__(self):
        self.seen = []
        self.lock = threading.Lock()

    def __call__(self, request):
        with self.lock:
            self.seen.append(request)
        return tn.SUSPEND


def suspend_once(config):
    """Calls tsm_ask with a suspending resolver; returns (the pending, the Requests seen)."""
    s = Suspender()
    with tn.connect(config, s) as c:
        assert c.statuses()["servers"]["tsm"]["status"] == "connected", c.statuses()
        r = c.call("tsm_ask")
        assert c.resolver_errors == []
    assert r.is_error is False, r
    assert r.output == "The server asked for input; the call is suspended.\n" + PROMPT, r
    p = r.pending
    assert p is not None and p == r.metadata["pending"], r
    assert [q["id"] for q in p["requests"]] == [q["id"] for q in s.seen] and len(s.seen) == 1, (p, s.seen)
    assert p["requests"][0]["prompt"] == PROMPT and p["requests"][0]["kind"] == "input", p
    assert p["resume"].startswith("tn1."), p
    return p, s.seen


# The second process: a fresh interpreter, a client with no resolver, the same config.
RESUME = textwrap.dedent("""
    import json, sys
    import toolnexus_c as tn
    config, token, answers = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    with tn.connect(config) as client:
        r = client.resume(token, answers)
    print(json.dumps({"pid": __import__("os").getpid(), "result": json.loads(r.json)}))
""")


def test_a_suspended_call_is_resumed_in_a_second_process(modern):
    pending, _ = suspend_once(modern)
    rid = pending["requests"][0]["id"]
    answers = {rid: tn.accept({"name": "Resumed"})}
    # from outside the repository, so the child imports the installed package too
    done = subprocess.run([sys.executable, "-c", RESUME, json.dumps(modern), pending["resume"], json.dumps(answers)],
                          capture_output=True, text=True, timeout=90, cwd="/")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["pid"] != os.getpid()
    r = out["result"]
    assert r["isError"] is False and "pending" not in (r.get("metadata") or {}), r
    assert json.loads(r["output"])["content"] == {"name": "Resumed", "age": 30}, r


def test_resume_with_a_decline_and_with_no_answer(modern):
    pending, _ = suspend_once(modern)
    rid = pending["requests"][0]["id"]
    with tn.connect(modern) as c:
        r = c.resume(pending["resume"], json.dumps({rid: tn.decline()}))  # JSON text works too
    assert json.loads(r.output)["action"] == "decline", r
    pending, _ = suspend_once(modern)
    with tn.connect(modern) as c:
        r = c.resume(pending["resume"])  # no answers: each Request is cancel
    assert json.loads(r.output)["action"] == "cancel", r


def test_resume_async(modern):
    pending, _ = suspend_once(modern)
    rid = pending["requests"][0]["id"]

    async def main(c):
        return await c.resume_async(pending["resume"], {rid: tn.accept({"name": "Async"})}, timeout_ms=30000)

    with tn.connect(modern) as c:
        r = asyncio.run(main(c))
    assert isinstance(r, tn.ToolResult) and r.pending is None, r
    assert json.loads(r.output)["content"]["name"] == "Async", r


def test_resume_tokens_are_checked(modern):
    with tn.connect(modern) as c:
        for bad in ["nope", "tn1.!!!", "tn1." + "e30"]:  # not a token; not base64url; {} is no token
            with pytest.raises(tn.InvalidArgument):
                c.resume(bad, {})
        with pytest.raises(tn.InvalidArgument):
            asyncio.run(c.resume_async("nope"))
        with pytest.raises(ValueError):
            c.resume("tn1.\0", {})
    pending, _ = suspend_once(modern)
    with tn.connect(modern) as c:
        with pytest.raises(tn.InvalidArgument, match="not the id of a Request"):
            c.resume(pending["resume"], {"elc-not-in-token": tn.accept()})
    # a client without that server: NotFound, naming it
    with tn.connect({"mcpServers": {"fx": {"command": [FIXTURE]}}}) as other:
        with pytest.raises(tn.NotFound, match="`tsm`"):
            other.resume(pending["resume"], {})
        with pytest.raises(tn.NotFound, match="`tsm`"):
            asyncio.run(other.resume_async(pending["resume"]))
    # the token still works where the server is: nothing was used up by the refusals
    with tn.connect(modern) as c:
        r = c.resume(pending["resume"], {pending["requests"][0]["id"]: tn.accept({"name": "Late"})})
    assert json.loads(r.output)["content"]["name"] == "Late", r


def test_suspend_from_a_future_is_cancel_and_a_legacy_question_is_not_suspended(modern):
    import concurrent.futures

    def later(request):
        f = concurrent.futures.Future()
        threading.Timer(0.05, lambda: f.set_result(tn.SUSPEND)).start()
        return f

    with tn.connect(modern, later) as c:
        r = c.call("tsm_ask")
        assert r.pending is None and json.loads(r.output)["action"] == "cancel", r
        assert any("SUSPEND" in e for e in c.resolver_errors), c.resolver_errors
    # the fixture is a legacy server: its elicitation/create cannot be suspended, so it is cancel
    with tn.connect({"mcpServers": {"fx": {"command": [FIXTURE]}}}, lambda req: tn.SUSPEND) as c:
        r = c.call("fx_ask_form")
        assert r.pending is None and not r.is_error, r
        assert "cancel" in r.output, r
    assert repr(tn.SUSPEND) == "toolnexus_c.SUSPEND" and tn.SUSPEND is tn.Suspend.SUSPEND
