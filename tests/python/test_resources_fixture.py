"""Resources, templates, subscriptions, prompts and completions through the C ABI against the
fixture server's `--resources` (tests/fixture-server/README.md "Resources and prompts"), in
both eras over stdio and HTTP: the cases real peers cannot script. Paging that ends and loses
nothing (a cursor loop, `""` as a cursor in 2026-07-28 and the end before it), the size cap,
every content block kept as sent, MRTR on reads and prompts, timeouts and cancel by id,
`Mcp-Name`, caching by the spec, lenient capabilities, list-change events, subscriptions kept
across a restart."""

import json
import os
import threading
import time

import pytest

import tnlib
from test_modern_fixture import FIXTURE, Asker, http, make_server, read_log  # noqa: F401 (fixture)

pytestmark = pytest.mark.skipif(not os.path.exists(FIXTURE), reason="build tn-fixture-server first")

MODERN = "--modern"
CASES = [(t, e) for t in ("stdio", "http") for e in ("legacy", "modern")]


def flags(era, *more):
    return ["--resources"] + ([MODERN] if era == "modern" else []) + list(more)


def rpcs(sent, method):
    return [r for r in sent() if r["rpc"] == method]


@pytest.fixture
def fx(tmp_path, http, connect):  # noqa: F811
    """make(transport, era, *flags, resolver=None, **entry) -> (client, sent): each server with
    a log of its own; `sent.notes()` are the notifications the client sent (stdio)."""
    made = []

    def make(transport, era, *more, resolver=None, **extra):
        d = tmp_path / ("s%d" % len(made))
        d.mkdir()
        made.append(d)
        spec, sent = make_server(transport, d, http, flags(era, *more), **extra)
        c = connect({"mcpServers": {"fx": spec}}, resolver)
        log = str(d / "stdio.log")
        wrapped = _Sent(sent, lambda: [x for x in read_log(log) if x["kind"] == "notification"])
        return c, wrapped

    return make


class _Sent:
    """The requests the client sent (callable, as make_server's), and its notifications."""

    def __init__(self, sent, notes):
        self._sent, self.notes = sent, notes

    def __call__(self):
        return self._sent()


# ---------------------------------------------------------------- listings and paging


