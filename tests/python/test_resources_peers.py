"""Resources and prompts through the C ABI against SDK servers nobody here wrote: the
TypeScript SDK 2.4 (tests/peers/ts_peer.mjs --resources) in MCP 2026-07-28 only, over stdio and
stateless HTTP (subscriptions through `subscriptions/listen`, an MRTR prompt answered through the
resolver, a prompt list change seen as an event), and the Python `mcp` SDK 2.3
(tests/peers/py_dual_peer.py) in both eras: list, read (text and blob), get, complete."""

import base64
import json
import os

import pytest

import tnlib
from conftest import REPO, stop
from test_eras import NM, PY, PY_PEER, TS_PEER, serve

pytestmark = pytest.mark.skipif(not (os.path.isdir(NM) and os.path.exists(PY)),
                                reason="run scripts/install-peers.sh first (scripts/test always does)")

ENV = {"PEER_NODE_MODULES": NM}


class Asker:
    def __init__(self, answer='{"ok":true,"data":{"name":"Ada"}}'):
        self.answer, self.seen = answer, []
        self.resolver = tnlib.Resolver(self.fn)

    def fn(self, request_json, responder):
        self.seen.append(json.loads(request_json))
        tnlib.answer(responder, self.answer)
        return tnlib.TN_RESOLVED


@pytest.fixture(scope="module")
def ts_http():
    proc, url = serve(["node", TS_PEER, "http-modern", "--resources"])
    yield url
    stop(proc)


@pytest.fixture(scope="module", params=["stdio", "http"])
def ts(request, ts_http):
    spec = ({"command": ["node", TS_PEER, "stdio-modern", "--resources"], "env": ENV}
            if request.param == "stdio" else {"url": ts_http})
    asker = Asker()
    c = tnlib.Client({"mcpServers": {"ts": spec}}, asker.resolver)
    events = c.events()
    yield c, asker, events
    c.disconnect()


def test_ts_lists_in_2026_only(ts):
    c, _, _ = ts
    st = json.loads(c.statuses_text())["servers"]["ts"]
    assert st["era"] == "modern" and st["protocolVersion"] == "2026-07-28", st
    uris = [r["uri"] for r in c.ok("tn_list_resources")]
    assert uris == ["config://app", "counter://value"], uris
    (tpl,) = c.ok("tn_list_resource_templates")
    assert tpl["uriTemplate"] == "greeting://{name}" and tpl["server"] == "ts", tpl
    names = [p["name"] for p in c.ok("tn_list_prompts")]
    assert "ts_review-code" in names and "ts_ask-name" in names, names


def test_ts_reads_and_completes(ts):
    c, _, _ = ts
    got = c.ok("tn_read_resource", "ts", "greeting://Zed")
    assert got["contents"] == [{"uri": "greeting://Zed", "text": "Hello, Zed!"}], got
    st, msg = c.out("tn_read_resource", "ts", "nothing://here")
    assert st == tnlib.TN_ERR_NOT_FOUND and "nothing://here" in msg, (st, msg)
    req = {"server": "ts", "ref": {"type": "ref/prompt", "name": "review-code"}, "argument": {"name": "language", "value": "r"}}
    assert c.ok("tn_complete", json.dumps(req))["values"] == ["rust"]
    req = {"server": "ts", "ref": {"type": "ref/resource", "uri": "greeting://{name}"}, "argument": {"name": "name", "value": "A"}}
    assert c.ok("tn_complete", json.dumps(req))["values"] == ["Ada", "Alan"]
    got = c.ok("tn_get_prompt", "ts_review-code", '{"language":"go","code":"x := 1"}')
    assert got["messages"] == [{"role": "user", "content": {"type": "text", "text": "Review this go code: x := 1"}}], got


def test_ts_an_mrtr_prompt_is_answered_through_the_resolver(ts):
    c, asker, _ = ts
    asker.seen.clear()
    got = c.ok("tn_get_prompt", "ts_ask-name", None)
    assert got["messages"][0]["content"]["text"] == "Hello, Ada", got
    assert [r["prompt"] for r in asker.seen] == ["Who are you?"], asker.seen


