"""The client against real third-party MCP servers (nobody here wrote them), started by the
library itself over stdio from a config `command` (shared/docs/real-peers.md):

- @modelcontextprotocol/server-everything (npm), run with node;
- tests/peers/peer_server.py on the official Python SDK `mcp` 2.3.0, run with the peers venv.

Both come from scripts/install-peers.sh (.cache/peers); without it the tests are skipped.
"""

import json
import os
import re
import shutil
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import tnlib  # noqa: E402
from tnlib import TN_OK, TN_RESOLVED  # noqa: E402

REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
PEERS = os.path.join(REPO, ".cache", "peers")
EV_DIR = os.path.join(PEERS, "npm", "node_modules", "@modelcontextprotocol", "server-everything")
EV = os.path.join(EV_DIR, "dist", "index.js")
PY = os.path.join(PEERS, "py", "bin", "python")
PEER_PY = os.path.join(REPO, "tests", "peers", "peer_server.py")

REQUEST_ID = r'"id":"elc-[0-9a-z]+-[1-9][0-9]*"'
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"

EV_BASE_TOOLS = [
    "echo", "get-annotated-message", "get-env", "get-resource-links", "get-resource-reference",
    "get-structured-content", "get-sum", "get-tiny-image", "gzip-file-as-resource",
    "simulate-research-query", "toggle-simulated-logging", "toggle-subscriber-updates",
    "trigger-long-running-operation",
]
EV_ELICITATION_TOOLS = ["trigger-elicitation-request", "trigger-url-elicitation"]


def _peers_missing():
    missing = [p for p in (EV, PY, PEER_PY) if not os.path.exists(p)]
    if not os.path.isdir(PEERS):
        return ".cache/peers is missing (run scripts/install-peers.sh)"
    if missing:
        return "peer files missing under .cache/peers (run scripts/install-peers.sh): %s" % ", ".join(missing)
    return None


def tool_result(output, is_error=False):
    return '{"output":%s,"isError":%s}' % (json.dumps(output, ensure_ascii=False), "true" if is_error else "false")


class Answers:
    """An inline resolver that answers with `self.next` and records every Request it saw."""

    def __init__(self):
        self.next = '{"ok":false}'
        self.requests = []
        self.statuses = []
        self.resolver = tnlib.Resolver(self._resolve)

    def _resolve(self, request_json, responder):
        self.requests.append(request_json.decode("utf-8"))
        self.statuses.append(tnlib.answer(responder, self.next))
        return TN_RESOLVED

    def ask(self, client, tool, args, answer):
        """Calls `tool` answering its elicitation with `answer`: (ToolResult text, Request seen)."""
        self.next = answer
        before = len(self.requests)
        text = client.result(tool, args)
        assert len(self.requests) == before + 1, "exactly one elicitation: %r" % self.requests[before:]
        assert self.statuses[-1] == TN_OK, "answer taken"
        return text, self.requests[-1]


@pytest.fixture(scope="module")
def peers():
    why = _peers_missing()
    if why:
        pytest.skip(why)
    if shutil.which("node") is None:
        pytest.fail("node is not on PATH, but .cache/peers is installed")
    answers = Answers()
    with_resolver = tnlib.Client({"mcpServers": {
        "ev": {"command": ["node", EV, "stdio"]},
        # peer_server.py asks with the push API (ctx.elicit), which only the legacy era has
        # (the dual-era SDK would be spoken to in MCP 2026-07-28); test_eras.py covers that.
        "py": {"command": [PY, PEER_PY, "stdio"], "protocol": "legacy"},
    }}, answers.resolver)
    try:
        plain = tnlib.Client({"mcpServers": {"ev": {"command": ["node", EV, "stdio"]}}})
    except BaseException:
        with_resolver.disconnect()
        raise
    try:
        yield with_resolver, plain, answers
    finally:
        plain.disconnect()
        with_resolver.disconnect()


@pytest.fixture(scope="module")
def client(peers):
    return peers[0]


@pytest.fixture(scope="module")
def answers(peers):
    return peers[2]


# ---------------------------------------------------------------- server-everything


def refreshed(status):
    """`status` without `toolsRefreshedAtMs`: server-everything announces `list_changed` right after
    `initialized` (real-peers.md), and the client lists its tools again, maybe before
    this status was taken, maybe after."""
    status = dict(status)
    at = status.pop("toolsRefreshedAtMs", None)
    assert at is None or isinstance(at, int) and at > 0, at
    return status