@pytest.mark.parametrize("transport, era", CASES)
def test_every_page_is_listed_in_order_with_the_server_first(fx, transport, era):
    c, sent = fx(transport, era, "--resource-count", "11", "--resource-page-size", "3", "--prompt-count", "8")
    res = c.ok("tn_list_resources")
    uris = [r["uri"] for r in res]
    assert len(uris) == 11 + 3 and uris == sorted(uris), uris
    assert all(list(r)[0] == "server" and r["server"] == "fx" for r in res), res[0]
    doc1 = next(r for r in res if r["uri"] == "fx://doc/1")
    assert doc1 == {"server": "fx", "uri": "fx://doc/1", "name": "doc 1", "title": "Document 1",
                    "mimeType": "text/plain", "size": 10, "annotations": {"audience": ["user"], "priority": 0.5},
                    "_meta": {"fx/note": "first"}}, doc1
    assert len(rpcs(sent, "resources/list")) == 5, "14 items in pages of 3"
    assert [t["uriTemplate"] for t in c.ok("tn_list_resource_templates")] == ["fx://item/{id}", "fx://search{?q,lang}"]
    prompts = c.ok("tn_list_prompts")
    names = [p["name"] for p in prompts]
    assert len(names) == 4 + 8 and names == sorted(names) and "fx_p0007" in names, names
    greet = next(p for p in prompts if p["name"] == "fx_greet")
    assert greet == {"name": "fx_greet", "server": "fx", "prompt": "greet", "title": "Greeting",
                     "description": "Greets someone",
                     "arguments": [{"name": "name", "description": "Who", "required": True}, {"name": "lang"}]}, greet
    if era == "modern":
        for r in rpcs(sent, "resources/list"):
            assert r["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28", r
        if transport == "http":
            assert all(r["mcpName"] is None for r in rpcs(sent, "resources/list")), "no Mcp-Name on lists"


@pytest.mark.parametrize("transport, era", CASES)
def test_a_cursor_loop_ends_with_an_error_naming_the_server(fx, transport, era):
    c, sent = fx(transport, era, "--cursor-loop", "--resource-page-size", "2")
    t0 = time.monotonic()
    assert c.ok("tn_list_resources") == [], "a half-finished walk is not a listing"
    assert time.monotonic() - t0 < 5
    assert len(rpcs(sent, "resources/list")) == 3, "A, B, then A again: stopped there"
    errs = json.loads(c.statuses_text())["servers"]["fx"]["listErrors"]
    why = errs["resources/list"]
    assert "server `fx`" in why and 'the cursor "A" again' in why, errs
    # The prompts and templates walk the same loop: each fails on its own.
    assert c.ok("tn_list_prompts") == []
    assert "prompts/list" in json.loads(c.statuses_text())["servers"]["fx"]["listErrors"]


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_an_empty_cursor_is_a_cursor_in_2026_and_the_end_before(fx, transport):
    modern, sent = fx(transport, "modern", "--empty-cursor")
    assert len(modern.ok("tn_list_resources")) == 5 + 3, "both pages"
    assert [r["params"].get("cursor") for r in rpcs(sent, "resources/list")] == [None, ""]
    legacy, sent = fx(transport, "legacy", "--empty-cursor")
    assert len(legacy.ok("tn_list_resources")) == 4, "the first page only: \"\" ends a handshake-era walk"
    assert len(rpcs(sent, "resources/list")) == 1


def test_an_empty_cursor_forever_is_a_loop(fx):
    c, sent = fx("stdio", "modern", "--empty-cursor-loop")
    assert c.ok("tn_list_resources") == []
    assert len(rpcs(sent, "resources/list")) == 2
    why = json.loads(c.statuses_text())["servers"]["fx"]["listErrors"]["resources/list"]
    assert 'the cursor "" again' in why, why


def test_a_failed_walk_keeps_the_listing_held_before(fx, tmp_path):
    # A legacy server with listChanged: listed once, held until it says the list changed.
    c, sent = fx("stdio", "legacy")
    first = c.ok("tn_list_resources")
    assert c.ok("tn_list_resources") == first
    assert len(rpcs(sent, "resources/list")) == 1, "held until the server says it changed"
    ev = c.events()
    c.result("fx_add_resource")
    _, e = ev.wait(lambda e: e["type"] == "resources")
    assert e["added"] == ["fx://doc/new1"] and e["removed"] == [] and e["changed"] == [], e
    assert "templates" not in e, "the templates were never listed: nothing to compare"
    assert "fx://doc/new1" in [r["uri"] for r in c.ok("tn_list_resources")]


# ---------------------------------------------------------------- reads


@pytest.mark.parametrize("transport, era", CASES)
def test_reads_keep_every_content_as_sent(fx, transport, era):
    c, sent = fx(transport, era)
    assert c.ok("tn_read_resource", "fx", "fx://doc/3") == {
        "contents": [{"uri": "fx://doc/3", "mimeType": "text/plain", "text": "document 3"}]}
    st, text = c.out("tn_read_resource", "fx", "fx://multi")
    assert st == tnlib.TN_OK
    assert text == ('{"contents":[{"uri":"fx://multi","text":"part 1","_meta":{"fx/part":1}},'
                    '{"uri":"fx://multi/part2","mimeType":"image/png","blob":"iVBORw0KGgo="}]}'), text
    import base64
    (blob,) = c.ok("tn_read_resource", "fx", "fx://bin/1")["contents"]
    assert base64.b64decode(blob["blob"]) == bytes(range(256))
    st, msg = c.out("tn_read_resource", "fx", "fx://nowhere")
    assert st == tnlib.TN_ERR_NOT_FOUND, (st, msg)
    code = "-32602" if era == "modern" else "-32002"
    assert "server `fx`" in msg and "fx://nowhere" in msg and code in msg, msg
    if era == "modern" and transport == "http":
        (r,) = [r for r in rpcs(sent, "resources/read") if r["params"]["uri"] == "fx://multi"]
        assert r["mcpName"] == "fx://multi", r


def test_mcp_name_carries_a_uri_that_is_not_header_safe(fx):
    # Not visible ASCII: sent as the `=?base64?…?=` sentinel, which the fixture decodes before
    # it checks the header against the uri (a mismatch would be -32020) and logs it.
    c, sent = fx("http", "modern")
    uri = "fx://item/é ü"
    assert c.ok("tn_read_resource", "fx", uri)["contents"][0]["text"] == "item é ü"
    (r,) = [r for r in rpcs(sent, "resources/read") if r["params"]["uri"] == uri]
    assert r["mcpName"] == uri, r


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_a_result_over_max_result_bytes_is_refused_naming_the_limit(fx, era):
    c, _ = fx("stdio", era, maxResultBytes=100000)
    assert len(c.ok("tn_read_resource", "fx", "fx://big/50000")["contents"][0]["text"]) == 50000
    st, msg = c.out("tn_read_resource", "fx", "fx://big/200000")
    assert st == tnlib.TN_ERR_SERVER and "maxResultBytes (100000)" in msg and "fx://big/200000" in msg, msg
    assert c.ok("tn_read_resource", "fx", "fx://doc/1")["contents"], "the connection goes on"


@pytest.mark.parametrize("transport, era", CASES)
def test_a_read_times_out_and_is_cancelled_by_id(fx, transport, era, tmp_path):
    c, sent = fx(transport, era)
    call_id = tnlib.ctypes.c_uint64(7)
    st, msg = tnlib.call_out(tnlib.lib().tn_read_resource_ex, c.handle, b"fx", b"fx://slow/5000",
                             b'{"timeoutMs":300}', tnlib.byref(call_id))
    assert st == tnlib.TN_ERR_TIMEOUT and call_id.value == 0, st
    assert "timed out" in (tnlib.last_error() or "")
    # Cancelled from another thread while it waits.
    box = {}

    def read():
        cid = tnlib.ctypes.c_uint64(0)
        box["cid"] = cid
        box["r"] = tnlib.call_out(tnlib.lib().tn_read_resource_ex, c.handle, b"fx", b"fx://slow/8000", None,
                                  tnlib.byref(cid))
        box["err"] = tnlib.last_error()

    t = threading.Thread(target=read)
    t0 = time.monotonic()
    t.start()
    while "cid" not in box or box["cid"].value == 0:
        time.sleep(0.01)
        assert time.monotonic() - t0 < 5
    time.sleep(0.2)
    assert c.cancel(box["cid"].value)[0] == tnlib.TN_OK
    t.join(10)
    assert not t.is_alive() and box["r"][0] == tnlib.TN_ERR_CANCELLED, box
    assert time.monotonic() - t0 < 5, "promptly"
    assert "was cancelled" in box["err"], box
    if transport == "stdio":
        cancels = [r for r in sent.notes() if r["rpc"] == "notifications/cancelled"]
        assert cancels, "the server is told"


# ---------------------------------------------------------------- prompts and completions


@pytest.mark.parametrize("transport, era", CASES)
def test_every_prompt_content_block_is_kept_as_sent(fx, transport, era):
    c, sent = fx(transport, era)
    st, text = c.out("tn_get_prompt", "fx_blocks", None)
    assert st == tnlib.TN_OK, text
    got = json.loads(text)
    kinds = [m["content"]["type"] for m in got["messages"]]
    assert kinds == ["text", "image", "audio", "resource_link", "resource", "resource", "x-fixture"], kinds
    assert '{"role":"user","content":{"type":"x-fixture","foo":[1,2]}}' in text, "unknown blocks pass through"
    assert ('"content":{"type":"resource","resource":{"uri":"fx://doc/2","mimeType":"text/plain",'
            '"text":"document 2"},"annotations":{"priority":1}}') in text, text
    text_block = got["messages"][0]["content"]
    assert text_block["annotations"]["priority"] == 0.25 and text_block["_meta"] == {"fx/block": "text"}, text_block
    hello = c.ok("tn_get_prompt", "fx_greet", '{"name":"Ada","lang":"fr"}')
    assert hello == {"description": "Greets someone",
                     "messages": [{"role": "user", "content": {"type": "text", "text": "Bonjour, Ada !"}}]}, hello
    st, msg = c.out("tn_get_prompt", "fx_greet", "{}")
    assert st == tnlib.TN_ERR_SERVER and "Missing required argument: name" in msg, msg
    # Numbers and booleans go as their JSON text; objects are refused before anything is sent.
    assert "Hello, 42!" in json.dumps(c.ok("tn_get_prompt", "fx_greet", '{"name":42}'))
    st, msg = c.out("tn_get_prompt", "fx_greet", '{"name":{"x":1}}')
    assert st == tnlib.TN_ERR_INVALID_ARGUMENT and "`name`" in msg, msg
    if era == "modern" and transport == "http":
        got = rpcs(sent, "prompts/get")
        assert got and all(r["mcpName"] == r["params"]["name"] for r in got), got


@pytest.mark.parametrize("transport, era", CASES)
def test_completions(fx, transport, era):
    c, _ = fx(transport, era)

    def complete(ref, arg, value, **ctx):
        req = {"server": "fx", "ref": ref, "argument": {"name": arg, "value": value}}
        if ctx:
            req["context"] = {"arguments": ctx}
        st, text = c.out("tn_complete", json.dumps(req))
        assert st == tnlib.TN_OK, text
        return text

    prompt = {"type": "ref/prompt", "name": "code_review"}
    assert complete(prompt, "language", "c") == '{"values":["c","c++"]}'
    greet = {"type": "ref/prompt", "name": "greet"}
    assert json.loads(complete(greet, "name", "a", lang="fr"))["values"] == ["Amélie", "Antoine"]
    item = {"type": "ref/resource", "uri": "fx://item/{id}"}
    assert complete(item, "id", "1") == '{"values":["1","10","11"],"total":3,"hasMore":false}', "as sent"


def test_a_server_without_completions_completes_to_nothing(fx):
    c, sent = fx("stdio", "legacy", "--no-completions")
    req = {"server": "fx", "ref": {"type": "ref/prompt", "name": "code_review"},
           "argument": {"name": "language", "value": ""}}
    assert c.ok("tn_complete", json.dumps(req)) == {"values": []}
    assert rpcs(sent, "completion/complete") == [], "not declared: not asked"


def test_servers_that_declare_nothing_contribute_nothing(fx):
    c, sent = fx("stdio", "modern", "--no-resource-caps")
    assert c.ok("tn_list_resources") == [] and c.ok("tn_list_prompts") == []
    assert c.ok("tn_list_resource_templates") == []
    assert rpcs(sent, "resources/list") == [] and rpcs(sent, "prompts/list") == []
    st, msg = c.status_of("tn_subscribe_resource", "fx", "fx://doc/1")
    assert st == tnlib.TN_ERR_NOT_FOUND and "subscriptions" in msg, msg


# ---------------------------------------------------------------- MRTR on reads and prompts


@pytest.mark.parametrize("transport, era", CASES)
@pytest.mark.parametrize("mode", ["inline", "deferred"])
def test_a_read_and_a_prompt_that_ask_go_to_the_resolver(fx, transport, era, mode):
    asker = Asker('{"ok":true,"data":{"version":"3"}}', mode)
    c, sent = fx(transport, era, resolver=asker.resolver)
    assert c.ok("tn_read_resource", "fx", "fx://ask")["contents"][0]["text"] == "version 3"
    got = c.ok("tn_get_prompt", "fx_ask", None)
    assert got["messages"][0]["content"]["text"] == "version 3", got
    assert [r["prompt"] for r in asker.seen] == ["Which version?", "Which version?"], asker.seen
    if era == "modern":
        reads = rpcs(sent, "resources/read")
        assert len(reads) == 2 and reads[0]["id"] != reads[1]["id"], reads
        assert reads[1]["params"]["requestState"] == "read-1", reads[1]
        assert reads[1]["params"]["inputResponses"]["v"]["action"] == "accept", reads[1]
        caps = reads[0]["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
        assert "elicitation" in caps, caps


def test_a_suspended_question_of_a_read_is_answered_cancel(fx):
    asker = Asker(mode="suspend")
    c, sent = fx("stdio", "modern", resolver=asker.resolver)
    assert c.ok("tn_read_resource", "fx", "fx://ask")["contents"][0]["text"] == "cancelled"
    retry = rpcs(sent, "resources/read")[-1]
    assert retry["params"]["inputResponses"] == {"v": {"action": "cancel"}}, retry


def test_without_a_resolver_a_modern_read_that_asks_says_so(fx):
    c, _ = fx("stdio", "modern")
    st, msg = c.out("tn_read_resource", "fx", "fx://ask")
    assert st in (tnlib.TN_OK, tnlib.TN_ERR_SERVER), (st, msg)
    if st == tnlib.TN_ERR_SERVER:
        assert "no resolver is registered" in msg, msg


# ---------------------------------------------------------------- subscriptions and events


@pytest.mark.parametrize("transport, era", CASES)
def test_subscribe_update_unsubscribe(fx, transport, era):
    c, sent = fx(transport, era)
    ev = c.events()
    assert c.status_of("tn_subscribe_resource", "fx", "fx://doc/2") == (tnlib.TN_OK, "")
    assert c.status_of("tn_subscribe_resource", "fx", "fx://doc/3") == (tnlib.TN_OK, "")
    out = json.loads(c.result("fx_touch", '{"uri":"fx://doc/2"}'))["output"]
    # Over HTTP the replaced listen's stream is closed once the new one is acknowledged, which
    # the server may see a moment later: it may still send on both; the host is told once.
    assert out == "touched 1" or (transport, era, out) == ("http", "modern", "touched 2"), out
    _, e = ev.wait(lambda e: e["type"] == "resource_updated")
    assert e == {"type": "resource_updated", "server": "fx", "uri": "fx://doc/2"}, e
    time.sleep(0.3)
    assert [x for x in ev.items if x.get("uri") == "fx://doc/2"] == [e], "told once: %r" % ev.items
    assert c.status_of("tn_unsubscribe_resource", "fx", "fx://doc/2") == (tnlib.TN_OK, "")
    n = len(ev.items)
    out = json.loads(c.result("fx_touch", '{"uri":"fx://doc/2"}'))["output"]
    assert out == "touched 0" or (transport, era, out) == ("http", "modern", "touched 1"), out
    assert json.loads(c.result("fx_touch", '{"uri":"fx://doc/3"}'))["output"] == "touched 1"
    _, e = ev.wait(lambda e: e["type"] == "resource_updated", start=n)
    assert e["uri"] == "fx://doc/3" and not [x for x in ev.items[n:] if x.get("uri") == "fx://doc/2"], ev.items[n:]
    if era == "modern":
        listens = rpcs(sent, "subscriptions/listen")
        filters = [r["params"]["notifications"] for r in listens]
        assert filters[-1] == {"promptsListChanged": True, "resourcesListChanged": True,
                               "resourceSubscriptions": ["fx://doc/3"]}, filters
        assert rpcs(sent, "resources/subscribe") == []
        if transport == "stdio":
            want = {r["id"] for r in listens[:-1]}
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                cancelled = {r["params"]["requestId"] for r in sent.notes() if r["rpc"] == "notifications/cancelled"}
                if want <= cancelled:
                    break
                time.sleep(0.02)
            assert want <= cancelled, "every replaced listen was cancelled"
    else:
        assert [r["params"]["uri"] for r in rpcs(sent, "resources/subscribe")] == ["fx://doc/2", "fx://doc/3"]
        assert [r["params"]["uri"] for r in rpcs(sent, "resources/unsubscribe")] == ["fx://doc/2"]


@pytest.mark.parametrize("transport, era", CASES)
def test_prompt_list_changes_are_events_with_host_names(fx, transport, era):
    c, _ = fx(transport, era)
    ev = c.events()
    c.ok("tn_list_prompts")
    c.result("fx_toggle_prompt")
    _, e = ev.wait(lambda e: e["type"] == "prompts")
    assert e == {"type": "prompts", "server": "fx", "added": ["fx_extra"], "removed": [], "changed": []}, e
    n = len(ev.items)
    c.result("fx_change_prompt")
    _, e = ev.wait(lambda e: e["type"] == "prompts", start=n)
    assert e["changed"] == ["fx_greet"] and e["added"] == [], e
    assert "fx_extra" in [p["name"] for p in c.ok("tn_list_prompts")]
    assert c.ok("tn_get_prompt", "fx_extra", None)["messages"][0]["content"]["text"] == "extra prompt"


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_subscriptions_survive_a_restart(fx, tmp_path, era):
    c, sent = fx("stdio", era, "--hardening-tools", restart={"backoffMs": 50})
    ev = c.events()
    assert c.status_of("tn_subscribe_resource", "fx", "fx://doc/1") == (tnlib.TN_OK, "")
    c.call("fx_sleep_then_crash", '{"ms":0,"code":3}')  # the child exits; the library starts it again
    ev.wait(lambda e: e["type"] == "status" and e.get("status") == "connected", timeout=20)
    assert json.loads(c.result("fx_touch", '{"uri":"fx://doc/1"}'))["output"] == "touched 1"
    if era == "legacy":
        subs = [r["params"]["uri"] for r in rpcs(sent, "resources/subscribe")]
        assert subs == ["fx://doc/1", "fx://doc/1"], "subscribed again on the new child"
    else:
        filters = [r["params"]["notifications"].get("resourceSubscriptions") for r in rpcs(sent, "subscriptions/listen")]
        assert filters[-1] == ["fx://doc/1"], "the new child's listen at start holds it: %r" % filters
    _, e = ev.wait(lambda e: e["type"] == "resource_updated")
    assert e["uri"] == "fx://doc/1", e


# ---------------------------------------------------------------- caching by the spec


def test_a_2026_listing_is_held_for_its_ttl_and_evicted_by_a_change(fx):
    c, sent = fx("stdio", "modern", "--resource-ttl-ms", "60000")
    first = c.ok("tn_list_resources")
    assert c.ok("tn_list_resources") == first
    assert len(rpcs(sent, "resources/list")) == 1, "fresh for its ttlMs"
    ev = c.events()
    c.result("fx_add_resource")
    _, e = ev.wait(lambda e: e["type"] == "resources")
    assert e["added"] == ["fx://doc/new1"], e
    assert "fx://doc/new1" in [r["uri"] for r in c.ok("tn_list_resources")]
    assert len(rpcs(sent, "resources/list")) == 2, "the change evicted it; listed again once"


def test_a_2026_listing_without_a_ttl_is_not_held(fx):
    c, sent = fx("stdio", "modern")
    c.ok("tn_list_prompts")
    c.ok("tn_list_prompts")
    assert len(rpcs(sent, "prompts/list")) == 2, "ttlMs 0: listed every time"
    # Reads are never held: each is what the host asked for now.
    c.ok("tn_read_resource", "fx", "fx://doc/1")
    c.ok("tn_read_resource", "fx", "fx://doc/1")
    assert len([r for r in rpcs(sent, "resources/read") if r["params"]["uri"] == "fx://doc/1"]) == 2


def test_the_last_unsubscribe_ends_the_listen_without_opening_an_empty_one(fx):
    # Nothing else to listen for (no listChanged declared): the listen is cancelled, and no
    # listen asking for nothing is opened in its place.
    c, sent = fx("stdio", "modern", "--no-list-changed")
    assert rpcs(sent, "subscriptions/listen") == [], "nothing to listen for at connect"
    assert c.status_of("tn_subscribe_resource", "fx", "fx://doc/1") == (tnlib.TN_OK, "")
    (listen,) = rpcs(sent, "subscriptions/listen")
    assert listen["params"]["notifications"] == {"resourceSubscriptions": ["fx://doc/1"]}, listen
    assert c.status_of("tn_unsubscribe_resource", "fx", "fx://doc/1") == (tnlib.TN_OK, "")
    assert len(rpcs(sent, "subscriptions/listen")) == 1
    # The cancel is a notification: the server logs it once it has read it.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        cancelled = [r["params"]["requestId"] for r in sent.notes() if r["rpc"] == "notifications/cancelled"]
        if cancelled:
            break
        time.sleep(0.02)
    assert cancelled == [listen["id"]], cancelled
    assert json.loads(c.result("fx_touch", '{"uri":"fx://doc/1"}'))["output"] == "touched 0"


@pytest.mark.parametrize("transport, era", CASES)
def test_the_time_a_human_takes_does_not_count_against_a_read(fx, transport, era):
    # The server's timeout is 1 s; the host answers after 1.5 s: the read still completes (§4).
    def slow(request_json, responder):
        threading.Timer(1.5, lambda: tnlib.answer(responder, '{"ok":true,"data":{"version":"9"}}')).start()
        return tnlib.TN_DEFERRED

    resolver = tnlib.Resolver(slow)
    c, _ = fx(transport, era, resolver=resolver, timeout=1000)
    st, text = c.out("tn_read_resource", "fx", "fx://ask")
    assert st == tnlib.TN_OK and json.loads(text)["contents"][0]["text"] == "version 9", (st, text)
    st, text = c.out("tn_read_resource", "fx", "fx://slow/1500")
    assert st == tnlib.TN_ERR_TIMEOUT, "without a question the timeout holds: %s" % text


def test_a_renewed_http_session_is_subscribed_again(fx):
    # The handshake era over HTTP: the server forgets the session (a DELETE behind the client's
    # back); the next request meets a 404 and renews it, and the new session holds none of the
    # old one's subscriptions: the library subscribes it again.
    import urllib.request

    c, sent = fx("http", "legacy")
    ev = c.events()
    assert c.status_of("tn_subscribe_resource", "fx", "fx://doc/5") == (tnlib.TN_OK, "")
    session = next(r["session"] for r in sent() if r.get("session"))
    req = urllib.request.Request(c_url(c), method="DELETE", headers={"Mcp-Session-Id": session})
    urllib.request.urlopen(req).read()
    assert json.loads(c.result("fx_echo", '{"text":"after"}'))["output"] == "after"
    deadline = time.monotonic() + 10
    while len(rpcs(sent, "resources/subscribe")) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [r["params"]["uri"] for r in rpcs(sent, "resources/subscribe")] == ["fx://doc/5", "fx://doc/5"]
    assert json.loads(c.result("fx_touch", '{"uri":"fx://doc/5"}'))["output"] == "touched 1"


def c_url(c):
    return json.loads(c.config)["mcpServers"]["fx"]["url"]


def test_a_failed_servers_prompts_are_not_listed(fx, tmp_path):
    # A server that went away (no restart) lists no prompts: tn_get_prompt could not get them.
    c, _ = fx("stdio", "legacy", "--hardening-tools", restart=False)
    assert "fx_greet" in [p["name"] for p in c.ok("tn_list_prompts")]
    c.call("fx_sleep_then_crash", '{"ms":0,"code":3}')
    deadline = time.monotonic() + 10
    # Polled closely: the status reads `failed` as soon as the connection dies, before the
    # server's phase moves on, and the listing must agree with it from that moment.
    while json.loads(c.statuses_text())["servers"]["fx"]["status"] != "failed" and time.monotonic() < deadline:
        time.sleep(0.0005)
    assert c.ok("tn_list_prompts") == []
    assert c.ok("tn_list_resources") == []
    st, msg = c.out("tn_get_prompt", "fx_greet", '{"name":"x"}')
    assert st == tnlib.TN_ERR_NOT_FOUND, (st, msg)
