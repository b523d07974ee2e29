"""The stdio client end to end through the C ABI, via ctypes, against tests/fixture-server:
the behaviours tests/c/client.c checks (config, statuses, naming, lifecycle, calls, timeouts,
crashes, concurrency, the resolver inline and deferred, paused timers, elicitationTimeout,
re-entrancy, SEP-1034, disconnect), seen from a Python host.

Fixture server: $TN_FIXTURE, else <repo>/target/debug/tn-fixture-server (absolute: some tests
change a server's cwd). Library: see tnlib.py. Build both with `cargo build --workspace`.
"""

import json
import os
import re
import subprocess
import sys
import threading
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import tnlib  # noqa: E402
from tnlib import (  # noqa: E402
    TN_DEFERRED,
    TN_ERR_CLOSED,
    TN_ERR_CONFIG,
    TN_ERR_INVALID_ARGUMENT,
    TN_ERR_INVALID_JSON,
    TN_ERR_NOT_FOUND,
    TN_ERR_REENTRANT,
    TN_OK,
    TN_RESOLVED,
)

# How a legacy-only server's era is reached without a resolver (its `eraReason`).
PROBE_LEGACY = "the 2026-07-28 probe: the server answered with JSON-RPC error -32601: Method not found"

REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
FIXTURE = os.path.realpath(
    os.environ.get("TN_FIXTURE") or os.path.join(REPO, "target", "debug", "tn-fixture-server")
)

# The fixture's ask_form schema, byte for byte (serde_json with preserve_order).
FORM_SCHEMA = (
    '{"type":"object","properties":{"name":{"type":"string","description":"Your name"},'
    '"age":{"type":"integer","default":30},'
    '"color":{"type":"string","enum":["red","green"],"default":"green"},'
    '"subscribe":{"type":"boolean"}},"required":["name"]}'
)
REQUEST_ID = r'"id":"elc-[0-9a-z]+-([1-9][0-9]*)"'
FORM_REQUEST_RE = re.compile(
    "^{" + REQUEST_ID + ',"kind":"input","prompt":"Who are you\\?","data":{"schema":'
    + re.escape(FORM_SCHEMA) + "}}$"
)


# ---------------------------------------------------------------- helpers


@pytest.fixture(autouse=True)
def _fixture_built():
    if not os.access(FIXTURE, os.X_OK):
        pytest.fail("fixture server not found at %s (run `cargo build --workspace` or set TN_FIXTURE)" % FIXTURE)


def server(*args, **extra):
    """One fixture server entry: {"command":[FIXTURE, *args], **extra}."""
    entry = {"command": [FIXTURE] + [str(a) for a in args]}
    entry.update(extra)
    return entry


@pytest.fixture
def one(connect):
    """A client with one fixture server named "fx"."""

    def make(*args, resolver=None, **extra):
        return connect({"mcpServers": {"fx": server(*args, **extra)}}, resolver)

    return make


def tool_result(output, is_error=False, metadata=None):
    """The exact compact ToolResult text the library returns."""
    text = '{"output":%s,"isError":%s' % (json.dumps(output, ensure_ascii=False), "true" if is_error else "false")
    if metadata is not None:
        text += ',"metadata":' + json.dumps(metadata, ensure_ascii=False, separators=(",", ":"))
    return text + "}"


def output_of(text):
    return json.loads(text)["output"]