def test_ts_subscriptions_through_listen(ts):
    c, _, events = ts
    assert c.status_of("tn_subscribe_resource", "ts", "counter://value") == (tnlib.TN_OK, "")
    start = len(events.items)
    out = json.loads(c.result("ts_increment"))["output"]
    _, e = events.wait(lambda e: e["type"] == "resource_updated", start=start)
    assert e == {"type": "resource_updated", "server": "ts", "uri": "counter://value"}, e
    n = out.split()[-1]
    assert c.ok("tn_read_resource", "ts", "counter://value")["contents"][0]["text"] == n
    assert c.status_of("tn_unsubscribe_resource", "ts", "counter://value") == (tnlib.TN_OK, "")
    after = len(events.items)
    c.result("ts_increment")
    c.ok("tn_read_resource", "ts", "counter://value")  # a round trip after the notice would be
    late = [x for x in events.items[after:] if x["type"] == "resource_updated"]
    assert late == [], late


def test_ts_a_prompt_list_change_is_an_event(ts):
    c, _, events = ts
    before = {p["name"] for p in c.ok("tn_list_prompts")}
    start = len(events.items)
    out = json.loads(c.result("ts_toggle_prompt"))["output"]
    _, e = events.wait(lambda e: e["type"] == "prompts", start=start)
    on = out.endswith("on")
    assert e == {"type": "prompts", "server": "ts", "added": ["ts_bonus"] if on else [],
                 "removed": [] if on else ["ts_bonus"], "changed": []}, (e, before)
    assert ("ts_bonus" in {p["name"] for p in c.ok("tn_list_prompts")}) == on


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
def test_python_sdk_lists_reads_gets_and_completes(protocol):
    c = tnlib.Client({"mcpServers": {"py": {"command": [PY, PY_PEER, "stdio"], "protocol": protocol}}})
    try:
        st = json.loads(c.statuses_text())["servers"]["py"]
        assert st["era"] == ("modern" if protocol == "auto" else "legacy"), st
        res = {r["uri"]: r for r in c.ok("tn_list_resources")}
        assert set(res) == {"note://hello", "note://bytes"}, res
        assert res["note://hello"]["mimeType"] == "text/plain" and res["note://hello"]["server"] == "py"
        (text,) = c.ok("tn_read_resource", "py", "note://hello")["contents"]
        assert text["text"] == "hello from python", text
        (blob,) = c.ok("tn_read_resource", "py", "note://bytes")["contents"]
        assert base64.b64decode(blob["blob"]) == b"\x00\x01\xfe\xff", blob
        (tpl,) = c.ok("tn_list_resource_templates")
        assert tpl["uriTemplate"] == "note://topic/{topic}", tpl
        assert c.ok("tn_read_resource", "py", "note://topic/mcp")["contents"][0]["text"] == "notes on mcp"
        st_, msg = c.out("tn_read_resource", "py", "note://nope")
        assert st_ == tnlib.TN_ERR_NOT_FOUND and "note://nope" in msg, (st_, msg)
        prompts = {p["name"]: p for p in c.ok("tn_list_prompts")}
        assert prompts["py_greet"]["arguments"] == [{"name": "name", "required": True}], prompts
        got = c.ok("tn_get_prompt", "py_greet", '{"name":"Ada"}')
        assert got["messages"] == [{"role": "user", "content": {"type": "text", "text": "Hello, Ada!"}}], got
        req = {"server": "py", "ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "name", "value": "A"}}
        assert c.ok("tn_complete", json.dumps(req))["values"] == ["Ada", "Alan"]
        req = {"server": "py", "ref": {"type": "ref/resource", "uri": "note://topic/{topic}"},
               "argument": {"name": "topic", "value": "r"}}
        assert c.ok("tn_complete", json.dumps(req))["values"] == ["rust"]
    finally:
        c.disconnect()
