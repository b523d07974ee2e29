"""Tasks through the C ABI against the fixture server's `--tasks` mode, in both eras
(2025-11-25 tasks in the handshake era, the SEP-2663 Tasks extension in MCP 2026-07-28), over
stdio and HTTP: a required-task tool called synchronously and asynchronously, status changes and
progress in order, cancel reaching the server as `tasks/cancel`, a task that asks through the
resolver (inline, deferred, suspended), a wait that ends with `metadata.pending` and is resumed
(in this process, and by a second process after the first one exited mid-task), results over
`maxResultBytes`, and an `outputSchema` mismatch in each `outputValidation` mode. The fixture's
`--log` shows what reached the server."""

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

import tnlib
from conftest import REPO
from test_modern_fixture import Asker, http, make_server  # noqa: F401 (the `http` fixture)

FIXTURE = os.environ.get("TN_FIXTURE") or os.path.join(REPO, "target", "debug", "tn-fixture-server")
pytestmark = pytest.mark.skipif(not os.path.exists(FIXTURE), reason="build tn-fixture-server first")

ERAS = [("stdio", "legacy"), ("stdio", "modern"), ("http", "legacy"), ("http", "modern")]


def connect_fx(connect, tmp_path, http, transport, era, resolver=None, **extra):  # noqa: F811
    spec, sent = make_server(transport, tmp_path, http, ["--dual", "--tasks"], protocol=era, **extra)
    c = connect({"mcpServers": {"fx": spec}}, resolver)
    st = json.loads(c.statuses_text())["servers"]["fx"]
    assert st["status"] == "connected" and st["era"] == era, st
    return c, sent, spec


def methods(sent):
    return [r["rpc"] for r in sent() if r.get("rpc")]


@pytest.fixture(params=ERAS, ids=lambda p: "-".join(p))
def fx(request, tmp_path, http, connect):  # noqa: F811
    transport, era = request.param
    c, sent, _ = connect_fx(connect, tmp_path, http, transport, era)
    return c, sent, era


