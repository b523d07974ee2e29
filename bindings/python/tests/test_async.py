"""Calls the host controls (contract §7) through toolnexus_c: call_async under asyncio, cancel
reaching the server (the fixture's cancelled_ids), per-call timeouts, progress (server-everything's
trigger-long-running-operation), Ctrl-C during a synchronous call, and no growth over many calls."""

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import toolnexus_c as tn
from tn_support import EV, FIXTURE, REPO, config


def cancelled_ids(c):
    return json.loads(c.call("fx_cancelled_ids").output)


def wait_for(cond, timeout=5.0):
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError("timed out waiting")
        time.sleep(0.01)


@pytest.fixture
def ev_config():
    if not (os.path.exists(EV) and shutil.which("node")):
        pytest.skip("server-everything not installed (scripts/install-peers.sh)")
    return {"mcpServers": {"ev": {"command": ["node", EV, "stdio"], "timeout": 10000}}}


# ---------------------------------------------------------------- asyncio


def test_call_async_returns_the_same_results_and_errors_as_call():
    async def main(c):
        r = await c.call_async("fx_echo", {"text": "héllo"})
        assert isinstance(r, tn.ToolResult) and (r.output, r.is_error) == ("héllo", False)
        assert r.json == c.call("fx_echo", {"text": "héllo"}).json
        assert (await c.call_async("fx_add", '{"a":2,"b":3}')).output == "5"
        assert (await c.call_async("fx_fail")).is_error
        with pytest.raises(tn.NotFound, match="^no tool named `nope`$"):
            await c.call_async("nope")
        with pytest.raises(tn.InvalidJson):
            await c.call_async("fx_echo", "{bad")
        with pytest.raises(TypeError):
            await c.call_async("fx_echo", {}, timeout_ms="1s")
        # the elicitation round trip works from an asynchronous call too
        asked = json.loads((await c.call_async("fx_ask_form")).output)
        assert asked["content"]["name"] == "Ada"

    with tn.connect(config(), lambda req: tn.accept({"name": "Ada"})) as c:
        asyncio.run(main(c))


def test_call_async_does_not_block_the_loop_and_runs_concurrently():
    async def main(c):
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        t = asyncio.create_task(ticker())
        t0 = time.monotonic()
        results = await asyncio.gather(*(c.call_async("fx_slow", {"ms": 400}) for _ in range(20)))
        elapsed = time.monotonic() - t0
        t.cancel()
        assert [r.output for r in results] == ["slept 400"] * 20
        assert elapsed < 20 * 0.4 / 2, elapsed  # they overlapped
        assert ticks >= 10, ticks  # the loop went on while they ran
        many = await asyncio.gather(*(c.call_async("fx_echo", {"text": str(i)}) for i in range(200)))
        assert [r.output for r in many] == [str(i) for i in range(200)]

    with tn.connect(config()) as c:
        asyncio.run(main(c))


def test_cancelling_the_task_cancels_the_call_at_the_server():
    async def main(c):
        assert cancelled_ids(c) == []
        task = asyncio.create_task(c.call_async("fx_slow", {"ms": 30000}))
        await asyncio.sleep(0.3)
        t0 = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert time.monotonic() - t0 < 1.0
        # the server saw notifications/cancelled for that request (one id)
        wait_for(lambda: len(cancelled_ids(c)) == 1)
        ids = cancelled_ids(c)
        # asyncio.wait_for's timeout cancels the same way
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(c.call_async("fx_slow", {"ms": 30000}), 0.3)
        wait_for(lambda: len(cancelled_ids(c)) == 2)
        ids2 = cancelled_ids(c)
        assert ids2[0] == ids[0] and ids2[1] != ids[0], ids2
        # the server goes on serving
        assert (await c.call_async("fx_echo", {"text": "after"})).output == "after"

    with tn.connect(config()) as c:
        asyncio.run(main(c))
        assert not tn._pending, "every call's entry is released once done fired"


def test_a_task_cancelled_after_the_result_is_harmless():
    async def main(c):
        task = asyncio.create_task(c.call_async("fx_echo", {"text": "x"}))
        assert (await task).output == "x"
        task.cancel()  # already finished: nothing to cancel
        assert cancelled_ids(c) == []

    with tn.connect(config()) as c:
        asyncio.run(main(c))


