"""Resources, resource templates, subscriptions, prompts and completions through
toolnexus_c, against the fixture server's `--resources` mode in both eras (stdio; `--modern` for
MCP 2026-07-28): every method, the errors (unknown server or uri: NotFound; bad arguments:
InvalidArgument; a missing prompt argument: ServerError; Timeout), a subscription's
resource_updated event and none after unsubscribe, list change events, a blob's bytes, the MRTR
read, and a slow read cancelled through the asyncio form and by Ctrl-C on the main thread."""

import asyncio
import json
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import toolnexus_c as tn
from tn_support import FIXTURE

ERAS = ["legacy", "modern"]


def config(era, *extra):
    args = [FIXTURE, "--resources", *(["--modern"] if era == "modern" else []), *extra]
    return {"mcpServers": {"fx": {"command": args}}}


class Events:
    """on_event that keeps every event; wait() for one that matches."""

    def __init__(self):
        self.seen = []
        self.cond = threading.Condition()

    def __call__(self, event):
        with self.cond:
            self.seen.append(event)
            self.cond.notify_all()

    def of(self, type_):
        with self.cond:
            return [e for e in self.seen if e["type"] == type_]

    def wait(self, match, timeout=10.0):
        end = time.monotonic() + timeout
        with self.cond:
            while True:
                for e in self.seen:
                    if match(e):
                        return e
                left = end - time.monotonic()
                if left <= 0:
                    raise AssertionError("no matching event in %s" % self.seen)
                self.cond.wait(left)


@pytest.mark.parametrize("era", ERAS)
def test_listings_read_and_blob_bytes(era):
    with tn.connect(config(era)) as c:
        resources = c.resources()
        uris = [r["uri"] for r in resources]
        assert uris[:3] == ["fx://ask", "fx://bin/1", "fx://doc/1"] and "fx://multi" in uris, uris
        doc1 = next(r for r in resources if r["uri"] == "fx://doc/1")
        assert doc1["server"] == "fx" and doc1["title"] == "Document 1" and doc1["_meta"] == {"fx/note": "first"}
        assert all(r["server"] == "fx" for r in resources)
        assert [t["uriTemplate"] for t in c.resource_templates()] == ["fx://item/{id}", "fx://search{?q,lang}"]

        r = c.read_resource("fx", "fx://doc/1")
        assert r["contents"] == [{"uri": "fx://doc/1", "mimeType": "text/plain", "text": "document 1"}]
        assert tn.content_bytes(r["contents"][0]) == b"document 1"
        blob = c.read_resource("fx", "fx://bin/1", timeout_ms=5000)["contents"][0]
        assert blob["mimeType"] == "application/octet-stream"
        assert tn.content_bytes(blob) == bytes(range(256))
        multi = c.read_resource("fx", "fx://multi")["contents"]
        assert [m["uri"] for m in multi] == ["fx://multi", "fx://multi/part2"]
        assert tn.content_bytes(multi[1]).startswith(b"\x89PNG")
        with pytest.raises(ValueError):
            tn.content_bytes({"uri": "x"})

        # A template expanded, then read.
        t = tn.uri_template("fx://search{?q,lang}", {"q": "a b", "lang": "fr"})
        assert t == {"variables": ["q", "lang"], "uri": "fx://search?q=a%20b&lang=fr"}
        assert c.read_resource("fx", t["uri"])["contents"][0]["text"] == "q=a%20b&lang=fr"
        assert tn.uri_template("fx://item/{id}") == {"variables": ["id"]}
        item = tn.uri_template("fx://item/{id}", {"id": 7})["uri"]
        assert c.read_resource("fx", item)["contents"][0]["text"] == "item 7"


@pytest.mark.parametrize("era", ERAS)
def test_a_read_that_asks_goes_to_the_resolver(era):
    asked = []

    def resolver(request):
        asked.append(request["prompt"])
        return tn.accept({"version": "2.1"})

    with tn.connect(config(era), resolver) as c:
        assert c.read_resource("fx", "fx://ask")["contents"][0]["text"] == "version 2.1"
        assert c.get_prompt("fx_ask")["messages"][0]["content"]["text"] == "version 2.1"
        assert asked == ["Which version?", "Which version?"]