def pid_alive(pid):
    """True while the process exists and is not a zombie (as tests/c/check.h)."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            stat = f.read()
    except OSError:
        return False
    state = stat[stat.rindex(b")") + 2:stat.rindex(b")") + 3]
    return state not in (b"Z", b"X")


class Script:
    """A scriptable resolver (the C test's resolver_ctx). Modes:
    answer, slow (sleep `delay` then answer), timer (TN_DEFERRED, a threading.Timer answers
    twice after `delay`), answer_then_defer, fail (returns 7), no_answer, raise, keep
    (TN_DEFERRED, never answered), reenter (tn_call_tool on `reenter_tool` first),
    invalid_then_valid."""

    def __init__(self, mode="answer", answer=None, delay=0.0):
        self.mode = mode
        self.answer = answer
        self.delay = delay
        self.requests = []
        self.first = None  # status of the (first) answer
        self.late = None  # status of the second / invalid answer
        self.invalid = []  # (status, message) of the invalid answers
        self.kept = None
        self.client = None
        self.reenter_tool = None
        self.reenter = None  # (status, text) of the inner call
        self.called = threading.Event()
        self.answered = threading.Event()
        self.resolver = tnlib.Resolver(self._resolve)

    def set(self, mode, answer=None, delay=None):
        self.mode = mode
        if answer is not None:
            self.answer = answer
        if delay is not None:
            self.delay = delay
        self.first = self.late = None
        self.invalid = []
        self.called.clear()
        self.answered.clear()

    def _answer_later(self, responder):
        self.first = tnlib.answer(responder, self.answer)
        self.late = tnlib.answer(responder, self.answer)  # a second answer is refused
        self.answered.set()

    def _resolve(self, request_json, responder):
        self.requests.append(request_json.decode("utf-8"))
        self.called.set()
        mode = self.mode
        if mode == "answer":
            self.first = tnlib.answer(responder, self.answer)
            self.answered.set()
            return TN_RESOLVED
        if mode == "slow":
            time.sleep(self.delay)
            self.first = tnlib.answer(responder, self.answer)
            self.answered.set()
            return TN_RESOLVED
        if mode == "timer":
            t = threading.Timer(self.delay, self._answer_later, (responder,))
            t.daemon = True
            t.start()
            return TN_DEFERRED
        if mode == "answer_then_defer":
            self.first = tnlib.answer(responder, self.answer)
            self.answered.set()
            return TN_DEFERRED
        if mode == "fail":
            return 7
        if mode == "no_answer":
            return TN_RESOLVED
        if mode == "raise":
            raise RuntimeError("resolver blew up")
        if mode == "keep":
            self.kept = responder
            return TN_DEFERRED
        if mode == "reenter":
            status, out = tnlib.call_out(tnlib.lib().tn_call_tool, self.client.handle, self.reenter_tool,
                                         '{"text":"inner"}')
            self.reenter = (status, out.decode("utf-8") if status == TN_OK else tnlib.last_error())
            self.first = tnlib.answer(responder, self.answer)
            self.answered.set()
            return TN_RESOLVED
        if mode == "invalid_then_valid":
            for bad in ("not json", '{"ok":"yes"}', '{"ok":true,"data":[1]}'):
                self.invalid.append((tnlib.answer(responder, bad), tnlib.last_error()))
            self.first = tnlib.answer(responder, self.answer)
            self.answered.set()
            return TN_RESOLVED
        raise AssertionError("unknown mode %r" % mode)


def in_thread(fn, *args):
    """Runs fn(*args) on a daemon thread; returns (thread, box) with box[0] = its result."""
    box = []

    def run():
        box.append(fn(*args))

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, box


# ---------------------------------------------------------------- connecting


def test_statuses_order_determinism_and_listing(connect):
    cfg = json.dumps({"mcpServers": {
        "b": server(), "off": {"command": ["x"], "disabled": True},
        "a": server(), "broken": {"command": "/nonexistent/prog"},
        "en": {"command": ["x"], "enabled": False},
    }})
    c = connect(cfg)
    st = c.statuses_text()
    assert st == (
        '{"servers":{'
        '"a":{"status":"connected","era":"legacy","protocolVersion":"2025-11-25","eraReason":"the 2026-07-28 probe: the server answered with JSON-RPC error -32601: Method not found","tools":29},'
        '"b":{"status":"connected","era":"legacy","protocolVersion":"2025-11-25","eraReason":"the 2026-07-28 probe: the server answered with JSON-RPC error -32601: Method not found","tools":29},'
        '"broken":{"status":"failed","error":"server `broken` failed during `connect`: '
        'cannot start `/nonexistent/prog`: No such file or directory (os error 2)"},'
        '"en":{"status":"disabled"},'
        '"off":{"status":"disabled"}}}'
    ), st

    t = c.tools_text()
    tools = json.loads(t)
    names = [x["name"] for x in tools]
    assert names == sorted(names) and len(names) == 58 and len(set(names)) == 58, names
    assert names[0] == "a_add" and names[-1] == "b_unknown_request", names
    assert ('{"name":"a_dots_and_spaces","description":"A tool with an awkward name","inputSchema":'
            '{"type":"object","properties":{}},"source":"mcp","server":"a","remoteName":"dots.and spaces"}') in t
    assert ('{"name":"a_echo","description":"Echo the text back","inputSchema":{"type":"object","properties":'
            '{"text":{"type":"string"}},"required":["text"]},"source":"mcp","server":"a","remoteName":"echo"}') in t
    assert ('{"name":"a_annotated","description":"A tool with every optional listing field",'
            '"inputSchema":{"type":"object","properties":{}},"source":"mcp","server":"a","remoteName":"annotated",') in t
    ann = next(x for x in tools if x["name"] == "a_annotated")
    assert ann["title"] == "Annotated Tool", ann
    assert ann["annotations"] == {"readOnlyHint": True}, ann
    assert ann["outputSchema"] == {"type": "object", "properties": {"z": {"type": "number"}}}, ann
    assert ann["icons"] == [{"src": "https://example.test/i.png"}], ann
    assert ann["_meta"] == {"k": "v"}, ann
    assert '"outputSchema":{"type":"object","properties":{"z":{"type":"number"}}}' in t

    # the same config again: byte-identical output
    c2 = connect(cfg)
    assert c2.tools_text() == t
    assert c2.statuses_text() == st


def test_missing_program_fails_during_connect(connect):
    c = connect({"mcpServers": {"ok": server(), "gone": {"command": ["/nonexistent/prog", "-x"]}}})
    servers = json.loads(c.statuses_text())["servers"]
    assert servers["gone"] == {
        "status": "failed",
        "error": "server `gone` failed during `connect`: cannot start `/nonexistent/prog`: "
                 "No such file or directory (os error 2)",
    }, servers
    assert servers["ok"]["status"] == "connected", servers


@pytest.mark.valgrind
def test_config_errors_name_the_key(connect):
    cfg = {"mcpServers": {
        "ok": server(), "n": 5, "t": {"command": ["x"], "timeout": -3}, "ts": {"command": ["x"], "timeout": "100"},
        "c": {"command": [1, 2]}, "none": {}, "e": {"command": ["x"], "env": {"K": 1}},
        "tl": {"command": ["x"], "tools": {"a": "yes"}}, "ty": {"type": "carrier-pigeon"},
        "et": {"command": ["x"], "elicitationTimeout": 0}, "mm": {"command": ["x"], "maxMessageBytes": 0},
        "cw": {"command": ["x"], "cwd": 3}, "em": {"command": [""]},
        "ar": {"command": "x", "args": [1]},
        # the Claude-desktop form: "command": program, "args": [...]
        "cd": {"command": FIXTURE, "args": ["--name", "cd"]},
    }}
    c = connect(cfg)
    servers = json.loads(c.statuses_text())["servers"]
    assert servers["ok"]["status"] == "connected", servers
    assert servers["cd"]["status"] == "connected", servers
    want = {
        "n": "server entry must be a JSON object, got a number",
        "t": "`timeout` must be a positive number of milliseconds, got -3",
        "ts": "`timeout` must be a positive number of milliseconds, got \"100\"",
        "c": "`command` must be an array of strings",
        "none": "neither `command` (local) nor `url` (remote) is set",
        "e": "`env.K` must be a string, got a number",
        "tl": "`tools.a` must be a boolean, got a string",
        "ty": "`type` must be \"local\" or \"remote\", got \"carrier-pigeon\"",
        "et": "`elicitationTimeout` must be a positive number of milliseconds, got 0",
        "mm": "`maxMessageBytes` must be a positive integer, got 0",
        "cw": "`cwd` must be a string, got a number",
        "em": "`command` must name a program",
        "ar": "`args` must be an array of strings",
    }
    for name, why in want.items():
        assert servers[name] == {"status": "failed",
                                 "error": "server `%s` failed during `config`: %s" % (name, why)}, (name, servers[name])

    # the other spellings of the server map, and a bare map minus the reserved keys
    for key in ("servers", "mcp"):
        c = connect({key: {"s": server()}})
        assert json.loads(c.statuses_text())["servers"]["s"]["status"] == "connected", key
    c = connect({"agents": {}, "builtins": [], "a2a": {}, "mcpServer": {}, "bare": server()})
    st = c.statuses_text()
    assert st == ('{"servers":{"bare":{"status":"connected","era":"legacy","protocolVersion":"2025-11-25",'
                  '"eraReason":"%s","tools":29}}}' % PROBE_LEGACY), st


@pytest.mark.valgrind
@pytest.mark.parametrize("config,status,message", [
    (b"not json", TN_ERR_INVALID_JSON, "config_json is not JSON: expected ident at line 1 column 2"),
    (b"", TN_ERR_INVALID_JSON, "config_json is not JSON: EOF while parsing a value at line 1 column 0"),
    (b'{"mcpServers":{}', TN_ERR_INVALID_JSON, "config_json is not JSON"),
    (b"[1]", TN_ERR_CONFIG, "the config must be a JSON object, got an array"),
    (b'"x"', TN_ERR_CONFIG, "the config must be a JSON object, got a string"),
    (b'{"mcpServers":[1]}', TN_ERR_CONFIG, "the server map `mcpServers` must be a JSON object, got an array"),
    (b'{"mcpServers":5}', TN_ERR_CONFIG, "the server map `mcpServers` must be a JSON object, got a number"),
    (None, TN_ERR_INVALID_ARGUMENT, "`config_json` is NULL"),
    (b"\xff{}", TN_ERR_INVALID_ARGUMENT, "`config_json` is not valid UTF-8 (bad byte at offset 0)"),
])
def test_unusable_configs(config, status, message):
    got, handle, msg = tnlib.connect_raw(config)
    assert (got, handle) == (status, None), (got, msg)
    assert msg is not None and msg.startswith(message), msg


def test_empty_server_map_connects(connect):
    assert connect("{}").statuses_text() == '{"servers":{}}'
    assert connect('{"mcpServers":{}}').tools_text() == "[]"


@pytest.mark.valgrind
def test_collisions_first_server_wins(connect):
    c = connect({"mcpServers": {"a_b": server(), "a.b": server()}})
    t, st = c.tools_text(), c.statuses_text()
    assert '{"name":"a_b_echo","description":"Echo the text back","inputSchema"' in t, t[:300]
    tools = json.loads(t)
    assert {x["server"] for x in tools} == {"a.b"}, "a.b (U+002E) sorts first and wins"
    assert len(tools) == 29
    servers = json.loads(st)["servers"]
    assert list(servers) == ["a.b", "a_b"], st
    assert servers["a_b"]["status"] == "connected" and servers["a_b"]["tools"] == 0, st
    warnings = servers["a_b"]["warnings"]
    assert len(warnings) == 29, warnings
    assert "tool `echo` is not listed: its name `a_b_echo` collides with tool `echo` of server `a.b`" in warnings
    assert ("tool `dots.and spaces` is not listed: its name `a_b_dots_and_spaces` collides with tool "
            "`dots.and spaces` of server `a.b`") in warnings
    assert "warnings" not in servers["a.b"], st


def test_sanitized_server_names(connect):
    # every code point outside [a-zA-Z0-9_-] is one `_` (an emoji is one, not two)
    c = connect({"mcpServers": {"ü😀 x-1": server(tools={"echo": True, "dots.and spaces": True})}})
    tools = json.loads(c.tools_text())
    assert [(t["name"], t["server"], t["remoteName"]) for t in tools] == [
        ("___x-1_dots_and_spaces", "ü😀 x-1", "dots.and spaces"), ("___x-1_echo", "ü😀 x-1", "echo")], tools
    assert c.result("___x-1_echo", '{"text":"via a sanitized name"}') == tool_result("via a sanitized name")
    assert list(json.loads(c.statuses_text())["servers"]) == ["ü😀 x-1"]


@pytest.mark.valgrind
def test_allowlist(one):
    names = lambda c: [x["name"] for x in json.loads(c.tools_text())]  # noqa: E731
    c = one(tools={"echo": True, "add": False, "no-such-tool": True})
    assert names(c) == ["fx_echo"]
    c = one(tools={"echo": False, "no-such-tool": False})
    n = names(c)
    assert "fx_echo" not in n and "fx_add" in n and "fx_image" in n and len(n) == 28, n
    c = one(tools={})
    n = names(c)
    assert "fx_echo" in n and "fx_add" in n and len(n) == 29, n
    status, msg = c.call("fx_nope")
    assert (status, msg) == (TN_ERR_NOT_FOUND, "no tool named `fx_nope`")
    # a tool left out by the allowlist cannot be called either
    c = one(tools={"echo": True})
    assert c.call("fx_add", '{"a":1,"b":2}') == (TN_ERR_NOT_FOUND, "no tool named `fx_add`")


def test_initialize_params(one):
    c = one()
    assert c.result("fx_client_info") == tool_result(
        '{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"toolnexus","version":"0.1.0"}}')
    s = Script("answer", '{"ok":true}')
    c = one(resolver=s.resolver)
    assert c.result("fx_client_info") == tool_result(
        '{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{},"url":{}}},'
        '"clientInfo":{"name":"toolnexus","version":"0.1.0"}}')
    assert tnlib.version() == "0.1.0"


def test_protocol_versions(one):
    for v in ("2025-06-18", "2025-03-26", "2024-11-05", "2025-11-25"):
        c = one("--protocol", v)
        st = c.statuses_text()
        assert st == ('{"servers":{"fx":{"status":"connected","era":"legacy","protocolVersion":"%s",'
                      '"eraReason":"%s","tools":29}}}' % (v, PROBE_LEGACY)), st
        c.disconnect()
    c = one("--protocol", "2099-01-01")
    assert json.loads(c.statuses_text())["servers"]["fx"] == {
        "status": "failed",
        "error": "server `fx` failed during `initialize`: the server answered protocolVersion \"2099-01-01\", "
                 "which this client does not speak (it accepts 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05)",
    }
    assert c.tools_text() == "[]"


def test_pagination(one):
    c = one("--extra-tools", 120, "--page-size", 25)
    tools = json.loads(c.tools_text())
    names = [x["name"] for x in tools]
    assert len(tools) == 29 + 120 and len(set(names)) == len(names), len(tools)
    assert "fx_t0000" in names and "fx_t0119" in names
    t5 = next(x for x in tools if x["name"] == "fx_t0057")
    assert t5["description"] == "extra tool 57" and t5["remoteName"] == "t0057", t5
    assert c.result("fx_t0119") == tool_result("t0119 ok")
    assert json.loads(c.statuses_text())["servers"]["fx"]["tools"] == 149
    c.disconnect()
    t0 = time.monotonic()
    c = one("--repeat-cursor")
    took = time.monotonic() - t0
    fx = json.loads(c.statuses_text())["servers"]["fx"]
    assert fx["status"] == "connected" and fx["tools"] == 29, fx
    names = [x["name"] for x in json.loads(c.tools_text())]
    assert len(names) == 29 and len(set(names)) == 29, names
    assert took < 5, "a repeated cursor stops the loop promptly: %.2fs" % took


def test_startup_failures(one):
    c = one("--exit-on-init", 7)
    assert json.loads(c.statuses_text())["servers"]["fx"] == {
        "status": "failed",
        "error": "server `fx` failed during `initialize`: the server process exited with status 7; "
                 "stderr: fixture: refusing to initialize",
    }
    t0 = time.monotonic()
    c = one("--silent-tool-list", timeout=300)
    took = time.monotonic() - t0
    assert json.loads(c.statuses_text())["servers"]["fx"] == {
        "status": "failed", "error": "server `fx` failed during `tools/list`: no answer within 300 ms"}
    assert 0.28 <= took < 3, "bounded by the timeout: %.2fs" % took
    c = one("--no-tools-list")
    assert json.loads(c.statuses_text())["servers"]["fx"] == {
        "status": "failed",
        "error": "server `fx` failed during `tools/list`: the server answered with JSON-RPC error -32603: "
                 "tools/list exploded",
    }
    t0 = time.monotonic()
    c = one("--init-delay-ms", 3000, timeout=200)
    took = time.monotonic() - t0
    assert json.loads(c.statuses_text())["servers"]["fx"] == {
        "status": "failed", "error": "server `fx` failed during `initialize`: no answer within 200 ms"}
    # tn_connect also includes the bounded shutdown of the failed child: it sleeps through
    # stdin EOF, so 2 s later it gets SIGTERM (the C test allows 2.5 s; this leaves room for load)
    assert took < 3.5, "initialize bounded: %.2fs" % took
    # a failed server has no tools; calling one of its names says why (§3), still NOT_FOUND
    assert c.tools_text() == "[]"
    assert c.call("fx_echo", '{"text":"x"}') == (
        TN_ERR_NOT_FOUND,
        "no tool named `fx_echo`: server `fx` failed during `initialize`: no answer within 200 ms")


def test_tools_of_servers_that_did_not_start(connect):
    """NOT_FOUND for a name whose prefix is a failed or disabled server's (sanitize(server) +
    "_") names that server and says it failed (its failure text) or is disabled."""
    c = connect({"mcpServers": {
        "fx": server(),
        "fx_b": server("--exit-on-init", 5),
        "off": server(disabled=True),
        "a.b": server(enabled=False),
        "a": server("--exit-on-init", 6),
        "bad": server(timeout="soon"),
    }})
    failed_b = ("server `fx_b` failed during `initialize`: the server process exited with status 5; "
                "stderr: fixture: refusing to initialize")
    assert json.loads(c.statuses_text())["servers"]["fx_b"]["error"] == failed_b
    assert c.call("fx_b_echo", '{"text":"x"}') == (
        TN_ERR_NOT_FOUND, "no tool named `fx_b_echo`: " + failed_b)
    assert c.call("off_echo") == (TN_ERR_NOT_FOUND, "no tool named `off_echo`: server `off` is disabled")
    # the longest matching prefix wins: `a_b_x` is `a.b`'s (sanitized `a_b`), `a_x` is `a`'s
    assert c.call("a_b_x") == (TN_ERR_NOT_FOUND, "no tool named `a_b_x`: server `a.b` is disabled")
    status, msg = c.call("a_x")
    assert status == TN_ERR_NOT_FOUND
    assert msg.startswith("no tool named `a_x`: server `a` failed during `initialize`: "
                          "the server process exited with status 6"), msg
    status, msg = c.call("bad_t")
    assert status == TN_ERR_NOT_FOUND
    assert msg.startswith("no tool named `bad_t`: server `bad` failed during `config`: "), msg
    # a connected server's unknown name, and a name matching no server, stay bare
    assert c.call("fx_nope") == (TN_ERR_NOT_FOUND, "no tool named `fx_nope`")
    assert c.call("offline") == (TN_ERR_NOT_FOUND, "no tool named `offline`")
    assert c.call("fx_echo", '{"text":"ok"}') == (TN_OK, tool_result("ok"))


def test_servers_start_in_parallel(connect):
    s = server("--init-delay-ms", 600)
    t0 = time.monotonic()
    c = connect({"mcpServers": {"a": s, "b": s, "c": s, "d": s}})
    took = time.monotonic() - t0
    assert took < 1.8, "4 servers x 600 ms started in parallel: %.2fs" % took
    servers = json.loads(c.statuses_text())["servers"]
    assert list(servers) == ["a", "b", "c", "d"]
    assert all(v["status"] == "connected" for v in servers.values()), servers


# ---------------------------------------------------------------- calls


@pytest.mark.valgrind
def test_results_are_shaped(one):
    c = one(env={"TN_FX_VAR": "from-config"}, cwd="/tmp")
    raw = json.dumps({"text": 'héllo 😀 "q"\n'}, ensure_ascii=False)
    r = c.result("fx_echo", raw)
    assert r == '{"output":"héllo 😀 \\"q\\"\\n","isError":false}', r
    assert r.encode("utf-8") == b'{"output":"h\xc3\xa9llo \xf0\x9f\x98\x80 \\"q\\"\\n","isError":false}'
    # escaped input comes back as raw UTF-8
    r = c.result("fx_echo", '{"text":"\\u00e9\\ud83d\\ude00"}')
    assert r == '{"output":"é😀","isError":false}', r

    status, out = tnlib.call_out(tnlib.lib().tn_call_tool, c.handle, "fx_structured", None)
    assert status == TN_OK
    assert out == (b'{"output":"{\\"zeta\\":1.50,\\"alpha\\":\\"\xc3\xa9\xf0\x9f\x98\x80\\",'
                   b'\\"big\\":123456789012345678901234567890,\\"nested\\":{\\"b\\":[true,null],\\"a\\":1e+2}}",'
                   b'"isError":false}'), out

    assert c.result("fx_fail") == '{"output":"first problem\\n\\nsecond problem","isError":true}'
    assert c.result("fx_image") == (
        '{"output":"image (image/png, 8 bytes)","isError":false,"metadata":{"parts":[{"type":"image",'
        '"data":"iVBORw0KGgo=","mimeType":"image/png"}]}}')
    r = c.result("fx_mixed")
    assert r.startswith('{"output":"see attached","isError":false,"metadata":{"parts":[{"type":"image"'), r
    assert r.endswith('{"type":"resource_link","uri":"file:///tmp/x.txt","name":"x.txt"}]}}'), r
    parts = json.loads(r)["metadata"]["parts"]
    assert [p["type"] for p in parts] == ["image", "resource_link"], parts

    assert c.result("fx_env", '{"name":"TN_FX_VAR"}') == tool_result("from-config")
    assert c.result("fx_env", '{"name":"PATH"}') == tool_result(os.environ["PATH"]), "environment inherited"
    assert c.result("fx_cwd") == tool_result("/tmp")
    assert c.result("fx_add", ' {"a": 2, "b": 40} ') == tool_result("42")
    assert c.result("fx_add", '{"a": 1.5, "b": 2}') == tool_result("3.5")
    assert c.result("fx_dots_and_spaces") == tool_result("weird ok")
    assert c.result("fx_notify_then_echo", '{"text":"after a notification"}') == tool_result("after a notification")

    # bad arguments are refused before anything is sent
    assert c.call("fx_echo", "not json") == (TN_ERR_INVALID_JSON, "args_json is not JSON: expected ident at line 1 column 2")
    assert c.call("fx_echo", "[1]") == (TN_ERR_INVALID_ARGUMENT, "args_json must be a JSON object, got an array")
    # the tool's own argument error is an isError result
    r = json.loads(c.result("fx_echo", "{}"))
    assert r["isError"] is True, r


def test_timeout_cancels_and_server_lives_on(one):
    c = one(timeout=300)
    t0 = time.monotonic()
    r = c.result("fx_slow", '{"ms":3000}')
    took = time.monotonic() - t0
    assert r == tool_result("server `fx`: tools/call `slow` timed out: no answer within 300 ms", True), r
    assert 0.28 <= took < 1.5, "timed out after %.2fs" % took
    # the era probe is request 1, initialize 2, tools/list 3, the slow call 4
    assert c.result("fx_cancelled_ids") == tool_result("[4]"), "notifications/cancelled recorded"
    assert c.result("fx_echo", '{"text":"still here"}') == tool_result("still here")
    assert json.loads(c.statuses_text())["servers"]["fx"]["status"] == "connected"


def test_crash_fails_calls_at_once(connect):
    # "restart": False: a dead server stays dead (restarts: tests/c/live.c, test_live.py).
    c = connect({"mcpServers": {"fx": server(restart=False), "other": server()}})
    t0 = time.monotonic()
    r = c.result("fx_crash", '{"code":5}')
    took = time.monotonic() - t0
    assert r == tool_result("server `fx`: tools/call `crash` failed: the server process exited with status 5; "
                            "stderr: fixture: crashing with 5", True), r
    assert took < 1.5, "at once: %.2fs" % took
    r = c.result("fx_echo", '{"text":"x"}')
    assert r == tool_result("server `fx`: tools/call `echo` failed: the server process exited with status 5; "
                            "stderr: fixture: crashing with 5", True), r
    assert c.result("other_echo", '{"text":"unaffected"}') == tool_result("unaffected")
    servers = json.loads(c.statuses_text())["servers"]
    assert servers["fx"]["status"] == "failed", servers
    assert servers["fx"]["error"] == ("server `fx` failed after connecting: the server process exited with "
                                      "status 5; stderr: fixture: crashing with 5"), servers
    assert servers["other"]["status"] == "connected", servers


def test_crash_with_20_calls_in_flight(one):
    c = one()
    jobs = [in_thread(c.call, "fx_slow", '{"ms":20000}') for _ in range(20)]
    time.sleep(0.3)
    t0 = time.monotonic()
    r = c.result("fx_sleep_then_crash", '{"ms":100,"code":9}')
    for t, _ in jobs:
        t.join(5)
    took = time.monotonic() - t0
    assert took < 2, "all 20 failed at once (%.2fs)" % took
    want = ("server `fx`: tools/call `slow` failed: the server process exited with status 9; "
            "stderr: fixture: crashing with 9")
    for i, (t, box) in enumerate(jobs):
        assert not t.is_alive() and box, "call %d still running" % i
        assert box[0] == (TN_OK, tool_result(want, True)), (i, box[0])
    assert r == tool_result(want.replace("`slow`", "`sleep_then_crash`"), True), r


def test_8_python_threads_calling_at_once(connect):
    s = server()
    c = connect({"mcpServers": {"s0": s, "s1": s, "s2": s, "s3": s}})
    barrier = threading.Barrier(8)
    wrong = []

    def work(thread):
        barrier.wait()
        for i in range(150):
            text = "t%d-c%d-é" % (thread, i)
            got = c.call("s%d_echo" % ((thread + i) % 4), json.dumps({"text": text}))
            if got != (TN_OK, tool_result(text)):
                wrong.append((thread, i, got))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads)
    assert wrong == [], "%d of 1200 calls got a wrong answer, e.g. %r" % (len(wrong), wrong[:3])


def test_chatty_stderr_never_blocks(one):
    t0 = time.monotonic()
    c = one("--stderr-flood-mb", 16, timeout=10000)
    for _ in range(8):
        assert c.result("fx_noisy", '{"kb":1024}') == tool_result("noisy done")
    took = time.monotonic() - t0
    assert took < 8, "24 MiB of stderr drained while calling: %.2fs" % took
    assert c.result("fx_stderr_lines", '{"n":3}') == tool_result("ok")
    r = c.result("fx_crash", '{"code":4}')
    out = output_of(r)
    assert out.startswith("server `fx`: tools/call `crash` failed: the server process exited with status 4; stderr: "), out
    # the flood thread may still be writing: only the crash line is sure to be in the tail
    tail = out.split("; stderr: ", 1)[1]
    assert "fixture: crashing with 4" in tail.split(" | "), tail[-300:]
    assert len(tail.split(" | ")) <= 8, "at most the last 8 lines: %r" % tail[-300:]
    assert len(r.encode()) < 2600, "tail is bounded (%d bytes)" % len(r.encode())


def test_stderr_tail_is_the_last_lines(one):
    c = one()
    assert c.result("fx_stderr_lines", '{"n":60}') == tool_result("ok")
    r = c.result("fx_crash", '{"code":4}')
    tail = " | ".join(["stderr line %d" % i for i in range(54, 61)] + ["fixture: crashing with 4"])
    assert r == tool_result("server `fx`: tools/call `crash` failed: the server process exited with status 4; "
                            "stderr: " + tail, True), r


def test_stderr_is_drained_in_a_child_forked_after_a_connect(one):
    """Stderr is drained by one process-wide thread; a child forked from a host that has it
    (the thread does not survive fork) must drain its own servers' stderr all the same."""
    parent = one()
    assert parent.result("fx_echo", '{"text":"before"}') == tool_result("before")
    pid = os.fork()
    if pid == 0:
        ok = False
        try:
            c = tnlib.Client({"mcpServers": {"fx": server("--stderr-flood-mb", 4, timeout=10000)}})
            ok = all(c.result("fx_noisy", '{"kb":1024}') == tool_result("noisy done") for _ in range(4))
            r = c.result("fx_crash", '{"code":4}')
            ok = ok and "fixture: crashing with 4" in output_of(r).split("; stderr: ", 1)[-1].split(" | ")
            c.disconnect()
        finally:
            os._exit(0 if ok else 1)
    deadline = time.monotonic() + 30
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            raise AssertionError("the forked child's calls did not complete: its stderr was not drained")
        time.sleep(0.02)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    assert parent.result("fx_stderr_lines", '{"n":3}') == tool_result("ok")
    r = parent.result("fx_crash", '{"code":4}')
    assert "fixture: crashing with 4" in output_of(r), r


