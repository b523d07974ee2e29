"""toolnexus_c against tests/fixture-server: connect, list, call, elicitation, errors, threads."""

import concurrent.futures
import json
import os
import subprocess
import sys
import threading
import time

import pytest

import toolnexus_c as tn
from tn_support import FIXTURE, REPO, config


def test_bundled_library_is_used():
    if os.environ.get("TOOLNEXUS_LIB"):
        pytest.skip("TOOLNEXUS_LIB overrides the bundled library")
    pkg = os.path.dirname(os.path.abspath(tn.__file__))
    assert tn.library_path() == os.path.join(pkg, "libtoolnexus.so")
    assert os.path.exists(tn.library_path())
    assert tn.version() == "0.1.0"
    for name in ("LICENSE-MIT", "LICENSE-APACHE"):  # the bundled binary's license texts
        assert os.path.exists(os.path.join(pkg, name)), name


def test_connect_list_call_statuses():
    with tn.connect(config()) as c:
        st = c.statuses()
        assert st["servers"]["fx"]["status"] == "connected"
        tools = c.tools()
        names = [t["name"] for t in tools]
        assert names == sorted(names) and "fx_echo" in names and "fx_dots_and_spaces" in names
        echo = next(t for t in tools if t["name"] == "fx_echo")
        assert echo["server"] == "fx" and echo["remoteName"] == "echo" and echo["source"] == "mcp"
        r = c.call("fx_echo", {"text": "héllo 😀"})
        assert (r.output, r.is_error, r.metadata) == ("héllo 😀", False, None)
        assert c.call("fx_add", '{"a":2,"b":3}').output == "5"
        assert c.call("fx_cwd").is_error is False  # args None = {}
        fail = c.call("fx_fail", {})
        assert fail.is_error and "first problem" in fail.output
        img = c.call("fx_image", {})
        assert img.metadata and img.metadata["parts"][0]["type"] == "image"


def test_config_as_text_and_failed_server_does_not_raise():
    cfg = json.dumps({"mcpServers": {"ok": {"command": [FIXTURE]}, "bad": {"command": ["/nonexistent/prog"]}}})
    with tn.connect(cfg) as c:
        st = c.statuses()["servers"]
        assert st["ok"]["status"] == "connected"
        assert st["bad"]["status"] == "failed" and "cannot start `/nonexistent/prog`" in st["bad"]["error"]


def test_errors_carry_the_library_message():
    with pytest.raises(tn.InvalidJson) as e:
        tn.connect("{bad")
    assert str(e.value) == "config_json is not JSON: key must be a string at line 1 column 2"
    assert e.value.status == 2 and e.value.code == "TN_ERR_INVALID_JSON"
    with pytest.raises(tn.ConfigError) as e:
        tn.connect([1])
    assert str(e.value) == "the config must be a JSON object, got an array"
    with tn.connect(config()) as c:
        with pytest.raises(tn.NotFound) as e:
            c.call("nope", {})
        assert str(e.value) == "no tool named `nope`"
        assert isinstance(e.value, tn.ToolnexusError)
        with pytest.raises(tn.InvalidJson, match="^args_json is not JSON: "):
            c.call("fx_echo", "{bad")
    with pytest.raises(tn.Closed):
        c.call("fx_echo", {"text": "x"})
    c.close()  # idempotent
    with pytest.raises(tn.InvalidArgument) as e:
        tn.answer_to_result('{"ok":"yes"}')
    assert str(e.value) == "Answer `ok` must be a boolean, got a string"


# tn_debug_force_panic is debug-only (c-api.md "Debug-only"): the bundled release library does
# not export it, so the panic path is checked in a child process on the checkout's debug build.
_DEBUG_LIB = os.path.join(REPO, "target", "debug", "libtoolnexus.so")
_PANIC_CHILD = """
import ctypes
import toolnexus_c as tn
from toolnexus_c import _ffi
force = _ffi.lib().tn_debug_force_panic
force.restype, force.argtypes = ctypes.c_int32, [ctypes.c_char_p]
err = _ffi.error_for(force(b"boom from python"))
assert isinstance(err, tn.Panic) and "boom from python" in str(err), repr(err)
print("panic ok")
"""