def test_everything_connects_and_lists_15_tools_with_a_resolver(client):
    servers = json.loads(client.statuses_text())["servers"]
    assert refreshed(servers["ev"]) == {"status": "connected", "era": "legacy", "protocolVersion": "2025-11-25", "tools": 15,
                             "eraReason": "a resolver is registered and stdio carries push-style questions (the handshake first)"}, servers
    tools = [t for t in json.loads(client.tools_text()) if t["server"] == "ev"]
    assert [t["name"] for t in tools] == sorted("ev_" + n for n in EV_BASE_TOOLS + EV_ELICITATION_TOOLS)
    for t in tools:
        assert t["source"] == "mcp" and t["name"] == "ev_" + t["remoteName"], t
    sc = next(t for t in tools if t["remoteName"] == "get-structured-content")
    # the server's optional listing fields are kept
    assert sc["title"] == "Get Structured Content Tool", sc
    assert sc["annotations"] == {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True,
                                 "openWorldHint": False}, sc
    assert sc["outputSchema"]["properties"].keys() == {"temperature", "conditions", "humidity"}, sc
    url = next(t for t in tools if t["remoteName"] == "trigger-url-elicitation")
    assert url["inputSchema"]["required"] == ["url"], url


def test_everything_lists_13_tools_without_a_resolver(peers):
    plain = peers[1]
    servers = json.loads(plain.statuses_text())["servers"]
    assert {"ev": refreshed(servers["ev"])} == {"ev": {"status": "connected", "era": "legacy", "protocolVersion": "2025-11-25", "tools": 13,
                              "eraReason": "the 2026-07-28 probe: the server answered with JSON-RPC error -32601: Method not found"}}, servers
    names = [t["name"] for t in json.loads(plain.tools_text())]
    assert names == sorted("ev_" + n for n in EV_BASE_TOOLS), names
    assert plain.call("ev_trigger-elicitation-request") == (
        tnlib.TN_ERR_NOT_FOUND, "no tool named `ev_trigger-elicitation-request`")


def test_everything_echo_and_sum(client):
    assert client.result("ev_echo", '{"message":"hi"}') == tool_result("Echo: hi")
    assert client.result("ev_echo", '{"message":"héllo 😀"}') == tool_result("Echo: héllo 😀")
    assert client.result("ev_get-sum", '{"a":2,"b":3}') == tool_result("The sum of 2 and 3 is 5.")


def test_everything_form_elicitation_accept(client, answers):
    text, request = answers.ask(client, "ev_trigger-elicitation-request", None,
                                '{"ok":true,"data":{"name":"Ada","check":true,"integer":7}}')
    assert re.match("^{" + REQUEST_ID + ',"kind":"input","prompt":"Please provide inputs for the following fields:",'
                    '"data":{"schema":{"type":"object","properties":{"name":{"title":"String","type":"string",', request), \
        request
    schema = json.loads(request)["data"]["schema"]
    assert len(schema["properties"]) == 13 and schema["required"] == ["name"], schema
    # SEP-1034: the fields the answer left out that have a default are filled in
    content = {
        "name": "Ada", "check": True, "integer": 7,
        "firstLine": "It was a dark and stormy night.", "number": 3.14,
        "untitledSingleSelectEnum": "Monica", "untitledMultipleSelectEnum": ["Guitar"],
        "titledSingleSelectEnum": "hero-1", "titledMultipleSelectEnum": ["fish-1"],
        "legacyTitledEnum": "pet-1",
    }
    output = json.loads(text)
    assert output["isError"] is False and set(output) == {"output", "isError"}, text
    head, raw = output["output"].split("\n\nRaw result: ")
    assert head == ("✅ User provided the requested information!\nUser inputs:\n- Name: Ada\n"
                    "- Agreed to terms: true\n- Favorite Integer: 7\n- Favorite Number: 3.14"), head
    assert json.loads(raw) == {"action": "accept", "content": content}, raw
    # the answered fields keep the order the host gave them (defaults may go anywhere)
    keys = [k for k, _ in json.loads(raw, object_pairs_hook=lambda pairs: pairs)[1][1]]
    assert [k for k in keys if k in ("name", "check", "integer")] == ["name", "check", "integer"], keys


def test_everything_form_elicitation_decline_and_cancel(client, answers):
    text, _ = answers.ask(client, "ev_trigger-elicitation-request", None, '{"ok":false,"reason":"declined"}')
    assert text == tool_result('❌ User declined to provide the requested information.\n\n'
                               'Raw result: {\n  "action": "decline"\n}')
    text, _ = answers.ask(client, "ev_trigger-elicitation-request", None, '{"ok":false,"reason":"cancelled"}')
    assert text == tool_result('⚠️ User cancelled the elicitation dialog.\n\nRaw result: {\n  "action": "cancel"\n}')


def test_everything_form_accept_failing_the_schema_is_sent_as_cancel(client, answers):
    # no `name` (required, no default): the library checks the content and sends cancel
    text, _ = answers.ask(client, "ev_trigger-elicitation-request", None, '{"ok":true,"data":{"check":false}}')
    assert text == tool_result('⚠️ User cancelled the elicitation dialog.\n\nRaw result: {\n  "action": "cancel"\n}')
    ev = json.loads(client.statuses_text())["servers"]["ev"]
    assert "required field `name` is missing" in ev["lastElicitationError"], ev