def test_junk_lines_are_skipped_and_counted(one):
    c = one()
    assert c.result("fx_junk_then_echo", '{"text":"after junk"}') == tool_result("after junk")
    assert c.result("fx_unknown_id_then_echo", '{"text":"after unknown ids"}') == tool_result("after unknown ids")
    fx = json.loads(c.statuses_text())["servers"]["fx"]
    assert fx["status"] == "connected" and fx["skippedLines"] == 4, fx


def test_line_longer_than_max_fails_the_connection(one):
    c = one(maxMessageBytes=16384, restart=False)
    assert c.result("fx_big_text", '{"bytes":1000}') == tool_result("x" * 1000), "short lines pass"
    why = "the server sent a message longer than maxMessageBytes (16384 bytes); the connection was closed"
    r = c.result("fx_big_text", '{"bytes":100000}')
    assert r == tool_result("server `fx`: tools/call `big_text` failed: " + why, True), r
    r = c.result("fx_echo", '{"text":"x"}')
    assert r == tool_result("server `fx`: tools/call `echo` failed: " + why, True), "connection stays failed: " + r
    fx = json.loads(c.statuses_text())["servers"]["fx"]
    assert fx["status"] == "failed" and fx["error"] == "server `fx` failed after connecting: " + why, fx


SIGPIPE_HOST = r"""
import json, os, signal, sys, time
sys.path.insert(0, sys.argv[1])
import tnlib
signal.signal(signal.SIGPIPE, signal.SIG_DFL)   # the default: a write to a dead pipe kills us
c = tnlib.Client({"mcpServers": {"fx": {"command": [sys.argv[2], "--close-stdin-after-init"], "timeout": 300}}})
time.sleep(0.1)
out = [c.call("fx_echo", '{"text":"x"}') for _ in range(3)]
c.disconnect()
print(json.dumps(out))
print("host survived")
"""