def test_release_library_has_no_debug_api():
    if os.environ.get("TOOLNEXUS_LIB"):
        pytest.skip("TOOLNEXUS_LIB overrides the bundled library")
    assert not hasattr(tn._ffi.lib(), "tn_debug_force_panic")


def test_panic_status_is_raised_as_panic():
    if not os.path.exists(_DEBUG_LIB):
        pytest.skip("no debug build at %s (run `cargo build`)" % _DEBUG_LIB)
    env = dict(os.environ, TOOLNEXUS_LIB=_DEBUG_LIB)
    child = subprocess.run([sys.executable, "-c", _PANIC_CHILD], cwd="/", env=env,
                           capture_output=True, text=True, timeout=60)
    assert child.returncode == 0 and child.stdout.strip() == "panic ok", child.stderr


def _ask(c, tool="fx_ask_form"):
    r = c.call(tool, {})
    assert not r.is_error, r
    return json.loads(r.output)


def test_elicitation_accept_decline_cancel():
    seen = []
    mode = {"v": "accept"}

    def resolver(req):
        seen.append(req)
        if mode["v"] == "accept":
            return tn.accept({"name": "Ada"}, id=req["id"])
        if mode["v"] == "decline":
            return tn.decline()
        if mode["v"] == "cancel":
            return tn.cancel()
        if mode["v"] == "none":
            return None
        if mode["v"] == "text":
            return '{"ok":true,"data":{"name":"Raw"}}'
        if mode["v"] == "invalid":
            return {"ok": "yes"}

    with tn.connect(config(), resolver) as c:
        assert _ask(c) == {"action": "accept", "content": {"name": "Ada", "age": 30, "color": "green"}}
        req = seen[-1]
        assert isinstance(req, dict) and req["kind"] == "input" and req["prompt"] == "Who are you?"
        assert req["id"].startswith("elc-") and json.loads(req.json) == req
        assert "name" in req["data"]["schema"]["properties"]
        mode["v"] = "decline"
        assert _ask(c) == {"action": "decline"}
        mode["v"] = "cancel"
        assert _ask(c) == {"action": "cancel"}
        mode["v"] = "none"
        assert _ask(c) == {"action": "cancel"}
        mode["v"] = "text"
        assert _ask(c)["content"]["name"] == "Raw"
        mode["v"] = "invalid"
        assert _ask(c) == {"action": "cancel"}
        assert "must be a boolean" in c.resolver_errors[-1]
        mode["v"] = "accept"
        assert _ask(c, "fx_ask_url") == {"action": "accept"}
        assert seen[-1]["kind"] == "authorization" and seen[-1]["url"] == "https://example.test/auth"


def test_raising_resolver_is_cancel_and_the_process_goes_on():
    calls = []

    def resolver(req):
        calls.append(req["id"])
        if len(calls) == 1:
            raise RuntimeError("resolver exploded")
        if len(calls) == 2:
            raise KeyboardInterrupt  # even BaseException stays out of C
        return tn.accept({"name": "after"})

    with tn.connect(config(), resolver) as c:
        assert _ask(c) == {"action": "cancel"}
        assert "RuntimeError: resolver exploded" in c.resolver_errors[0]
        assert _ask(c) == {"action": "cancel"}
        assert "KeyboardInterrupt" in c.resolver_errors[1]
        assert _ask(c)["content"]["name"] == "after"
        assert c.call("fx_echo", {"text": "still here"}).output == "still here"
        lastel = c.statuses()["servers"]["fx"]
        assert lastel["status"] == "connected"


def test_deferred_answer_from_another_thread():
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=2)
    resolver_threads = []

    def slow_answer(req):
        time.sleep(0.2)
        return tn.accept({"name": "Later"}, id=req["id"])

    def resolver(req):
        resolver_threads.append(threading.get_ident())
        return pool.submit(slow_answer, req)

    try:
        with tn.connect(config(), resolver) as c:
            t0 = time.monotonic()
            out = _ask(c)
            assert out["content"]["name"] == "Later"
            assert time.monotonic() - t0 >= 0.2
            # the reader thread went on meanwhile: other calls work during a deferred answer
            fut = pool.submit(_ask, c)
            assert c.call("fx_echo", {"text": "meanwhile"}).output == "meanwhile"
            assert fut.result(5)["content"]["name"] == "Later"
    finally:
        pool.shutdown()