def test_per_call_timeout_wins_over_the_servers():
    with tn.connect(config(timeout=30000)) as c:
        async def main():
            t0 = time.monotonic()
            r = await c.call_async("fx_slow", {"ms": 5000}, timeout_ms=300)
            assert r.is_error and "300 ms" in r.output, r
            assert time.monotonic() - t0 < 2.0
            assert (await c.call_async("fx_slow", {"ms": 100}, timeout_ms=5000)).output == "slept 100"

        asyncio.run(main())
        t0 = time.monotonic()
        r = c.call("fx_slow", {"ms": 5000}, timeout_ms=300)
        assert r.is_error and "300 ms" in r.output and time.monotonic() - t0 < 2.0, r
        with pytest.raises(tn.InvalidArgument):
            c.call("fx_echo", {"text": "x"}, timeout_ms=-1)


def test_close_completes_awaiting_calls():
    async def main(c):
        tasks = [asyncio.create_task(c.call_async("fx_slow", {"ms": 30000})) for _ in range(5)]
        await asyncio.sleep(0.3)
        t0 = time.monotonic()
        await asyncio.get_running_loop().run_in_executor(None, c.close)
        results = await asyncio.gather(*tasks)
        assert time.monotonic() - t0 < 5
        assert all(r.is_error and "disconnected" in r.output for r in results), results
        with pytest.raises(tn.Closed):
            await c.call_async("fx_echo", {"text": "x"})

    asyncio.run(main(tn.connect(config())))


def test_sync_call_with_options_from_many_threads():
    with tn.connect(config()) as c:
        out = {}

        def worker(i):
            out[i] = c.call("fx_echo", {"text": str(i)}, timeout_ms=10000).output

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert out == {i: str(i) for i in range(16)}


# ---------------------------------------------------------------- progress


def test_progress_in_order_before_the_result(ev_config):
    with tn.connect(ev_config) as c:
        # synchronous: on_progress runs on the calling thread, before call returns
        seen = []
        r = c.call("ev_trigger-long-running-operation", {"duration": 1, "steps": 4},
                   on_progress=lambda p: seen.append((p.progress, p.total, threading.get_ident())))
        assert not r.is_error and "Long running operation completed" in r.output, r
        me = threading.get_ident()
        assert seen == [(1, 4, me), (2, 4, me), (3, 4, me), (4, 4, me)], seen

        # asyncio: on the event loop's thread, in order, before the awaited result
        async def main():
            got = []
            loop_thread = threading.get_ident()

            def on_progress(p):
                assert isinstance(p, tn.Progress) and json.loads(p.json)["progress"] == p.progress
                got.append((p.progress, threading.get_ident()))

            r = await c.call_async("ev_trigger-long-running-operation", {"duration": 1, "steps": 4},
                                   on_progress=on_progress)
            assert not r.is_error, r
            assert got == [(n, loop_thread) for n in (1, 2, 3, 4)], got

        asyncio.run(main())


def test_progress_restarts_a_per_call_timeout(ev_config):
    with tn.connect(ev_config) as c:
        # a 2 s job reporting every 250 ms survives a 700 ms (idle) timeout
        n = []
        r = c.call("ev_trigger-long-running-operation", {"duration": 2, "steps": 8}, timeout_ms=700,
                   on_progress=lambda p: n.append(p.progress))
        assert not r.is_error and len(n) == 8, (r, n)


def test_an_exception_in_on_progress_cancels_the_call(ev_config):
    class Stop(Exception):
        pass

    def stop(p):
        raise Stop(p.progress)

    with tn.connect(ev_config) as c:
        t0 = time.monotonic()
        with pytest.raises(Stop):
            c.call("ev_trigger-long-running-operation", {"duration": 20, "steps": 20}, on_progress=stop)
        assert time.monotonic() - t0 < 5

        async def main():
            t0 = time.monotonic()
            with pytest.raises(Stop):
                await c.call_async("ev_trigger-long-running-operation", {"duration": 20, "steps": 20},
                                   on_progress=stop)
            assert time.monotonic() - t0 < 5

        asyncio.run(main())
        assert "after" in c.call("ev_echo", {"message": "after"}).output
        wait_for(lambda: not tn._pending)


# ---------------------------------------------------------------- Ctrl-C


CHILD = textwrap.dedent("""
    import json, signal, sys, time
    import toolnexus_c as tn
    # Python leaves SIGINT ignored when it started so (a test command run in the background):
    # the handler Ctrl-C raises KeyboardInterrupt through, whatever this process inherited.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    c = tn.connect({"mcpServers": {"fx": {"command": [sys.argv[1]]}}})
    print("ready", flush=True)
    t0 = time.monotonic()
    try:
        c.call("fx_slow", {"ms": 60000})
        print("returned", flush=True)
    except KeyboardInterrupt:
        print("interrupted after %.2f s" % (time.monotonic() - t0), flush=True)
        end = time.monotonic() + 5  # the notification is on its way: wait until the server has it
        while c.call("fx_cancelled_ids").output == "[]" and time.monotonic() < end:
            time.sleep(0.02)
        print("cancelled_ids", c.call("fx_cancelled_ids").output, flush=True)
        raise
""")


