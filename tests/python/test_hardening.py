"""A catalogue of misbehaving servers (contract §3, §5), stdio and HTTP, each driven through the C ABI
next to a healthy fixture server `ok`. Every test checks:

1. the operation finishes within a stated bound (timed);
2. the exact status / isError text the library produces (naming the server and the cause);
3. `ok_echo` still answers afterwards (and, where it matters, while the misbehaviour goes on);
4. after disconnect no process of the misbehaving server is left: the direct child is reaped
   (no /proc entry; a zombie would be a child the library never waited for) and grandchildren
   are gone or zombies of another parent;
5. the host's thread count is back to its baseline, measured after a warm-up
   connect/call/disconnect that used an elicitation and an HTTP server (so the process-lifetime
   threads `toolnexus-timer` and `toolnexus-http` already exist).

Stdio servers: tests/fixture-server with `--hardening-tools` (flood_notifications, answer_twice,
ask_many, partial_then_echo, bad_utf8_then_echo, crash_mid_line). HTTP servers: the scenarios of
scripted_http.py (reset, resetjson, drip, error500, error503, badsse, huge, hugesse, redirect).
"""

import json
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import tnlib  # noqa: E402
from conftest import REPO  # noqa: E402
from tnlib import TN_DEFERRED, TN_ERR_NOT_FOUND, TN_OK, TN_RESOLVED  # noqa: E402

FIXTURE = os.path.realpath(
    os.environ.get("TN_FIXTURE") or os.path.join(REPO, "target", "debug", "tn-fixture-server")
)
MIB = 1 << 20
MAX_DEFAULT = 32 * MIB
TOO_LONG = ("the server sent a message longer than maxMessageBytes (33554432 bytes); "
            "the connection was closed")
ACCEPT = '{"ok":true,"data":{"name":"Ada"}}'


# ---------------------------------------------------------------- helpers


def fx(*args, **extra):
    # "restart": False: these tests look at the failure each misbehaviour leaves behind; a
    # server that is started again is tests/c/live.c's and test_live.py's.
    entry = {"command": [FIXTURE, "--hardening-tools"] + [str(a) for a in args], "restart": False}
    entry.update(extra)
    return entry


def pid_file_args(tmp_path, name="bad"):
    path = str(tmp_path / ("%s.pid" % name))
    return path, ["--print-pid-file", path]


def read_pid(path, within=3.0):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with open(path) as f:
                text = f.read()
            if text:
                return int(text)
        except OSError:
            pass
        time.sleep(0.01)
    raise AssertionError("no pid file at %s" % path)


