"""Long-lived hosts through toolnexus_c: on_event and the async iterator of events,
against the fixture: a killed server restarted, a tool-list change, a log message."""

import asyncio
import os
import signal
import threading
import time

import toolnexus_c as tn
from tn_support import config


def wait_for(events, lock, match, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with lock:
            for e in events:
                if match(e):
                    return e
        time.sleep(0.02)
    raise AssertionError("no matching event; seen: %r" % events)


def test_on_event_sees_a_restart_a_list_change_and_a_log_message():
    events, lock, threads = [], threading.Lock(), set()

    def on_event(e):
        with lock:
            events.append(e)
            threads.add(threading.get_ident())

    with tn.connect(config("--live", restart={"backoffMs": 100}, logLevel="warning"), on_event=on_event) as c:
        assert c.call("fx_toggle_tool", {"on": True}).output == "live_extra on"
        e = wait_for(events, lock, lambda e: e["type"] == "tools")
        assert e == {"type": "tools", "server": "fx", "added": ["fx_live_extra"], "removed": [], "changed": []}
        assert "fx_live_extra" in [t["name"] for t in c.tools()]
        c.call("fx_log", {"level": "error", "message": "boom"})
        e = wait_for(events, lock, lambda e: e["type"] == "log")
        assert e == {"type": "log", "server": "fx", "level": "error", "data": "boom"}
        os.kill(int(c.call("fx_pid").output), signal.SIGKILL)
        e = wait_for(events, lock, lambda e: e.get("status") == "restarting")
        assert e["attempt"] == 1 and e["lastExit"] == "was killed by signal 9", e
        assert c.call("fx_echo", {"text": "back"}).output == "back"
        wait_for(events, lock, lambda e: e.get("status") == "connected")
        assert c.statuses()["servers"]["fx"]["restarts"] == 1
        assert threading.get_ident() not in threads and len(threads) == 1, "one library thread"
    assert c.event_errors == []


def test_on_event_errors_are_kept_and_do_not_stop_the_events():
    seen = []

    def on_event(e):
        seen.append(e)
        raise ValueError("host bug")

    with tn.connect(config("--live"), on_event=on_event) as c:
        c.call("fx_toggle_tool", {"on": True})
        deadline = time.monotonic() + 10
        while not seen and time.monotonic() < deadline:
            time.sleep(0.02)
        c.call("fx_toggle_tool", {"on": False})
        while len(seen) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(seen) == 2, seen
        assert len(c.event_errors) == 2 and "ValueError: host bug" in c.event_errors[0]


def test_events_as_an_async_iterator_end_when_the_client_closes():
    async def main():
        c = tn.connect(config("--live"))
        stream = c.events()
        await asyncio.get_running_loop().run_in_executor(None, c.call, "fx_toggle_tool", {"on": True})
        first = await asyncio.wait_for(stream.__anext__(), 10)
        assert first["type"] == "tools" and first["added"] == ["fx_live_extra"], first
        await asyncio.get_running_loop().run_in_executor(None, c.call, "fx_toggle_tool", {"on": False})
        second = await asyncio.wait_for(stream.__anext__(), 10)
        assert second["removed"] == ["fx_live_extra"], second
        await asyncio.get_running_loop().run_in_executor(None, c.close)
        rest = [e async for e in stream]  # ends: the client closed
        assert rest == [] and stream.dropped == 0

    asyncio.run(main())