def test_sigpipe_never_kills_the_host(one):
    # A host with SIGPIPE at its default disposition (Python itself ignores it, so a separate
    # interpreter restores SIG_DFL first).
    env = dict(os.environ, TOOLNEXUS_LIB=tnlib.lib_path())
    p = subprocess.run([sys.executable, "-c", SIGPIPE_HOST, HERE, FIXTURE], capture_output=True, text=True,
                       timeout=30, env=env)
    assert p.returncode == 0, "host died with %d (-13 = SIGPIPE); stderr: %s" % (p.returncode, p.stderr[-500:])
    lines = p.stdout.splitlines()
    assert lines[-1] == "host survived", p.stdout
    # The library keeps a reader on the child's stdin, so no write can raise SIGPIPE: a child
    # that closed its stdin just never answers.
    want = tool_result("server `fx`: tools/call `echo` timed out: no answer within 300 ms; "
                       "stderr: fixture: closed stdin", True)
    assert json.loads(lines[0]) == [[TN_OK, want]] * 3, lines[0]
    # and in this process too (SIGPIPE ignored, as Python leaves it)
    c = one("--close-stdin-after-init", timeout=300)
    time.sleep(0.1)
    for _ in range(3):
        assert c.call("fx_echo", '{"text":"x"}') == (TN_OK, want)