@pytest.mark.parametrize("era", ERAS)
def test_errors(era):
    with tn.connect(config(era)) as c:
        with pytest.raises(tn.NotFound):
            c.read_resource("nope", "fx://doc/1")
        with pytest.raises(tn.NotFound) as e:
            c.read_resource("fx", "fx://nothing")
        assert "fx://nothing" in str(e.value)
        with pytest.raises(tn.NotFound):
            c.get_prompt("fx_nope")
        with pytest.raises(tn.NotFound):
            c.subscribe("nope", "fx://doc/1")
        with pytest.raises(tn.NotFound):
            c.unsubscribe("fx", "fx://doc/9")  # never subscribed
        with pytest.raises(tn.NotFound):
            c.complete("nope", tn.prompt_ref("greet"), "name", "A")
        with pytest.raises(tn.ServerError) as e:
            c.get_prompt("fx_greet", {})  # name is required
        assert "name" in str(e.value)
        with pytest.raises(tn.InvalidArgument):
            c.get_prompt("fx_greet", "[1]")  # arguments that are not an object
        with pytest.raises(tn.InvalidArgument):
            c.complete_request({"server": "fx"})  # no ref, no argument
        with pytest.raises(tn.InvalidArgument):
            c.read_resource("fx", "fx://doc/1", timeout_ms=-1)
        with pytest.raises(TypeError):
            c.read_resource("fx", "fx://doc/1", timeout_ms="soon")  # type: ignore[arg-type]
        with pytest.raises(ValueError):
            c.read_resource("fx", "fx://doc\x001")
        with pytest.raises(tn.Timeout):
            c.read_resource("fx", "fx://slow/5000", timeout_ms=200)
        with pytest.raises(tn.Timeout):
            asyncio.run(c.read_resource_async("fx", "fx://slow/5000", timeout_ms=200))
    with pytest.raises(tn.InvalidArgument):
        tn.uri_template("fx://item/{id")
    assert tn.uri_template("fx://item/{id}", {"id": None})["uri"] == "fx://item/"  # null: undefined
    with pytest.raises(tn.InvalidArgument):
        tn.uri_template("fx://item/{id}", ["7"])  # type: ignore[arg-type]
    # A server without --resources: no resources, no prompts, no subscriptions.
    with tn.connect({"mcpServers": {"fx": {"command": [FIXTURE]}}}) as c:
        assert c.resources() == [] and c.prompts() == [] and c.resource_templates() == []
        with pytest.raises(tn.NotFound):
            c.subscribe("fx", "fx://doc/1")
    c.close()
    with pytest.raises(tn.Closed):
        c.resources()


@pytest.mark.parametrize("era", ERAS)
def test_prompts_get_and_complete(era):
    with tn.connect(config(era)) as c:
        prompts = {p["name"]: p for p in c.prompts()}
        assert list(prompts)[:4] == ["fx_ask", "fx_blocks", "fx_code_review", "fx_greet"], list(prompts)
        greet = prompts["fx_greet"]
        assert (greet["server"], greet["prompt"], greet["title"]) == ("fx", "greet", "Greeting")
        assert greet["arguments"][0] == {"name": "name", "description": "Who", "required": True}

        r = c.get_prompt("fx_greet", {"name": "Ada"})
        assert r["description"] == "Greets someone"
        assert r["messages"] == [{"role": "user", "content": {"type": "text", "text": "Hello, Ada!"}}]
        r = c.get_prompt("fx_greet", '{"name":"Ada","lang":"fr"}', timeout_ms=5000)
        assert r["messages"][0]["content"]["text"] == "Bonjour, Ada !"
        r = asyncio.run(c.get_prompt_async("fx_code_review", {"code": "x=1", "language": "python"}))
        assert r["messages"][0]["content"]["text"] == "Review this python code: x=1"
        blocks = [m["content"]["type"] for m in c.get_prompt("fx_blocks")["messages"]]
        assert blocks == ["text", "image", "audio", "resource_link", "resource", "resource", "x-fixture"]
        embedded = c.get_prompt("fx_blocks")["messages"][4]["content"]["resource"]
        assert tn.content_bytes(embedded) == b"document 2"

        assert c.complete("fx", tn.prompt_ref("code_review"), "language", "p") == {"values": ["python"]}
        assert c.complete("fx", tn.prompt_ref("greet"), "name", "a", {"lang": "fr"})["values"] == ["Amélie", "Antoine"]
        assert c.complete("fx", tn.prompt_ref("greet"), "name", "A")["values"] == ["Ada", "Alan"]
        item = c.complete("fx", tn.resource_ref("fx://item/{id}"), "id", "1")
        assert item == {"values": ["1", "10", "11"], "total": 3, "hasMore": False}
        assert c.complete_request(json.dumps({
            "server": "fx", "ref": {"type": "ref/prompt", "name": "nope"},
            "argument": {"name": "x", "value": ""}})) == {"values": []}


@pytest.mark.parametrize("era", ERAS)
def test_subscription_updates_and_none_after_unsubscribe(era):
    events = Events()
    with tn.connect(config(era), on_event=events) as c:
        c.subscribe("fx", "fx://doc/1")
        assert c.call("fx_touch", {"uri": "fx://doc/1"}).output == "touched 1"
        e = events.wait(lambda e: e["type"] == "resource_updated")
        assert e == {"type": "resource_updated", "server": "fx", "uri": "fx://doc/1"}
        c.unsubscribe("fx", "fx://doc/1")
        assert c.call("fx_touch", {"uri": "fx://doc/1"}).output == "touched 0"
        time.sleep(0.3)
        assert len(events.of("resource_updated")) == 1, events.seen
        with pytest.raises(tn.NotFound):
            c.unsubscribe("fx", "fx://doc/1")


