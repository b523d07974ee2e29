"""Resources, resource templates, subscriptions, prompts and completions through the C ABI
against @modelcontextprotocol/server-everything (npm; nobody here wrote it), over stdio and
streamable HTTP, in the handshake era it speaks: its static documents, both dynamic templates
(text and a blob read and decoded), subscriptions with its `toggle-subscriber-updates` tool
producing `resource_updated` events and none after unsubscribe, its four prompts (the embedded
resource one too), and completions of `completable-prompt` (the context-aware one too)."""

import base64
import json
import os
import time

import pytest

import tnlib
from conftest import REPO, stop
from test_http import LOOPBACK, start_server

PEERS = os.path.join(REPO, ".cache", "peers")
EV = os.path.join(PEERS, "npm", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")

pytestmark = pytest.mark.skipif(not os.path.exists(EV), reason="run scripts/install-peers.sh first")

DOCS = "demo://resource/static/document/"


@pytest.fixture(scope="module")
def ev_http():
    proc, port = start_server(["node", "--require", LOOPBACK, EV, "streamableHttp"])
    yield "http://127.0.0.1:%d/mcp" % port
    stop(proc)


@pytest.fixture(scope="module", params=["stdio", "http"])
def ev(request, ev_http):
    """One client of server-everything over the parametrized transport, with its events."""
    spec = {"command": ["node", EV, "stdio"]} if request.param == "stdio" else {"url": ev_http}
    c = tnlib.Client({"mcpServers": {"ev": spec}})
    events = c.events()
    yield c, events
    c.disconnect()


def test_the_static_documents_are_listed_and_read(ev):
    c, _ = ev
    resources = c.ok("tn_list_resources")
    docs = [r for r in resources if r["uri"].startswith(DOCS)]
    assert len(docs) >= 5, resources
    assert all(r["server"] == "ev" and r["name"] and r["mimeType"] for r in docs), docs
    uris = [r["uri"] for r in resources]
    assert uris == sorted(uris), "sorted by uri within the server"
    doc = next(r for r in docs if r["mimeType"] == "text/markdown")
    got = c.ok("tn_read_resource", "ev", doc["uri"])
    (content,) = got["contents"]
    assert content["uri"] == doc["uri"] and content["mimeType"] == "text/markdown", content
    assert len(content["text"]) > 50, content


def test_both_dynamic_templates_are_listed_expanded_and_read(ev):
    c, _ = ev
    templates = {t["uriTemplate"]: t for t in c.ok("tn_list_resource_templates")}
    text_t = "demo://resource/dynamic/text/{resourceId}"
    blob_t = "demo://resource/dynamic/blob/{resourceId}"
    assert text_t in templates and blob_t in templates, templates
    assert templates[blob_t]["server"] == "ev" and templates[blob_t]["mimeType"] == "application/octet-stream"
    # The template's variables and its expansion through the pure helper, as a picker would.
    st, out = tnlib.call_out(tnlib.lib().tn_uri_template, json.dumps({"template": text_t, "values": {"resourceId": 7}}))
    assert st == tnlib.TN_OK, tnlib.last_error()
    expanded = json.loads(out)
    assert expanded == {"variables": ["resourceId"], "uri": "demo://resource/dynamic/text/7"}, expanded
    (text,) = c.ok("tn_read_resource", "ev", expanded["uri"])["contents"]
    assert text["text"].startswith("Resource 7: This is a plaintext resource"), text
    (blob,) = c.ok("tn_read_resource", "ev", "demo://resource/dynamic/blob/3")["contents"]
    assert "text" not in blob, "a blob stays a blob"
    assert base64.b64decode(blob["blob"]).decode().startswith("Resource 3: This is a base64 blob"), blob


def test_an_unknown_resource_is_not_found_naming_server_and_uri(ev):
    c, _ = ev
    st, msg = c.out("tn_read_resource", "ev", "demo://resource/dynamic/text/0")
    assert st in (tnlib.TN_ERR_NOT_FOUND, tnlib.TN_ERR_SERVER), (st, msg)
    assert "server `ev`" in msg and "demo://resource/dynamic/text/0" in msg, msg
    st, msg = c.out("tn_read_resource", "nope", "demo://x")
    assert st == tnlib.TN_ERR_NOT_FOUND and "nope" in msg, (st, msg)
    st, msg = c.out("tn_read_resource", "ev", "")
    assert st == tnlib.TN_ERR_INVALID_ARGUMENT, (st, msg)


def test_subscriptions_produce_updates_and_none_after_unsubscribe(ev):
    c, events = ev
    uri = DOCS + "features.md"
    st, msg = c.status_of("tn_subscribe_resource", "ev", uri)
    assert st == tnlib.TN_OK, msg
    st0 = json.loads(c.statuses_text())["servers"]["ev"]
    assert st0["subscriptions"] == [uri], st0
    start = len(events.items)
    out = json.loads(c.result("ev_toggle-subscriber-updates"))
    assert "Started" in out["output"], out
    try:
        # One at once, then every 5 s.
        _, e = events.wait(lambda e: e["type"] == "resource_updated", timeout=10, start=start)
        assert e == {"type": "resource_updated", "server": "ev", "uri": uri}, e
        st, msg = c.status_of("tn_unsubscribe_resource", "ev", uri)
        assert st == tnlib.TN_OK, msg
        after = len(events.items)
        time.sleep(6)
        late = [e for e in events.items[after:] if e["type"] == "resource_updated"]
        assert late == [], late
        st, msg = c.status_of("tn_unsubscribe_resource", "ev", uri)
        assert st == tnlib.TN_ERR_NOT_FOUND and "not subscribed" in msg, (st, msg)
    finally:
        c.result("ev_toggle-subscriber-updates")


def test_the_four_prompts_are_listed_under_host_names(ev):
    c, _ = ev
    prompts = {p["name"]: p for p in c.ok("tn_list_prompts")}
    for name in ("ev_simple-prompt", "ev_args-prompt", "ev_completable-prompt", "ev_resource-prompt"):
        assert name in prompts, prompts
    args = prompts["ev_args-prompt"]
    assert args["server"] == "ev" and args["prompt"] == "args-prompt", args
    by_name = {a["name"]: a for a in args["arguments"]}
    assert by_name["city"].get("required") is True and not by_name["state"].get("required"), args
    assert prompts["ev_simple-prompt"]["arguments"] == [], prompts["ev_simple-prompt"]


def test_prompts_are_got_with_their_arguments(ev):
    c, _ = ev
    simple = c.ok("tn_get_prompt", "ev_simple-prompt", None)
    assert simple["messages"][0]["role"] == "user" and simple["messages"][0]["content"]["type"] == "text", simple
    got = c.ok("tn_get_prompt", "ev_args-prompt", json.dumps({"city": "Paris", "state": "Île-de-France"}))
    text = got["messages"][0]["content"]["text"]
    assert "Paris" in text and "Île-de-France" in text, got
    # A missing required argument: the server refuses it, and the message says so.
    st, msg = c.out("tn_get_prompt", "ev_args-prompt", "{}")
    assert st == tnlib.TN_ERR_SERVER and "server `ev`" in msg and "args-prompt" in msg, (st, msg)
    st, msg = c.out("tn_get_prompt", "ev_no-such-prompt", None)
    assert st == tnlib.TN_ERR_NOT_FOUND and "ev_no-such-prompt" in msg, (st, msg)
    st, msg = c.out("tn_get_prompt", "ev_args-prompt", "[1]")
    assert st == tnlib.TN_ERR_INVALID_ARGUMENT, (st, msg)
    st, msg = c.out("tn_get_prompt", "ev_args-prompt", "{not json")
    assert st == tnlib.TN_ERR_INVALID_JSON, (st, msg)


def test_the_embedded_resource_prompt_keeps_the_resource_as_sent(ev):
    c, _ = ev
    for kind, key in (("Text", "text"), ("Blob", "blob")):
        got = c.ok("tn_get_prompt", "ev_resource-prompt", json.dumps({"resourceType": kind, "resourceId": "2"}))
        blocks = [m["content"] for m in got["messages"]]
        embedded = [b for b in blocks if b["type"] == "resource"]
        assert len(embedded) == 1, blocks
        res = embedded[0]["resource"]
        assert key in res and res["uri"].endswith("/2"), res
        assert set(res) == {"uri", "mimeType", key}, "the keys the server sent, no added nulls: %r" % res


def test_completions_including_the_context_aware_one(ev):
    c, _ = ev

    def complete(arg, value, context=None):
        req = {"server": "ev", "ref": {"type": "ref/prompt", "name": "completable-prompt"},
               "argument": {"name": arg, "value": value}}
        if context is not None:
            req["context"] = {"arguments": context}
        return c.ok("tn_complete", json.dumps(req))

    assert complete("department", "S")["values"] == ["Sales", "Support"]
    assert complete("name", "", {"department": "Engineering"})["values"] == ["Alice", "Bob", "Charlie"]
    assert complete("name", "G", {"department": "Marketing"})["values"] == ["Grace"]
    assert complete("name", "A")["values"] == [], "no department: nothing"
    tpl = {"server": "ev", "ref": {"type": "ref/resource", "uri": "demo://resource/dynamic/text/{resourceId}"},
           "argument": {"name": "resourceId", "value": "12"}}
    assert c.ok("tn_complete", json.dumps(tpl))["values"] == ["12"]
    for bad in ('{"ref":{}}', '{"server":"ev","ref":{"type":"ref/x"},"argument":{"name":"a","value":"b"}}',
                '{"server":"ev","ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"a"}}'):
        st, msg = c.out("tn_complete", bad)
        assert st == tnlib.TN_ERR_INVALID_ARGUMENT, (bad, st, msg)
    st, msg = c.out("tn_complete", '{"server":"zz","ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"a","value":""}}')
    assert st == tnlib.TN_ERR_NOT_FOUND and "zz" in msg, (st, msg)