def test_stdout_closed_but_running(one):
    t0 = time.monotonic()
    c = one("--stdout-close-after-init")
    time.sleep(0.7)
    r = c.result("fx_echo", '{"text":"x"}')
    assert r == tool_result("server `fx`: tools/call `echo` failed: the server closed its stdout; "
                            "stderr: fixture: closed stdout", True), r
    c.disconnect()
    assert time.monotonic() - t0 < 6, "bounded"


# ---------------------------------------------------------------- the resolver


@pytest.mark.valgrind
@pytest.mark.parametrize("answer,result", [
    ('{"ok":true,"data":{"name":"Ada","age":36,"color":"red","subscribe":true}}',
     '{"action":"accept","content":{"name":"Ada","age":36,"color":"red","subscribe":true}}'),
    ('{"ok":false,"reason":"declined"}', '{"action":"decline"}'),
    ('{"ok":false,"reason":"cancelled"}', '{"action":"cancel"}'),
    ('{"ok":false,"reason":"expired"}', '{"action":"cancel"}'),
    ('{"ok":false}', '{"action":"cancel"}'),
])
def test_inline_accept_decline_cancel(one, answer, result):
    s = Script("answer", answer)
    c = one(resolver=s.resolver)
    assert c.result("fx_ask_form") == tool_result(result)
    assert len(s.requests) == 1 and s.first == TN_OK, (s.requests, s.first)
    assert FORM_REQUEST_RE.match(s.requests[0]), s.requests[0]