def _interrupt_child(script):
    """Runs script (with the fixture's path), sends it SIGINT 0.5 s after it says "ready" (inside
    c.call by then): (stdout, stderr, returncode, seconds from the signal to its end)."""
    proc = subprocess.Popen([sys.executable, "-c", script, FIXTURE], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd="/")
    try:
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(0.5)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        # Generous: the child waits up to 5 s for the server to note the cancel, then
        # disconnects, on a machine that may be loaded (a call running to its end takes 60 s).
        out, err = proc.communicate(timeout=45)
        return out, err, proc.returncode, time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_ctrl_c_during_a_synchronous_call_cancels_it():
    out, err, returncode, elapsed = _interrupt_child(CHILD)
    lines = out.splitlines()
    assert lines and lines[0].startswith("interrupted after"), (out, err)
    assert "returned" not in out
    ids = json.loads(lines[1].split(" ", 1)[1])
    assert len(ids) == 1, (out, err)  # the server was told
    assert "KeyboardInterrupt" in err.splitlines()[-1], err
    assert returncode != 0
    # SIGINT came about 0.5 s into the call: it was seen within one wait slice, not at the end
    assert float(lines[0].split()[2]) < 1.5, lines[0]
    assert elapsed < 30, elapsed


CHILD_OWN_HANDLER = textwrap.dedent("""
    import signal, sys, time
    import toolnexus_c as tn
    class Stop(Exception):
        pass
    def handler(signum, frame):
        raise Stop("the host's own SIGINT handler")
    signal.signal(signal.SIGINT, handler)
    c = tn.connect({"mcpServers": {"fx": {"command": [sys.argv[1]]}}})
    print("ready", flush=True)
    t0 = time.monotonic()
    try:
        c.call("fx_slow", {"ms": 60000})
        print("returned", flush=True)
    except Stop:
        print("stopped after %.2f s" % (time.monotonic() - t0), flush=True)
        end = time.monotonic() + 5
        while c.call("fx_cancelled_ids").output == "[]" and time.monotonic() < end:
            time.sleep(0.02)
        print("cancelled_ids", c.call("fx_cancelled_ids").output, flush=True)
""")


def test_a_sigint_handler_of_the_hosts_own_runs_during_the_call_and_its_raise_cancels_it():
    out, err, _, _ = _interrupt_child(CHILD_OWN_HANDLER)
    lines = out.splitlines()
    assert lines and lines[0].startswith("stopped after"), (out, err)
    assert float(lines[0].split()[2]) < 1.5, lines[0]
    assert len(json.loads(lines[1].split(" ", 1)[1])) == 1, (out, err)


@pytest.mark.parametrize("sigint", [signal.default_int_handler, signal.SIG_IGN])
def test_a_plain_call_on_the_main_thread_does_not_take_the_asynchronous_path(monkeypatch, sigint):
    # It used to start an asynchronous call and poll a queue (three times the
    # latency of the same call from a worker thread); now it waits in the library, watched for
    # SIGINT when Python raises KeyboardInterrupt for it, plainly when SIGINT is ignored (a test
    # command run in the background, a daemon started with nohup).
    assert threading.current_thread() is threading.main_thread()
    old = signal.signal(signal.SIGINT, sigint)

    def refuse(*a, **k):
        raise AssertionError("a plain main-thread call went through tn_call_tool_async")

    try:
        _plain_main_thread_calls(monkeypatch, refuse)
    finally:
        signal.signal(signal.SIGINT, old)


def _plain_main_thread_calls(monkeypatch, refuse):
    with tn.connect(config()) as c:
        monkeypatch.setattr(tn.Client, "_starter", refuse)
        assert c.call("fx_echo", {"text": "main"}).output == "main"
        r = c.call("fx_slow", {"ms": 5000}, timeout_ms=300)
        assert r.is_error and "300 ms" in r.json
        with pytest.raises(tn.InvalidArgument, match="timeoutMs"):
            c.call("fx_echo", {"text": "x"}, timeout_ms=-1)
        with pytest.raises(tn.NotFound):
            c.call("nope")