@pytest.mark.parametrize("era", ERAS)
def test_list_changes_come_as_events_and_the_lists_follow(era):
    events = Events()
    with tn.connect(config(era), on_event=events) as c:
        assert "fx_extra" not in [p["name"] for p in c.prompts()]
        assert c.call("fx_toggle_prompt", {"on": True}).output.startswith("extra on")
        e = events.wait(lambda e: e["type"] == "prompts")
        assert (e["server"], e["added"], e["removed"], e["changed"]) == ("fx", ["fx_extra"], [], [])
        assert "fx_extra" in [p["name"] for p in c.prompts()]
        assert c.get_prompt("fx_extra")["messages"][0]["content"]["text"] == "extra prompt"

        c.call("fx_change_prompt")
        e = events.wait(lambda e: e["type"] == "prompts" and e["changed"])
        assert e["changed"] == ["fx_greet"]

        before = c.resources()
        out = c.call("fx_add_resource").output
        new = out.split()[1]
        e = events.wait(lambda e: e["type"] == "resources")
        assert e["server"] == "fx" and e["added"] == [new] and e["removed"] == [], e
        assert [r["uri"] for r in c.resources()] == sorted([r["uri"] for r in before] + [new])


def test_events_stream_carries_the_new_types():
    async def main(c):
        stream = c.events()
        c.subscribe("fx", "fx://doc/2")
        await asyncio.to_thread(c.call, "fx_touch", {"uri": "fx://doc/2"})
        async for event in stream:
            if event["type"] == "resource_updated":
                return event
        return None

    with tn.connect(config("legacy")) as c:
        assert asyncio.run(main(c)) == {"type": "resource_updated", "server": "fx", "uri": "fx://doc/2"}


def _no_request_thread_within(seconds):
    end = time.monotonic() + seconds
    while any(t.name == "toolnexus-request" for t in threading.enumerate()):
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True


@pytest.mark.parametrize("era", ERAS)
def test_cancelling_the_awaiting_task_cancels_a_slow_read(era):
    async def main(c):
        task = asyncio.ensure_future(c.read_resource_async("fx", "fx://slow/30000"))
        other = asyncio.ensure_future(c.get_prompt_async("fx_greet", {"name": "Ada"}))
        await asyncio.sleep(0.3)
        assert not task.done()
        t0 = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert (await other)["messages"][0]["content"]["text"] == "Hello, Ada!"
        return time.monotonic() - t0

    with tn.connect(config(era)) as c:
        assert asyncio.run(main(c)) < 1.0
        # The library ended the read (its thread is gone long before the 30 s).
        assert _no_request_thread_within(3.0)
        assert c.read_resource("fx", "fx://slow/10")["contents"][0]["text"] == "slept 10"


def test_a_cancel_before_the_read_started_still_cancels_it():
    async def main(c):
        task = asyncio.ensure_future(c.read_resource_async("fx", "fx://slow/30000"))
        await asyncio.sleep(0)  # the thread may not have reached the library yet
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    with tn.connect(config("legacy")) as c:
        asyncio.run(main(c))
        assert _no_request_thread_within(3.0)


def test_a_read_from_a_worker_thread_and_closing_ends_reads_in_flight():
    with tn.connect(config("legacy")) as c:
        outcome = []

        def read():
            try:
                outcome.append(c.read_resource("fx", "fx://slow/30000"))
            except tn.ToolnexusError as e:
                outcome.append(e)

        t = threading.Thread(target=read)
        t.start()
        time.sleep(0.3)
        c.close()
        t.join(10)
        assert not t.is_alive()
        assert isinstance(outcome[0], (tn.Closed, tn.ServerError, tn.Cancelled)), outcome


CHILD = textwrap.dedent("""
    import signal, sys, time
    import toolnexus_c as tn
    def own(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGINT, %s)
    c = tn.connect({"mcpServers": {"fx": {"command": [sys.argv[1], "--resources"]}}})
    print("ready", flush=True)
    t0 = time.monotonic()
    try:
        c.%s
        print("returned", flush=True)
    except KeyboardInterrupt:
        print("interrupted after %%.2f s" %% (time.monotonic() - t0), flush=True)
        print("then", c.read_resource("fx", "fx://doc/1")["contents"][0]["text"], flush=True)
        raise
""")


@pytest.mark.parametrize("handler,call", [
    # Python's own SIGINT handler: the read waits in the library, a watcher cancels it.
    ("signal.default_int_handler", 'read_resource("fx", "fx://slow/60000")'),
    ("signal.default_int_handler", 'get_prompt("fx_greet", {"name": "x"}) and c.read_resource("fx", "fx://slow/60000", timeout_ms=90000)'),
    # The host's own handler: the read runs on a worker thread while the main thread waits.
    ("own", 'read_resource("fx", "fx://slow/60000")'),
])
def test_ctrl_c_during_a_read_on_the_main_thread_cancels_it(handler, call):
    proc = subprocess.Popen([sys.executable, "-c", CHILD % (handler, call), FIXTURE], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd="/")
    try:
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=45)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    lines = out.splitlines()
    assert lines and lines[0].startswith("interrupted after"), (out, err)
    assert float(lines[0].split()[2]) < 1.5, lines[0]
    assert lines[1] == "then document 1", (out, err)
    assert "KeyboardInterrupt" in err.splitlines()[-1], err