@pytest.mark.valgrind
def test_request_ids_are_unique_and_increasing(one):
    s = Script("answer", '{"ok":false}')
    c = one(resolver=s.resolver)
    for _ in range(3):
        c.result("fx_ask_form", '{"message":"m"}')
    c.result("fx_ask_twice")
    ids = [json.loads(r)["id"] for r in s.requests]
    counters = [int(re.match(r"^elc-[0-9a-z]+-([1-9][0-9]*)$", i).group(1)) for i in ids]
    assert len(set(ids)) == 5 and counters == sorted(counters) and len(set(counters)) == 5, ids
    assert [json.loads(r)["prompt"] for r in s.requests] == ["m", "m", "m", "first?", "second?"]


@pytest.mark.valgrind
def test_answer_may_carry_the_request_id(one):
    s = Script("answer")
    c = one(resolver=s.resolver)

    def answer_with_id(request_json, responder):
        rid = json.loads(request_json)["id"]
        s.requests.append((tnlib.answer(responder, '{"id":"elc-0-999999","ok":true}'), tnlib.last_error()))
        s.first = tnlib.answer(responder, json.dumps({"id": rid, "ok": True, "data": {"name": "Id"}}))
        return TN_RESOLVED

    s.resolver.fn = answer_with_id
    assert c.result("fx_ask_form") == tool_result(
        '{"action":"accept","content":{"name":"Id","age":30,"color":"green"}}')
    status, msg = s.requests[0]
    assert status == TN_ERR_INVALID_ARGUMENT and "does not match the Request id" in msg, s.requests[0]
    assert s.first == TN_OK


@pytest.mark.valgrind
def test_url_mode(one):
    s = Script("answer", '{"ok":true,"data":{"ignored":1}}')
    c = one(resolver=s.resolver)
    r = c.result("fx_ask_url", '{"url":"https://auth.test/x?y=1"}')
    assert r == tool_result('{"action":"accept"}'), "URL-mode accept carries no content: " + r
    assert re.match("^{" + REQUEST_ID + re.escape(
        ',"kind":"authorization","prompt":"Please authorize","url":"https://auth.test/x?y=1"}') + "$",
        s.requests[-1]), s.requests[-1]
    s.set("answer", '{"ok":false,"reason":"declined"}')
    assert c.result("fx_ask_url") == tool_result('{"action":"decline"}')
    assert s.requests[-1].endswith(',"kind":"authorization","prompt":"Please authorize",'
                                   '"url":"https://example.test/auth"}'), s.requests[-1]
    s.set("answer", '{"ok":false,"reason":"cancelled"}')
    assert c.result("fx_ask_url") == tool_result('{"action":"cancel"}')