@pytest.mark.skipif(not hasattr(signal, "SIGWINCH"), reason="POSIX signals")
def test_other_signals_neither_cancel_a_main_thread_call_nor_are_lost_to_another_wakeup_fd():
    # Someone else's wakeup fd (asyncio's, say) is in place: the call stands in for it, forwards
    # what it reads, and puts it back; a signal like SIGWINCH does not cancel the call, and its
    # Python handler runs once the call returns.
    seen = []
    old_handler = signal.signal(signal.SIGWINCH, lambda signum, frame: seen.append(signum))
    r, w = os.pipe()
    os.set_blocking(w, False)
    os.set_blocking(r, False)
    prev = signal.set_wakeup_fd(w)
    try:
        with tn.connect(config()) as c:
            threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGWINCH)).start()
            res = c.call("fx_slow", {"ms": 1000})
            assert (res.is_error, res.output) == (False, "slept 1000")
            assert seen == [signal.SIGWINCH]
            assert cancelled_ids(c) == []
            assert signal.set_wakeup_fd(w) == w  # theirs was put back
        wait_for(lambda: _readable(r))
        assert os.read(r, 16) == bytes([signal.SIGWINCH])  # and got the signal
    finally:
        signal.set_wakeup_fd(prev)
        signal.signal(signal.SIGWINCH, old_handler)
        os.close(r)
        os.close(w)


def _readable(fd):
    import select
    return bool(select.select([fd], [], [], 0)[0])


def test_no_wakeup_fd_is_left_behind_by_a_main_thread_call():
    # A SIGINT between calls must not reach the watcher (it would cancel the next call).
    prev = signal.set_wakeup_fd(-1)
    try:
        with tn.connect(config()) as c:
            assert c.call("fx_echo", {"text": "x"}).output == "x"
            assert signal.set_wakeup_fd(-1) == -1
    finally:
        signal.set_wakeup_fd(prev)


@pytest.mark.skipif(not hasattr(signal, "SIGUSR1"), reason="POSIX signals")
def test_a_sigusr1_handler_runs_while_a_main_thread_call_waits():
    # A program that handles SIGTERM, SIGALRM, SIGUSR1, … to stop or time out gets its handler
    # run during the call (the sliced wait), not only when the call returns.
    ran_at = []
    old_handler = signal.signal(signal.SIGUSR1, lambda signum, frame: ran_at.append(time.monotonic()))
    try:
        with tn.connect(config()) as c:
            threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGUSR1)).start()
            res = c.call("fx_slow", {"ms": 2000})
            ended = time.monotonic()
            assert (res.is_error, res.output) == (False, "slept 2000")
            assert len(ran_at) == 1 and ended - ran_at[0] > 1.0, (ran_at, ended)
    finally:
        signal.signal(signal.SIGUSR1, old_handler)


# ---------------------------------------------------------------- reentrancy and leaks


def test_a_resolver_can_start_an_asynchronous_call():
    box = {}

    def resolver(req):
        async def inner():
            return await box["client"].call_async("fx_echo", {"text": "inner"})

        # a plain synchronous call from the inline resolver is still refused (Reentrant) ...
        try:
            box["client"].call("fx_echo", {"text": "x"})
        except tn.Reentrant as e:
            box["reentrant"] = e
        # ... while an asynchronous one is only started here and finishes later
        box["future"] = threading.Thread(target=lambda: box.update(inner=asyncio.run(inner())))
        box["future"].start()
        return tn.accept({"name": "x"})

    with tn.connect(config(), resolver) as c:
        box["client"] = c
        assert json.loads(c.call("fx_ask_form").output)["content"]["name"] == "x"
        box["future"].join(10)
        assert box["inner"].output == "inner"
        assert isinstance(box["reentrant"], tn.Reentrant)


def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_no_growth_over_many_async_calls_with_cancels():
    text = "x" * 2048

    async def batch(c, n, start):
        tasks = [asyncio.create_task(c.call_async("fx_echo", {"text": text}) if i % 10 else
                                     c.call_async("fx_slow", {"ms": 10000}))
                 for i in range(start, start + n)]
        # The slow calls are cancelled once the echoes started after them are done: by then each
        # slow call's request is out (its thread started first), so each cancel reaches the
        # server. A fixed sleep was too short on a loaded machine: a call cancelled before its
        # request went out ends without one, and the server counted fewer.
        await asyncio.wait([t for i, t in enumerate(tasks) if i % 10])
        await asyncio.sleep(0.05)
        for i, t in enumerate(tasks):
            if i % 10 == 0:
                t.cancel()
        done = await asyncio.gather(*tasks, return_exceptions=True)
        assert sum(isinstance(d, asyncio.CancelledError) for d in done) == n // 10
        assert all(d.output == text for d in done if isinstance(d, tn.ToolResult))

    async def main(c):
        for k in range(5):
            await batch(c, 200, k * 200)
        base = rss()
        for k in range(25):
            await batch(c, 200, k * 200)
        return rss() - base

    with tn.connect(config()) as c:
        growth = asyncio.run(main(c))
        wait_for(lambda: not tn._pending)
        assert len(cancelled_ids(c)) == 600
    assert growth < 8 * 1024 * 1024, growth
    assert not tn._callback_errors, list(tn._callback_errors)