def proc_state(pid):
    """(state, ppid) from /proc/<pid>/stat, or None when there is no such process."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            stat = f.read()
    except OSError:
        return None
    rest = stat[stat.rindex(b")") + 2:].split()
    return rest[0].decode(), int(rest[1])


def assert_child_gone(pid, within=1.0):
    """The server process (our child) is gone and reaped: a zombie whose parent is this
    process is a child the library never waited for."""
    deadline = time.monotonic() + within
    while True:
        st = proc_state(pid)
        if st is None or st[1] != os.getpid():  # gone (or the pid was reused elsewhere)
            return
        if time.monotonic() >= deadline:
            raise AssertionError("server process %d left behind after disconnect: state %s%s"
                                 % (pid, st[0], " (zombie: never reaped)" if st[0] == "Z" else ""))
        time.sleep(0.02)


def assert_grandchild_gone(pid, within=1.0):
    """A grandchild (reparented away from us) is gone, or a zombie waiting for its reaper."""
    deadline = time.monotonic() + within
    while True:
        st = proc_state(pid)
        if st is None or st[0] in ("Z", "X"):
            return
        if time.monotonic() >= deadline:
            raise AssertionError("grandchild %d still running after disconnect: state %s" % (pid, st[0]))
        time.sleep(0.02)


def threads():
    return len(os.listdir("/proc/self/task"))


def thread_names():
    names = []
    for t in os.listdir("/proc/self/task"):
        try:
            with open("/proc/self/task/%s/comm" % t) as f:
                names.append(f.read().strip())
        except OSError:
            pass
    return sorted(names)


def assert_threads_back(baseline, within=3.0):
    """The thread count returns to the baseline (bounded: threads wind down asynchronously)."""
    deadline = time.monotonic() + within
    while threads() != baseline:
        if time.monotonic() >= deadline:
            raise AssertionError("%d threads after disconnect, %d before: %s"
                                 % (threads(), baseline, thread_names()))
        time.sleep(0.02)


def rss_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    raise AssertionError("no VmRSS")


def result(text, is_error=False):
    return json.dumps({"output": text, "isError": is_error}, ensure_ascii=False, separators=(",", ":"))


def statuses(c):
    return json.loads(c.statuses_text())["servers"]


def failed(c, name="bad"):
    """The error of a server that must have turned `failed`."""
    st = statuses(c)[name]
    assert st["status"] == "failed", st
    return st["error"]


def timed(fn, *args):
    t0 = time.monotonic()
    out = fn(*args)
    return out, time.monotonic() - t0


def assert_ok_answers(c, text="still fine"):
    (status, r), took = timed(c.call, "ok_echo", json.dumps({"text": text}))
    assert (status, r) == (TN_OK, result(text)), (status, r)
    assert took < 1.0, "the healthy server answers at once: %.2fs" % took


def in_thread(fn, *args):
    box = []
    t = threading.Thread(target=lambda: box.append(fn(*args)), daemon=True)
    t.start()
    return t, box


def answering(answer_json=ACCEPT):
    def fn(request_json, responder):
        assert tnlib.answer(responder, answer_json) == TN_OK
        return TN_RESOLVED

    return tnlib.Resolver(fn)


@pytest.fixture(autouse=True)
def _fixture_built():
    if not os.access(FIXTURE, os.X_OK):
        pytest.fail("fixture server not found at %s (run `cargo build --workspace` or set TN_FIXTURE)" % FIXTURE)


@pytest.fixture(scope="module")
def baseline(scripted):
    """The host's thread count once the library's process-lifetime threads exist: after a
    warm-up connect / elicitation / HTTP call / disconnect."""
    c = tnlib.Client({"mcpServers": {"ok": fx(), "web": {"url": scripted + "/sse/mcp", "timeout": 5000}}},
                     answering())
    try:
        assert json.loads(c.result("web_elicit"))["isError"] is False
        assert json.loads(c.result("ok_ask_form"))["isError"] is False
        assert c.result("web_echo", '{"text":"warm"}') == result("echo: warm")
    finally:
        c.disconnect()
    time.sleep(0.3)
    names = thread_names()
    assert "toolnexus-timer" in names and "toolnexus-http" in names, names
    return threads()


class Run:
    """One misbehaving server `bad` (pid from --print-pid-file, for stdio) next to `ok`."""

    def __init__(self, connect, baseline, tmp_path):
        self.connect = connect
        self.baseline = baseline
        self.tmp_path = tmp_path
        self.pids = []
        self.grandchildren = []
        self.client = None

    def start(self, bad, *, resolver=None, extra=None, pid_file=True):
        """Connects {"bad": bad, "ok": fixture, **extra}; returns (client, seconds taken)."""
        assert_threads_back(self.baseline)  # a previous test's teardown may still be winding down
        if pid_file and "command" in bad:
            path, args = pid_file_args(self.tmp_path)
            bad = dict(bad, command=bad["command"] + args)
        ok_path, ok_args = pid_file_args(self.tmp_path, "ok")
        servers = {"bad": bad, "ok": fx(*ok_args)}
        servers.update(extra or {})
        t0 = time.monotonic()
        self.client = self.connect({"mcpServers": servers}, resolver)
        took = time.monotonic() - t0
        if pid_file and "command" in bad:
            self.pids.append(read_pid(path))
        self.pids.append(read_pid(ok_path))
        return self.client, took

    def spawn_grandchild(self, tool="bad_spawn_child"):
        pid = int(json.loads(self.client.result(tool))["output"])
        self.grandchildren.append(pid)
        return pid

    def finish(self, disconnect_bound=1.5):
        """Disconnects (bounded), then checks processes and threads; returns the seconds
        disconnect took."""
        _, took = timed(self.client.disconnect)
        assert took < disconnect_bound, "disconnect took %.2fs (bound %.2fs)" % (took, disconnect_bound)
        for pid in self.pids:
            assert_child_gone(pid)
        for pid in self.grandchildren:
            assert_grandchild_gone(pid)
        assert_threads_back(self.baseline)
        return took


@pytest.fixture
def run(connect, baseline, tmp_path):
    return Run(connect, baseline, tmp_path)


# ---------------------------------------------------------------- start-up


def test_exits_during_initialize(run):
    c, took = run.start(fx("--exit-on-init", 7))
    assert took < 1.5, "connect bounded: %.2fs" % took
    assert statuses(c)["bad"] == {
        "status": "failed",
        "error": "server `bad` failed during `initialize`: the server process exited with status 7; "
                 "stderr: fixture: refusing to initialize"}
    assert statuses(c)["ok"]["status"] == "connected"
    assert c.call("bad_echo", '{"text":"x"}') == (
        TN_ERR_NOT_FOUND,
        "no tool named `bad_echo`: server `bad` failed during `initialize`: the server process "
        "exited with status 7; stderr: fixture: refusing to initialize")
    assert_ok_answers(c)
    assert_child_gone(run.pids[0], within=0.2)  # reaped before tn_connect returned
    run.finish()


def test_answers_initialize_then_exits(run):
    c, took = run.start(fx("--exit-after-init", 4))
    assert took < 1.5, "connect bounded: %.2fs" % took
    assert statuses(c)["bad"] == {
        "status": "failed",
        "error": "server `bad` failed during `tools/list`: the server process exited with status 4; "
                 "stderr: fixture: bye"}
    assert_ok_answers(c)
    assert_child_gone(run.pids[0])
    run.finish()


# ---------------------------------------------------------------- crashes


def test_crashes_with_20_calls_in_flight(run):
    c, _ = run.start(fx())
    run.spawn_grandchild()
    jobs = [in_thread(c.call, "bad_slow", '{"ms":20000}') for _ in range(20)]
    time.sleep(0.3)
    t0 = time.monotonic()
    r = c.result("bad_sleep_then_crash", '{"ms":100,"code":9}')
    for t, _ in jobs:
        t.join(5)
    took = time.monotonic() - t0
    assert took < 2.0, "all 20 in-flight calls failed at once: %.2fs" % took
    why = "the server process exited with status 9; stderr: fixture: crashing with 9"
    for i, (t, box) in enumerate(jobs):
        assert not t.is_alive() and box, "call %d still running" % i
        assert box[0] == (TN_OK, result("server `bad`: tools/call `slow` failed: " + why, True)), (i, box[0])
    assert r == result("server `bad`: tools/call `sleep_then_crash` failed: " + why, True), r
    assert failed(c) == "server `bad` failed after connecting: " + why
    assert_ok_answers(c)
    run.finish()


# ---------------------------------------------------------------- silence


def test_never_answers_initialize(run):
    c, took = run.start(fx("--init-delay-ms", 60000, timeout=500))
    # 500 ms for initialize, then the shutdown of the silent child: stdin closed, 2 s grace, SIGTERM
    assert took < 3.5, "connect bounded: %.2fs" % took
    assert statuses(c)["bad"] == {"status": "failed",
                                  "error": "server `bad` failed during `initialize`: no answer within 500 ms"}
    assert_ok_answers(c)
    assert_child_gone(run.pids[0])
    run.finish()


def test_never_answers_tools_list(run):
    c, took = run.start(fx("--silent-tool-list", timeout=500))
    assert took < 3.5, "connect bounded: %.2fs" % took
    assert statuses(c)["bad"] == {"status": "failed",
                                  "error": "server `bad` failed during `tools/list`: no answer within 500 ms"}
    assert_ok_answers(c)
    assert_child_gone(run.pids[0])
    run.finish()


def test_never_answers_a_call(run):
    c, _ = run.start(fx(timeout=500))
    run.spawn_grandchild()
    t, box = in_thread(c.call, "bad_slow", '{"ms":60000}')
    time.sleep(0.1)
    assert_ok_answers(c, "while bad is silent")
    t.join(3)
    assert not t.is_alive() and box, "the call came back"
    assert box[0] == (TN_OK, result("server `bad`: tools/call `slow` timed out: no answer within 500 ms", True)), box
    # notifications/cancelled was sent for the abandoned request (5: after the era probe 1,
    # initialize 2, tools/list 3 and spawn_child's 4)
    assert c.result("bad_cancelled_ids") == result("[5]")
    ((status, r), took) = timed(c.call, "bad_slow", '{"ms":60000}')
    assert 0.45 <= took < 1.5, "bounded by the 500 ms timeout: %.2fs" % took
    assert json.loads(r)["isError"] and "timed out: no answer within 500 ms" in r, r
    assert statuses(c)["bad"]["status"] == "connected", "a timeout does not fail the server"
    assert_ok_answers(c)
    run.finish()


def test_closes_stdout_but_keeps_running(run):
    c, _ = run.start(fx("--stdout-close-after-init"))
    time.sleep(0.3)
    r, took = timed(c.result, "bad_echo", '{"text":"x"}')
    assert r == result("server `bad`: tools/call `echo` failed: the server closed its stdout; "
                       "stderr: fixture: closed stdout", True), r
    assert took < 1.5, "fails at once, not at the 30 s timeout: %.2fs" % took
    assert failed(c) == ("server `bad` failed after connecting: the server closed its stdout; "
                         "stderr: fixture: closed stdout")
    assert proc_state(run.pids[0])[0] in "SR", "the process is still running"
    assert_ok_answers(c)
    # stdin EOF does not end it: 2 s grace, then SIGTERM
    run.finish(disconnect_bound=3.5)


def test_ignores_sigterm(run):
    c, _ = run.start(fx("--ignore-sigterm", "--ignore-stdin-eof"))
    grandchild = run.spawn_grandchild()
    assert proc_state(grandchild)[0] in "SR"
    assert_ok_answers(c)
    t0 = time.monotonic()
    run.finish(disconnect_bound=5.0)
    assert time.monotonic() - t0 > 2.5, "stdin close, 2 s, SIGTERM (ignored), 1 s, SIGKILL"


# ---------------------------------------------------------------- disconnect


def test_stdout_outlives_the_process(run):
    """Another process holds the server's stdout, so the reader sees EOF only after disconnect
    has reaped the server: it takes the exit status from the reaper rather than polling 500 ms
    for an exit it can no longer see (disconnect then took ~0.7 s instead of ~0.2 s)."""
    c, _ = run.start(fx("--stdout-outlives-exit-ms", 200))
    assert_ok_answers(c)
    took = run.finish(disconnect_bound=0.45)
    assert took > 0.15, "disconnect waits for the reader, which sees EOF after 200 ms: %.2fs" % took


def test_200_disconnects_none_stalls(connect):
    """Disconnecting a quiet server is quick every time: the reader's EOF racing the reap once
    stalled ~500 ms in a few disconnects out of 200 (more under load)."""
    took = []
    for _ in range(200):
        c = connect({"mcpServers": {"fx": fx()}})
        took.append(timed(c.disconnect)[1])
    took.sort()
    assert took[-1] < 0.45, "slowest disconnects: %s" % ", ".join("%.3f" % t for t in took[-5:])


# ---------------------------------------------------------------- bad output


@pytest.mark.parametrize("tool, skipped", [
    ("junk_then_echo", 4),        # not JSON, truncated JSON, \xff\xfe{}, a JSON array
    ("partial_then_echo", 0),     # one line written in 4 pieces, 50 ms apart
    ("bad_utf8_then_echo", 1),    # a response for this id that is not UTF-8, then the real one
])
def test_junk_partial_and_invalid_utf8_lines(run, tool, skipped):
    c, _ = run.start(fx())
    r, took = timed(c.result, "bad_" + tool, '{"text":"after é"}')
    assert r == result("after é"), r
    assert took < 1.5, "%.2fs" % took
    assert c.result("bad_echo", '{"text":"next"}') == result("next")
    bad = statuses(c)["bad"]
    assert bad["status"] == "connected" and bad.get("skippedLines", 0) == skipped, bad
    assert_ok_answers(c)
    run.finish()


def test_partial_line_then_exit(run):
    c, _ = run.start(fx())
    r, took = timed(c.result, "bad_crash_mid_line", '{"code":6}')
    assert r == result("server `bad`: tools/call `crash_mid_line` failed: the server process exited with "
                       "status 6; stderr: fixture: crashing mid-line with 6", True), r
    assert took < 1.5, "%.2fs" % took
    assert_ok_answers(c)
    run.finish()


def test_64_mib_line(run):
    c, _ = run.start(fx())
    run.spawn_grandchild()
    before = rss_mib()
    r, took = timed(c.result, "bad_big_text", '{"bytes":%d}' % (64 * MIB))
    grew = rss_mib() - before
    assert r == result("server `bad`: tools/call `big_text` failed: " + TOO_LONG, True), r[:300]
    assert took < 10, "%.2fs" % took
    # the reader may still hold its (at most 32 MiB) line buffer when the caller wakes
    assert grew < 40, "host RSS grew by %.1f MiB for a 64 MiB line (cap 32 MiB)" % grew
    assert failed(c) == "server `bad` failed after connecting: " + TOO_LONG
    assert c.result("bad_echo", '{"text":"x"}') == result("server `bad`: tools/call `echo` failed: " + TOO_LONG, True)
    assert_ok_answers(c)
    run.finish()
    grew = rss_mib() - before
    assert grew < 8, "the line buffer is released: RSS still %.1f MiB above the start" % grew


# ---------------------------------------------------------------- floods


def test_floods_stderr(run):
    c, took = run.start(fx("--stderr-flood-mb", 16, timeout=10000))
    t0 = time.monotonic()
    for _ in range(4):
        assert c.result("bad_noisy", '{"kb":1024}') == result("noisy done")
        assert_ok_answers(c)
    took = time.monotonic() - t0
    assert took < 6, "stderr drained while calling: %.2fs" % took
    r = c.result("bad_crash", '{"code":4}')
    out = json.loads(r)["output"]
    prefix = "server `bad`: tools/call `crash` failed: the server process exited with status 4; stderr: "
    assert out.startswith(prefix), out[:300]
    assert "fixture: crashing with 4" in out[len(prefix):].split(" | "), out[-300:]
    assert len(r.encode()) < 2600, "the stderr tail is bounded: %d bytes" % len(r.encode())
    assert_ok_answers(c)
    run.finish()


def test_floods_notifications(run):
    c, _ = run.start(fx())
    t, box = in_thread(c.call, "bad_flood_notifications", '{"n":50000}')
    time.sleep(0.05)
    assert_ok_answers(c, "during the flood")
    t.join(10)
    assert not t.is_alive() and box, "the flooding call came back"
    assert box[0] == (TN_OK, result("flooded 50000")), box
    assert c.result("bad_echo", '{"text":"after"}') == result("after")
    bad = statuses(c)["bad"]
    assert bad["status"] == "connected" and "skippedLines" not in bad, bad
    assert_ok_answers(c)
    run.finish()


# ---------------------------------------------------------------- ids


@pytest.mark.parametrize("tool", ["unknown_id_then_echo", "answer_twice"])
def test_unknown_and_duplicate_ids(run, tool):
    c, _ = run.start(fx())
    r, took = timed(c.result, "bad_" + tool, '{"text":"first"}')
    assert r == result("first"), "the first answer for our id wins: " + r
    assert took < 1.0, "%.2fs" % took
    for i in range(20):  # the extra responses never reach a later caller
        assert c.result("bad_echo", '{"text":"n%d"}' % i) == result("n%d" % i)
    bad = statuses(c)["bad"]
    assert bad["status"] == "connected" and "skippedLines" not in bad, bad
    assert_ok_answers(c)
    run.finish()


# ---------------------------------------------------------------- elicitation


NO_RESOLVER = "the server asked for input; no resolver is registered"


def test_elicitation_without_a_resolver(run):
    c, _ = run.start(fx())
    assert "lastElicitationError" not in statuses(c)["bad"]
    # a call in flight on the same server when the question arrives (stdio: every such call
    # is concerned, §4), and one on the other server (not concerned)
    slow, slow_box = in_thread(c.result, "bad_slow", '{"ms":600}')
    other, other_box = in_thread(c.result, "ok_slow", '{"ms":600}')
    time.sleep(0.2)
    r, took = timed(c.result, "bad_ask_form")
    # the library answers -32601 at once (it did not offer the capability); the server says so,
    # and the output's last line says why (§4 "Capability"); isError is the server's
    assert r == result('elicitation error: {"code":-32601,"message":"Method not found"}\n'
                       + NO_RESOLVER, True), r
    assert took < 1.0, "%.2fs" % took
    assert statuses(c)["bad"]["lastElicitationError"] == NO_RESOLVER
    assert "lastElicitationError" not in statuses(c)["ok"]
    slow.join(5)
    other.join(5)
    assert slow_box == [result("slept 600\n" + NO_RESOLVER)], slow_box
    assert other_box == [result("slept 600")], other_box
    # later calls are not concerned
    assert c.result("bad_echo", '{"text":"x"}') == result("x")
    assert json.loads(json.loads(c.result("bad_client_info"))["output"])["capabilities"] == {}
    assert_ok_answers(c)
    run.finish()


@pytest.mark.parametrize("mode", ["inline", "deferred"])
def test_1000_elicitations_at_once(run, mode):
    answered = []
    lock = threading.Lock()
    pool = ThreadPoolExecutor(max_workers=8) if mode == "deferred" else None

    def answer(responder):
        status = tnlib.answer(responder, ACCEPT)
        with lock:
            answered.append(status)

    def fn(request_json, responder):
        if pool is None:
            answer(responder)
            return TN_RESOLVED
        pool.submit(answer, responder)
        return TN_DEFERRED

    resolver = tnlib.Resolver(fn)
    try:
        c, _ = run.start(fx(), resolver=resolver)
        r, took = timed(c.result, "bad_ask_many", '{"n":1000}')
        assert r == result("accepted 1000 of 1000"), r
        assert took < 20, "%.2fs" % took
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
    assert len(answered) == 1000 and set(answered) == {TN_OK}, (len(answered), set(answered))
    assert resolver.errors == []
    bad = statuses(run.client)["bad"]
    assert bad["status"] == "connected" and "lastElicitationError" not in bad, bad
    assert_ok_answers(run.client)
    run.finish()


# ---------------------------------------------------------------- HTTP


def http_run(run, scripted, scenario, timeout=1000):
    """`bad` = the scripted scenario; siblings: `ok` (stdio) and `okh` (healthy HTTP)."""
    return run.start({"url": "%s/%s/mcp" % (scripted, scenario), "timeout": timeout},
                     extra={"okh": {"url": scripted + "/json/mcp", "timeout": 5000}})


@pytest.mark.parametrize("scenario, cause, bound", [
    # an SSE reply cut by a TCP reset half-way through an event
    ("reset", "the event stream failed before the response: connection reset", 1.0),
    # a JSON reply (Content-Length) cut by a TCP reset half-way through the body
    ("resetjson", "reading the body failed: connection reset by peer", 1.0),
    ("error500", "HTTP 500 Internal Server Error: boom", 1.0),
    ("error503", "HTTP 503 Service Unavailable: overloaded, try again later", 1.0),
    ("badsse", "the event stream failed before the response: an event is not utf-8 text", 1.0),
    ("redirect", "more than 8 redirects", 1.0),
])
def test_http_failures(run, scripted, scenario, cause, bound):
    c, took = http_run(run, scripted, scenario)
    assert took < 1.5, "connect: %.2fs" % took
    assert statuses(c)["bad"]["status"] == "connected", statuses(c)
    for _ in range(2):
        (status, r), took = timed(c.call, "bad_echo", '{"text":"x"}')
        assert status == TN_OK and json.loads(r)["isError"] is True, r
        out = json.loads(r)["output"]
        assert out.startswith("server `bad`: tools/call `echo` failed: "), out
        assert cause.lower() in out.lower(), "cause %r not in %r" % (cause, out)
        assert "s3cr3t" not in out
        assert took < bound, "%.2fs" % took
    assert c.result("okh_echo", '{"text":"h"}') == result("echo: h")
    assert_ok_answers(c)
    run.finish()


def test_http_slow_drip_times_out(run, scripted):
    c, _ = http_run(run, scripted, "drip", timeout=1000)
    t, box = in_thread(c.call, "bad_echo", '{"text":"x"}')
    time.sleep(0.2)
    assert c.result("okh_echo", '{"text":"during"}') == result("echo: during")
    assert_ok_answers(c, "during the drip")
    t.join(5)
    assert not t.is_alive() and box
    assert box[0] == (TN_OK, result("server `bad`: tools/call `echo` timed out: no answer within 1000 ms", True)), box
    ((status, r), took) = timed(c.call, "bad_echo", '{"text":"x"}')
    assert 0.95 <= took < 2.0, "one byte every 200 ms never beats the 1000 ms call timeout: %.2fs" % took
    assert r == result("server `bad`: tools/call `echo` timed out: no answer within 1000 ms", True), r
    assert c.result("okh_echo", '{"text":"h"}') == result("echo: h")
    assert_ok_answers(c)
    run.finish()


@pytest.mark.parametrize("scenario, cause", [
    ("huge", "the reply is longer than maxMessageBytes (33554432 bytes)"),
    ("hugesse", "an event is longer than maxMessageBytes (33554432 bytes)"),
])
def test_http_100_mib_body(run, scripted, scenario, cause):
    c, _ = http_run(run, scripted, scenario, timeout=10000)
    before = rss_mib()
    for _ in range(2):
        (status, r), took = timed(c.call, "bad_echo", '{"text":"x"}')
        out = json.loads(r)["output"]
        assert status == TN_OK and json.loads(r)["isError"] is True, r[:300]
        assert out.startswith("server `bad`: tools/call `echo` failed: ") and cause in out, out[:300]
        assert took < 5, "stops reading at the cap, not after 100 MiB: %.2fs" % took
    grew = rss_mib() - before
    assert grew < 24, "host RSS grew by %.1f MiB for two 100 MiB replies" % grew
    assert c.result("okh_echo", '{"text":"h"}') == result("echo: h")
    assert_ok_answers(c)
    run.finish()