@pytest.mark.valgrind
def test_deferred_answers(one):
    s = Script("timer", '{"ok":true,"data":{"name":"Later"}}', delay=0.2)
    c = one(resolver=s.resolver)
    t0 = time.monotonic()
    r = c.result("fx_ask_form")
    assert r == tool_result('{"action":"accept","content":{"name":"Later","age":30,"color":"green"}}'), r
    assert time.monotonic() - t0 >= 0.19
    assert s.answered.wait(2)
    assert (s.first, s.late) == (TN_OK, TN_ERR_CLOSED), "second answer refused"
    # answering before returning TN_DEFERRED is fine too
    s.set("answer_then_defer", '{"ok":false,"reason":"declined"}')
    assert c.result("fx_ask_form") == tool_result('{"action":"decline"}')
    assert s.first == TN_OK
    # invalid answers are refused and the responder stays open for a valid one
    s.set("invalid_then_valid", '{"ok":true,"data":{"name":"Valid"}}')
    r = c.result("fx_ask_form")
    assert r == tool_result('{"action":"accept","content":{"name":"Valid","age":30,"color":"green"}}'), r
    assert s.invalid[0] == (TN_ERR_INVALID_JSON, "answer_json is not JSON: expected ident at line 1 column 2"), s.invalid
    assert s.invalid[1] == (TN_ERR_INVALID_ARGUMENT, "Answer `ok` must be a boolean, got a string"), s.invalid
    assert s.invalid[2][0] == TN_ERR_INVALID_ARGUMENT and "`data`" in s.invalid[2][1], s.invalid
    assert s.first == TN_OK


def test_deferred_answer_from_another_thread_after_return(one):
    """The resolver returns TN_DEFERRED and keeps the responder; the test thread answers."""
    s = Script("keep")
    c = one(resolver=s.resolver)
    t, box = in_thread(c.call, "fx_ask_form")
    assert s.called.wait(3)
    time.sleep(0.1)
    assert not box, "the call waits for the answer"
    assert tnlib.answer(s.kept, '{"ok":true,"data":{"name":"Main"}}') == TN_OK
    t.join(3)
    assert box == [(TN_OK, tool_result('{"action":"accept","content":{"name":"Main","age":30,"color":"green"}}'))]
    assert tnlib.answer(s.kept, '{"ok":false}') == TN_ERR_CLOSED
    assert tnlib.last_error() == "this responder was already answered, timed out or cancelled"


def test_resolver_time_does_not_count_against_the_call(one):
    s = Script("slow", '{"ok":true,"data":{"name":"Slow"}}', delay=0.9)
    c = one(resolver=s.resolver, timeout=300)
    want = tool_result('{"action":"accept","content":{"name":"Slow","age":30,"color":"green"}}')
    t0 = time.monotonic()
    assert c.result("fx_ask_form") == want, "inline resolver for 900 ms, timeout 300 ms"
    assert time.monotonic() - t0 >= 0.88
    s.set("timer", delay=0.9)
    t0 = time.monotonic()
    assert c.result("fx_ask_form") == want, "deferred for 900 ms"
    assert time.monotonic() - t0 >= 0.88
    # the pause ends with the answer: work after it is timed again
    s.set("answer")
    r = c.result("fx_elicit_then_slow", '{"ms":1500}')
    assert r == tool_result("server `fx`: tools/call `elicit_then_slow` timed out: no answer within 300 ms", True), r


def test_elicitation_timeout_sends_cancel(one):
    s = Script("keep")
    c = one(resolver=s.resolver, elicitationTimeout=300)
    t0 = time.monotonic()
    r = c.result("fx_ask_form")
    took = time.monotonic() - t0
    assert r == tool_result('{"action":"cancel"}'), "never answered -> cancel: " + r
    assert 0.28 <= took < 1.5, "after elicitationTimeout (%.2fs)" % took
    assert tnlib.answer(s.kept, '{"ok":true}') == TN_ERR_CLOSED, "late answer refused"
    fx = json.loads(c.statuses_text())["servers"]["fx"]
    assert fx["lastElicitationError"] == "no answer within elicitationTimeout", fx
    # an inline resolver blocked past it: cancel goes out at once, its answer is refused
    s.set("slow", '{"ok":true,"data":{"name":"TooLate"}}', delay=1.2)
    r = c.result("fx_ask_form")
    assert r == tool_result('{"action":"cancel"}'), r
    assert s.answered.wait(3)
    assert s.first == TN_ERR_CLOSED, "the blocked resolver's answer is refused: %r" % s.first
    assert c.result("fx_echo", '{"text":"after"}') == tool_result("after")


@pytest.mark.valgrind
@pytest.mark.parametrize("mode,why", [
    ("fail", "the resolver failed (returned 7)"),
    ("no_answer", "the resolver returned TN_RESOLVED without answering"),
    ("raise", "the resolver failed (returned -1)"),
])
def test_failing_resolvers_mean_cancel(one, mode, why):
    s = Script(mode)
    c = one(resolver=s.resolver)
    assert c.result("fx_ask_form") == tool_result('{"action":"cancel"}')
    assert json.loads(c.statuses_text())["servers"]["fx"]["lastElicitationError"] == why
    assert c.result("fx_echo", '{"text":"fine"}') == tool_result("fine"), "server goes on"
    if mode == "raise":
        assert len(s.resolver.errors) == 1 and "RuntimeError: resolver blew up" in s.resolver.errors[0]
        # and the resolver keeps working once it stops raising
        s.set("answer", '{"ok":true,"data":{"name":"Again"}}')
        assert c.result("fx_ask_form") == tool_result(
            '{"action":"accept","content":{"name":"Again","age":30,"color":"green"}}')
    else:
        assert s.resolver.errors == []


@pytest.mark.valgrind
def test_reentrancy(connect):
    s = Script("reenter", '{"ok":true,"data":{"name":"R"}}')
    c = connect({"mcpServers": {"fx": server(), "other": server()}}, s.resolver)
    s.client = c
    s.reenter_tool = "fx_echo"
    r = c.result("fx_ask_form")
    assert s.reenter == (TN_ERR_REENTRANT, "tn_call_tool on server `fx` from inside its own inline resolver would "
                                           "deadlock; return TN_DEFERRED and answer from another thread"), s.reenter
    assert r == tool_result('{"action":"accept","content":{"name":"R","age":30,"color":"green"}}'), \
        "and the elicitation still completes: " + r
    s.set("reenter")
    s.reenter_tool = "other_echo"
    c.result("fx_ask_form")
    assert s.reenter == (TN_OK, tool_result("inner")), "another server is fine: %r" % (s.reenter,)