@pytest.mark.parametrize("answer,first_line,raw", [
    ('{"ok":true,"data":{"ignored":1}}',
     "✅ User completed the URL elicitation flow.\nElicitation ID: el-1\nURL: https://example.com/auth",
     '{\n  "action": "accept"\n}'),
    ('{"ok":false,"reason":"declined"}', "❌ User declined to open the URL (Elicitation ID: el-1).",
     '{\n  "action": "decline"\n}'),
    ('{"ok":false,"reason":"cancelled"}', "⚠️ User cancelled the URL elicitation (Elicitation ID: el-1).",
     '{\n  "action": "cancel"\n}'),
])
def test_everything_url_elicitation(client, answers, answer, first_line, raw):
    text, request = answers.ask(client, "ev_trigger-url-elicitation",
                                '{"url":"https://example.com/auth","elicitationId":"el-1"}', answer)
    assert re.match("^{" + REQUEST_ID + re.escape(
        ',"kind":"authorization","prompt":"Please open the link to complete this action.",'
        '"url":"https://example.com/auth"}') + "$", request), request
    # an accept goes out without content (URL mode): the server's raw result shows only the action
    assert text == tool_result(first_line + "\n\nRaw result: " + raw), text


def test_everything_tiny_image(client):
    with open(os.path.join(EV_DIR, "dist", "tools", "get-tiny-image.js"), encoding="utf-8") as f:
        image = re.search(r'export const MCP_TINY_IMAGE = "([A-Za-z0-9+/=]+)"', f.read()).group(1)
    text = client.result("ev_get-tiny-image")
    assert text == ('{"output":"Here\'s the image you requested:\\nThe image above is the MCP logo.",'
                    '"isError":false,"metadata":{"parts":[{"type":"image","data":"%s","mimeType":"image/png"}]}}'
                    % image), text[:300]


def test_everything_structured_content(client):
    # the tool returns {content:[{text: JSON.stringify(w)}], structuredContent: w}; the output is w
    assert client.result("ev_get-structured-content", '{"location":"Chicago"}') == tool_result(
        '{"temperature":36,"conditions":"Light rain / drizzle","humidity":82}')
    assert client.result("ev_get-structured-content", '{"location":"New York"}') == tool_result(
        '{"temperature":33,"conditions":"Cloudy","humidity":82}')


# ---------------------------------------------------------------- the Python SDK peer


def test_python_peer_connects_and_echoes(client):
    servers = json.loads(client.statuses_text())["servers"]
    assert servers["py"] == {"status": "connected", "era": "legacy", "protocolVersion": "2025-11-25", "tools": 3,
                             "eraReason": '"protocol": "legacy"'}, servers
    names = [t["name"] for t in json.loads(client.tools_text()) if t["server"] == "py"]
    assert names == ["py_ask_name", "py_authorize", "py_echo"], names
    assert client.result("py_echo", '{"text":"héllo 😀 \\"q\\""}') == tool_result('héllo 😀 "q"')


PY_FORM_REQUEST = (
    ',"kind":"input","prompt":"Who are you?","data":{"schema":{"properties":{"name":{"description":"Your name",'
    '"title":"Name","type":"string"},"age":{"default":30,"description":"Your age","title":"Age","type":"integer"}},'
    '"required":["name"],"title":"Person","type":"object"}}}'
)


@pytest.mark.parametrize("answer,output", [
    ('{"ok":true,"data":{"name":"Ada","age":36}}', '{"action": "accept", "content": {"name": "Ada", "age": 36}}'),
    ('{"ok":true,"data":{"name":"Bo"}}', '{"action": "accept", "content": {"name": "Bo", "age": 30}}'),
    ('{"ok":false,"reason":"declined"}', '{"action": "decline"}'),
    ('{"ok":false,"reason":"cancelled"}', '{"action": "cancel"}'),
    # content the schema rejects is sent as cancel by the library (the server never sees it)
    ('{"ok":true,"data":{"age":3}}', '{"action": "cancel"}'),
])
def test_python_peer_ask_name(client, answers, answer, output):
    text, request = answers.ask(client, "py_ask_name", None, answer)
    assert re.match("^{" + REQUEST_ID + re.escape(PY_FORM_REQUEST) + "$", request), request
    assert text == tool_result(output), text


@pytest.mark.parametrize("answer,action", [
    ('{"ok":true,"data":{"ignored":1}}', "accept"),
    ('{"ok":false,"reason":"declined"}', "decline"),
    ('{"ok":false,"reason":"cancelled"}', "cancel"),
])
def test_python_peer_authorize(client, answers, answer, action):
    text, request = answers.ask(client, "py_authorize", '{"url":"https://example.com/auth"}', answer)
    assert re.match("^{" + REQUEST_ID + re.escape(
        ',"kind":"authorization","prompt":"Please authorize in your browser.","url":"https://example.com/auth"}')
        + "$", request), request
    out = json.loads(text)
    assert out["isError"] is False, text
    assert re.match('^{"action": "%s", "elicitationId": "%s"}$' % (action, UUID), out["output"]), text
    # on accept the peer also sends notifications/elicitation/complete first: not a problem
    py = json.loads(client.statuses_text())["servers"]["py"]
    assert py["status"] == "connected" and py.get("skippedLines", 0) == 0, py