def test_required_task_called_synchronously(fx):
    c, sent, era = fx
    r = json.loads(c.result("fx_task_slow", '{"ms":300,"steps":2}'))
    assert r == {"output": "slow task done after 2 steps", "isError": False}, r
    calls = [x for x in sent() if x.get("rpc") == "tools/call"]
    if era == "legacy":
        assert "task" in calls[0]["params"], calls[0]
    else:
        caps = calls[0]["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
        assert "io.modelcontextprotocol/tasks" in caps["extensions"], caps
    ms = methods(sent)
    assert "tasks/get" in ms, ms
    if era == "legacy":
        assert ms[-1] == "tasks/result", ms
    else:
        assert "tasks/result" not in ms, ms


def test_required_task_called_asynchronously_status_and_progress_in_order(fx):
    c, sent, era = fx
    call = c.start("fx_task_slow", '{"ms":600,"steps":3}')
    assert call.status == tnlib.TN_OK, call.error
    r = json.loads(call.wait(30))
    assert r["output"] == "slow task done after 3 steps" and not r["isError"], r
    notes = [json.loads(p) for p, _, after in call.progress]
    assert all(not after for _, _, after in call.progress)
    statuses = [n["task"]["status"] for n in notes if "task" in n]
    assert statuses[0] == "working" and statuses[-1] == "completed", statuses
    assert all(n["resume"].startswith("tn1.") for n in notes if "task" in n)
    # Status messages step forward in order; progress (stdio: the fixture sends it) too.
    steps = [n["task"].get("statusMessage") for n in notes if "task" in n]
    seen = [s for s in steps if s and s.startswith("step")]
    assert seen == sorted(seen), steps
    prog = [n["progress"] for n in notes if "progress" in n]
    assert prog == sorted(prog), notes
    if sent()[0].get("http") is None:
        # stdio: the fixture sends step k's progress, then makes it the status: both arrive,
        # in that order.
        assert prog == [1, 2, 3], notes
        order = [("p%d" % n["progress"]) if "progress" in n else n["task"].get("statusMessage")
                 for n in notes]
        for k in (1, 2):
            assert order.index("p%d" % k) < order.index("step %d of 3" % k), order


def test_cancel_reaches_the_server_as_tasks_cancel(fx):
    c, sent, era = fx
    call = c.start("fx_task_slow", '{"ms":20000,"steps":20}')
    assert call.status == tnlib.TN_OK
    deadline = time.time() + 10
    while not any("task" in json.loads(p) for p, _, _ in call.progress) and time.time() < deadline:
        time.sleep(0.02)
    task_id = [json.loads(p)["task"]["taskId"] for p, _, _ in call.progress if "task" in json.loads(p)][0]
    assert c.cancel(call.call_id)[0] == tnlib.TN_OK
    r = json.loads(call.wait(10))
    assert r["isError"] and "cancelled" in r["output"], r
    assert [x["params"]["taskId"] for x in sent() if x.get("rpc") == "tasks/cancel"] == [task_id]
    assert json.loads(c.result("fx_task_cancelled_ids"))["output"] == json.dumps([task_id]).replace(" ", "")


@pytest.mark.parametrize("mode", ["inline", "deferred"])
@pytest.mark.parametrize("transport,era", ERAS, ids=["-".join(p) for p in ERAS])
def test_task_asks_through_the_resolver(tmp_path, http, connect, transport, era, mode):  # noqa: F811
    asker = Asker('{"ok":true,"data":{"name":"Ada"}}', mode)
    c, sent, _ = connect_fx(connect, tmp_path, http, transport, era, asker.resolver)
    r = json.loads(c.result("fx_task_ask"))
    assert r == {"output": "hello Ada", "isError": False}, r
    assert [q["prompt"] for q in asker.seen] == ["What is your name?"], asker.seen
    if era == "modern":
        upd = [x for x in sent() if x.get("rpc") == "tasks/update"]
        assert len(upd) == 1 and list(upd[0]["params"]["inputResponses"].values())[0]["action"] == "accept", upd


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_task_question_suspended_then_resumed(tmp_path, http, connect, transport):  # noqa: F811
    asker = Asker(mode="suspend")
    c, sent, _ = connect_fx(connect, tmp_path, http, transport, "modern", asker.resolver)
    r = json.loads(c.result("fx_task_ask"))
    pending = r["metadata"]["pending"]
    assert not r["isError"] and pending["task"]["taskId"] and len(pending["requests"]) == 1, r
    rid = pending["requests"][0]["id"]
    st, text = c.resume(pending["resume"], json.dumps({rid: {"ok": True, "data": {"name": "Grace"}}}))
    assert st == tnlib.TN_OK, text
    assert json.loads(text) == {"output": "hello Grace", "isError": False}, text
    assert methods(sent).count("tools/call") == 1


def test_wait_ends_pending_and_resumes_without_rerunning(fx):
    c, sent, era = fx
    r = json.loads(_call_with_timeout(c, "fx_task_slow", '{"ms":1500,"steps":1}', 300))
    pending = r["metadata"]["pending"]
    assert not r["isError"] and pending["task"]["status"] == "working", r
    token = pending["resume"]
    body = json.loads(tnlib_b64(token))
    assert body["kind"] == "task" and body["task"]["taskId"] == pending["task"]["taskId"], body
    st, text = c.resume(token, "{}")
    assert st == tnlib.TN_OK, text
    assert json.loads(text)["output"] == "slow task done after 1 steps", text
    assert methods(sent).count("tools/call") == 1


def _call_with_timeout(c, name, args, ms):
    call = c.start(name, args, json.dumps({"timeoutMs": ms}), progress=False)
    assert call.status == tnlib.TN_OK, call.error
    return call.wait(30)


def tnlib_b64(token):
    import base64
    body = token[len("tn1."):]
    return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode()


HOST = textwrap.dedent("""
    import json, os, sys, time
    sys.path.insert(0, {tests!r})
    import tnlib
    config, role = sys.argv[1], sys.argv[2]
    c = tnlib.Client(config)
    if role == "start":
        call = c.start("fx_task_slow", '{{"ms":2500,"steps":5}}')
        while True:
            notes = [json.loads(p) for p, _, _ in call.progress]
            tokens = [n["resume"] for n in notes if "resume" in n]
            if tokens:
                print(tokens[0], flush=True)
                os._exit(0)   # the host process exits mid-task
            time.sleep(0.02)
    else:
        st, text = c.resume(sys.argv[3], "{{}}")
        print(json.dumps([st, text]), flush=True)
""")


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_host_exits_mid_task_second_process_collects(tmp_path, http, era):  # noqa: F811
    spec, sent = make_server("http", tmp_path, http, ["--dual", "--tasks"], protocol=era)
    config = json.dumps({"mcpServers": {"fx": spec}})
    script = tmp_path / "host.py"
    script.write_text(HOST.format(tests=os.path.join(REPO, "tests", "python")))
    env = dict(os.environ)
    first = subprocess.run([sys.executable, str(script), config, "start"], capture_output=True,
                           text=True, timeout=60, env=env)
    token = first.stdout.strip()
    assert token.startswith("tn1."), (first.stdout, first.stderr)
    second = subprocess.run([sys.executable, str(script), config, "resume", token], capture_output=True,
                            text=True, timeout=60, env=env)
    st, text = json.loads(second.stdout.strip().splitlines()[-1])
    assert st == tnlib.TN_OK, (text, second.stderr)
    assert json.loads(text) == {"output": "slow task done after 5 steps", "isError": False}, text
    assert methods(sent).count("tools/call") == 1
    assert "fx" not in token and "secret" not in tnlib_b64(token)


@pytest.mark.parametrize("transport,era", ERAS, ids=["-".join(p) for p in ERAS])
def test_result_over_max_result_bytes(tmp_path, http, connect, transport, era):  # noqa: F811
    c, _, _ = connect_fx(connect, tmp_path, http, transport, era, maxResultBytes=4096)
    r = json.loads(c.result("fx_task_big", '{"bytes":10000}'))
    assert r["isError"] and "maxResultBytes (4096)" in r["output"], r
    r = json.loads(c.result("fx_big_text", '{"bytes":10000}'))
    assert r["isError"] and "maxResultBytes (4096)" in r["output"], r
    assert json.loads(c.result("fx_task_big", '{"bytes":100}'))["output"] == "x" * 100


def test_result_over_max_result_bytes_truncated(tmp_path, http, connect):  # noqa: F811
    c, _, _ = connect_fx(connect, tmp_path, http, "stdio", "modern", maxResultBytes=4096,
                         resultOverflow="truncate")
    r = json.loads(c.result("fx_task_big", '{"bytes":10000}'))
    assert not r["isError"] and r["output"].startswith("x" * 4096) and "[cut:" in r["output"], r["output"][-200:]
    assert r["metadata"]["truncated"]["limit"] == 4096 and r["metadata"]["truncated"]["bytes"] > 10000, r["metadata"]


@pytest.mark.parametrize("era", ["legacy", "modern"])
@pytest.mark.parametrize("mode", ["warn", "strict", "off"])
def test_output_schema_mismatch(tmp_path, http, connect, era, mode):  # noqa: F811
    c, _, _ = connect_fx(connect, tmp_path, http, "stdio", era, outputValidation=mode)
    good = json.loads(c.result("fx_schema_tool", '{"bad":false}'))
    assert good == {"output": '{"count":3}', "isError": False}, good
    bad = json.loads(c.result("fx_schema_tool", '{"bad":true}'))
    if mode == "warn":
        assert not bad["isError"] and bad["output"] == '{"count":"three"}', bad
        errs = bad["metadata"]["outputSchemaErrors"]
        assert len(errs) == 1 and "/count" in errs[0] and "integer" in errs[0], errs
    elif mode == "strict":
        assert bad["isError"] and "outputSchema" in bad["output"] and "integer" in bad["output"], bad
    else:
        assert bad == {"output": '{"count":"three"}', "isError": False}, bad


def test_bad_config_values_name_the_key(connect):
    for key, value in [("tasks", "sometimes"), ("outputValidation", "loud"), ("maxResultBytes", 0),
                       ("resultOverflow", "drop")]:
        c = connect({"mcpServers": {"fx": {"command": [FIXTURE, "--tasks"], key: value}}})
        st = json.loads(c.statuses_text())["servers"]["fx"]
        assert st["status"] == "failed" and key in st["error"], st


def test_optional_task_follows_the_tasks_key(tmp_path, http, connect):  # noqa: F811
    for mode, as_task in [("never", False), ("always", True), ("auto", False)]:
        (tmp_path / mode).mkdir()
        c, sent, _ = connect_fx(connect, tmp_path / mode, http, "stdio", "legacy", tasks=mode)
        r = json.loads(c.result("fx_task_optional", '{"text":"hi"}'))
        assert r["output"] == ("task: hi" if as_task else "hi"), (mode, r)
    # auto: an asynchronous call goes as a task.
    call = c.start("fx_task_optional", '{"text":"hi"}', progress=False)
    assert json.loads(call.wait(30))["output"] == "task: hi"


# ---------------------------------------------------------------- a published tasks server

EV = os.path.join(REPO, ".cache", "peers", "npm", "node_modules", "@modelcontextprotocol", "server-everything",
                  "dist", "index.js")


@pytest.mark.skipif(not os.path.exists(EV), reason="scripts/install-peers.sh installs server-everything")
def test_server_everything_research_task_async_then_asking(connect):
    """server-everything's `simulate-research-query` (taskSupport required, 2025-11-25 tasks,
    four stages of 1 s; `ambiguous` asks on the tasks/result stream)."""
    seen = []

    def fn(request_json, responder):
        r = json.loads(request_json)
        seen.append(r)
        choice = r["data"]["schema"]["properties"]["interpretation"]["oneOf"][0]["const"]
        tnlib.answer(responder, json.dumps({"ok": True, "data": {"interpretation": choice}}))
        return tnlib.TN_OK

    resolver = tnlib.Resolver(fn)
    c = connect({"mcpServers": {"ev": {"command": ["node", EV, "stdio"]}}}, resolver)
    call = c.start("ev_simulate-research-query", json.dumps({"topic": "python"}))
    assert call.status == tnlib.TN_OK, call.error
    r = json.loads(call.wait(60))
    assert not r["isError"] and r["output"].startswith("# Research Report: python"), r
    stages = [json.loads(p)["task"].get("statusMessage") for p, _, _ in call.progress]
    assert stages[:4] == ["Gathering sources...", "Analyzing content...", "Synthesizing findings...",
                          "Generating report..."], stages
    assert json.loads(call.progress[-1][0])["task"]["status"] == "completed"
    r = json.loads(c.result("ev_simulate-research-query", json.dumps({"topic": "python", "ambiguous": True})))
    assert len(seen) == 1, seen
    choice = seen[0]["data"]["schema"]["properties"]["interpretation"]["oneOf"][0]["const"]
    assert not r["isError"] and ("**Clarification**: %s" % choice) in r["output"], r["output"][:400]


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_disconnect_ends_the_wait_with_a_pending(tmp_path, http, connect, era):  # noqa: F811
    """tn_disconnect during an asynchronous task call: done fires before it returns, with a
    pending naming the task (the wait ends, not the task), promptly despite a long poll."""
    c, sent, spec = connect_fx(connect, tmp_path, http, "http", era)
    call = c.start("fx_task_slow", '{"ms":5000,"steps":1}', progress=False)
    deadline = time.time() + 30
    while "tasks/get" not in methods(sent) and time.time() < deadline:
        time.sleep(0.02)
    t0 = time.time()
    c.disconnect()
    assert time.time() - t0 < 5
    r = json.loads(call.wait(1))
    pending = r["metadata"]["pending"]
    assert not r["isError"] and pending["task"]["status"] == "working", r
    other = connect({"mcpServers": {"fx": spec}})
    st, text = other.resume(pending["resume"], "{}")
    assert st == tnlib.TN_OK and json.loads(text)["output"] == "slow task done after 1 steps", text


def test_list_tasks_where_the_server_lists_them(tmp_path, http, connect):  # noqa: F811
    for era in ("legacy", "modern"):
        (tmp_path / era).mkdir()
        c, sent, _ = connect_fx(connect, tmp_path / era, http, "stdio", era)
        call = c.start("fx_task_slow", '{"ms":200,"steps":1}', progress=False)
        call.wait(30)
        st, text = c.skills("tn_list_tasks", "fx")
        if era == "legacy":
            assert st == tnlib.TN_OK, text
            listed = json.loads(text)
            assert listed["server"] == "fx" and [t["status"] for t in listed["tasks"]] == ["completed"], listed
        else:
            assert st == tnlib.TN_ERR_NOT_FOUND and "2026-07-28" in text, text
    st, text = c.skills("tn_list_tasks", "nope")
    assert st == tnlib.TN_ERR_NOT_FOUND and "nope" in text, text


def test_a_tasks_list_cursor_loop_ends_at_once_naming_the_server(tmp_path, http, connect):  # noqa: F811
    # A->B->A: a pager that only compared a cursor with the one just before ran to 1000 pages.
    spec, sent = make_server("stdio", tmp_path, http, ["--dual", "--tasks", "--cursor-loop", "--resource-page-size", "1"],
                             protocol="legacy")
    c = connect({"mcpServers": {"fx": spec}})
    for _ in range(3):
        c.start("fx_task_slow", '{"ms":10,"steps":1}', progress=False).wait(30)
    t0 = time.monotonic()
    st, text = c.skills("tn_list_tasks", "fx")
    assert st == tnlib.TN_ERR_NOT_FOUND and "server `fx`" in text and 'the cursor "A" again' in text, (st, text)
    assert time.monotonic() - t0 < 5
    assert methods(sent).count("tasks/list") == 3, methods(sent)


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_resume_after_the_task_finished_with_a_short_timeout(tmp_path, http, connect, era):  # noqa: F811
    """A server `timeout` shorter than the task: the call returns a pending; once the task has
    finished, resuming (with that same short timeout) polls at once and collects the result."""
    c, sent, _ = connect_fx(connect, tmp_path, http, "http", era, timeout=400)
    r = json.loads(c.result("fx_task_slow", '{"ms":1000,"steps":1}'))
    assert r["metadata"]["pending"]["task"]["status"] == "working", r
    time.sleep(1.5)
    st, text = c.resume(r["metadata"]["pending"]["resume"], "{}")
    assert st == tnlib.TN_OK and json.loads(text)["output"] == "slow task done after 1 steps", text