def test_deferred_future_failures_are_cancel():
    futures = []

    def resolver(req):
        f = concurrent.futures.Future()
        futures.append(f)
        return f

    with tn.connect(config(), resolver) as c:
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            r = pool.submit(_ask, c)
            _wait_for(lambda: len(futures) == 1)
            futures[0].set_exception(ValueError("no answer today"))
            assert r.result(5) == {"action": "cancel"}
            assert "ValueError: no answer today" in c.resolver_errors[-1]
            r = pool.submit(_ask, c)
            _wait_for(lambda: len(futures) == 2)
            futures[1].cancel()
            assert r.result(5) == {"action": "cancel"}
            # an already-completed future is answered at once
            done = concurrent.futures.Future()
            done.set_result(tn.decline())
            futures.clear()
    with tn.connect(config(), lambda req: done) as c:
        assert _ask(c) == {"action": "decline"}


def test_deferred_answer_never_given_is_cancelled_by_close():
    pending = []

    def resolver(req):
        f = concurrent.futures.Future()
        pending.append(f)
        return f

    c = tn.connect(config(), resolver)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        r = pool.submit(c.call, "fx_ask_form", {})
        _wait_for(lambda: pending)
        t0 = time.monotonic()
        c.close()
        assert time.monotonic() - t0 < 5
        # the call in flight returns promptly: TN_ERR_CLOSED (or a result, had it finished first)
        try:
            res = r.result(10)
            assert res.is_error or json.loads(res.output) == {"action": "cancel"}
        except tn.Closed as e:
            assert str(e) == "the client is disconnected"
    pending[0].set_result(tn.accept({"name": "too late"}))  # answered after close: ignored


def test_eight_threads_call_at_once():
    with tn.connect(config(), lambda req: tn.accept({"name": "T"})) as c:
        barrier = threading.Barrier(8)

        def worker(i):
            barrier.wait()
            t0 = time.monotonic()
            slow = c.call("fx_slow", {"ms": 400})
            dt = time.monotonic() - t0
            assert slow.output == "slept 400", slow
            for j in range(50):
                text = "t%d-%d" % (i, j)
                assert c.call("fx_echo", {"text": text}).output == text
            assert _ask(c)["content"]["name"] == "T"
            return dt

        t0 = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
            durations = list(pool.map(worker, range(8)))
        total = time.monotonic() - t0
        # the eight 400 ms calls overlapped (the GIL is released during tn_call_tool)
        assert total < 8 * 0.4, (total, durations)


def test_call_from_inside_the_resolver_is_reentrant_error():
    box = {}

    def resolver(req):
        try:
            box["client"].call("fx_echo", {"text": "inner"})
        except tn.Reentrant as e:
            box["err"] = e
        return tn.accept({"name": "x"})

    with tn.connect(config(), resolver) as c:
        box["client"] = c
        assert _ask(c)["content"]["name"] == "x"
        assert box["err"].status == 6 and str(box["err"])


def _wait_for(cond, timeout=5.0):
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError("timed out waiting")
        time.sleep(0.01)


def test_close_inside_the_resolver_is_refused():
    box = {}

    def resolver(req):
        with pytest.raises(tn.Reentrant) as e:
            box["client"].close()
        box["msg"] = str(e.value)
        return tn.decline()

    with tn.connect(config(), resolver) as c:
        box["client"] = c
        assert _ask(c) == {"action": "decline"}
        assert "inline resolver" in box["msg"]
        assert not c.closed and c.call("fx_echo", {"text": "alive"}).output == "alive"
    assert c.closed


def test_tools_for_a_provider_and_the_pure_mapping():
    with tn.connect(config()) as c:
        anthropic = c.tools_for("anthropic")
        assert anthropic and all("input_schema" in t for t in anthropic)
        assert tn.tools_to_provider(c.tools(), "openai") == c.tools_for("openai")
        assert tn.tools_to_provider(c.tools_json(), "gemini") == c.tools_for("gemini")
        with pytest.raises(tn.InvalidArgument):
            c.tools_for("cohere")
    with pytest.raises(tn.InvalidArgument):
        tn.tools_to_provider([], "cohere")