def test_disconnect_inside_resolver_is_refused(one):
    seen = []
    holder = {}

    def inside(request_json, responder):
        tnlib.lib().tn_disconnect(holder["c"].handle)
        seen.append(tnlib.last_error())
        tnlib.answer(responder, '{"ok":false,"reason":"declined"}')
        return TN_RESOLVED

    r = tnlib.Resolver(inside)
    c = holder["c"] = one(resolver=r)
    assert c.result("fx_ask_form") == tool_result('{"action":"decline"}')
    assert seen == ["tn_disconnect from inside one of this client's inline resolvers would deadlock; "
                    "the client stays connected"], seen
    assert c.result("fx_echo", '{"text":"alive"}') == tool_result("alive"), "client still connected"


@pytest.mark.valgrind
@pytest.mark.parametrize("with_resolver", [False, True])
def test_server_requests_ping_and_unknown(one, with_resolver):
    s = Script("answer", '{"ok":true}')
    c = one(resolver=s.resolver if with_resolver else None)
    # the fixture's own request ids start at 0
    assert c.result("fx_ping_client") == tool_result('{"jsonrpc":"2.0","id":0,"result":{}}')
    assert c.result("fx_unknown_request") == tool_result(
        '{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}')
    if not with_resolver:
        assert c.result("fx_ask_form") == tool_result(
            'elicitation error: {"code":-32601,"message":"Method not found"}\n'
            "the server asked for input; no resolver is registered", True), "no resolver: -32601, not a hang"
    assert s.requests == []


@pytest.mark.valgrind
def test_sep1034_defaults_and_validation(one):
    s = Script("answer", '{"ok":true,"data":{"name":"Bo"}}')
    c = one(resolver=s.resolver)
    assert c.result("fx_ask_form") == tool_result('{"action":"accept","content":{"name":"Bo","age":30,"color":"green"}}')
    assert "lastElicitationError" not in json.loads(c.statuses_text())["servers"]["fx"]
    bad = [
        ('{"ok":true,"data":{"age":5}}', "required field `name` is missing"),
        ('{"ok":true,"data":{"name":"A","age":"x"}}', "field `age` must be integer"),
        ('{"ok":true,"data":{"name":"A","color":"blue"}}', "field `color` is not one of the allowed values"),
        ('{"ok":true,"data":{"name":"A","subscribe":"yes"}}', "field `subscribe` must be boolean"),
        ('{"ok":true,"data":{"name":7}}', "field `name` must be string"),
    ]
    for answer, why in bad:
        s.set("answer", answer)
        assert c.result("fx_ask_form") == tool_result('{"action":"cancel"}'), "invalid content is sent as cancel"
        assert s.first == TN_OK
        err = json.loads(c.statuses_text())["servers"]["fx"]["lastElicitationError"]
        assert why in err, (answer, err)
    # a decline carries no content to check
    s.set("answer", '{"ok":false,"reason":"declined","data":{"age":"x"}}')
    assert c.result("fx_ask_form") == tool_result('{"action":"decline"}')


# ---------------------------------------------------------------- disconnect


def test_disconnect_leaves_no_process(one):
    c = one()
    pid = int(output_of(c.result("fx_pid")))
    grandchild = int(output_of(c.result("fx_spawn_child")))
    assert pid > 1 and grandchild > 1 and pid_alive(pid) and pid_alive(grandchild), (pid, grandchild)
    t0 = time.monotonic()
    c.disconnect()
    took = time.monotonic() - t0
    time.sleep(0.1)
    assert not pid_alive(pid), "server gone (and reaped: no zombie)"
    assert not pid_alive(grandchild), "its process group is gone too"
    assert took < 3, "disconnect bounded: %.2fs" % took
    tnlib.lib().tn_disconnect(None)  # NULL is a no-op


def test_disconnect_escalates_to_sigkill(one):
    c = one("--ignore-stdin-eof", "--ignore-sigterm")
    pid = int(output_of(c.result("fx_pid")))
    grandchild = int(output_of(c.result("fx_spawn_child")))
    t0 = time.monotonic()
    c.disconnect()
    took = time.monotonic() - t0
    time.sleep(0.1)
    assert not pid_alive(pid), "killed"
    assert not pid_alive(grandchild), "the group (ignoring SIGTERM too) is killed"
    assert 2.5 < took < 5, "stdin close, 2 s, SIGTERM, 1 s, SIGKILL: %.2fs" % took


def test_disconnect_cancels_deferred_and_wakes_callers(one):
    s = Script("keep")
    c = one(resolver=s.resolver)
    t, box = in_thread(c.call, "fx_ask_form")
    assert s.called.wait(3), "resolver got the request"
    time.sleep(0.05)
    t0 = time.monotonic()
    c.disconnect()
    t.join(3)
    took = time.monotonic() - t0
    assert not t.is_alive() and took < 3, "bounded: %.2fs" % took
    status, text = box[0]
    assert status in (TN_OK, TN_ERR_CLOSED), box
    if status == TN_ERR_CLOSED:
        assert text == "the client is disconnected", box
    else:
        assert json.loads(text)["isError"] is True, box
    assert tnlib.answer(s.kept, '{"ok":true}') == TN_ERR_CLOSED, "deferred responder was cancelled"


def test_calls_racing_disconnect_from_several_threads(one):
    c = one()
    results = [[] for _ in range(8)]
    start = threading.Barrier(9)

    def race(out):
        start.wait()
        for i in range(100000):
            status, text = c.call("fx_echo", '{"text":"r%d"}' % i)
            out.append((status, text, i))
            if status != TN_OK:
                break

    threads = [threading.Thread(target=race, args=(results[i],)) for i in range(8)]
    for t in threads:
        t.start()
    start.wait()
    time.sleep(0.15)
    c.disconnect()
    for t in threads:
        t.join(5)
    assert not any(t.is_alive() for t in threads)
    ok = 0
    for out in results:
        *done, last = out
        assert last[:2] == (TN_ERR_CLOSED, "the client is disconnected"), last
        for status, text, i in done:
            assert status == TN_OK, (status, text)
            parsed = json.loads(text)
            if not parsed["isError"]:
                assert text == tool_result("r%d" % i), text
                ok += 1
    assert ok > 0, "some calls went through before the disconnect"
