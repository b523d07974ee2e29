"""Calls the host controls: asyncio, cancel, per-call timeouts, progress. Passes mypy --strict.
Run: python example_async.py /path/to/tn-fixture-server"""
import asyncio
import os
import sys
from typing import List

import toolnexus_c as tn

server = sys.argv[1] if len(sys.argv) > 1 else os.environ["TN_FIXTURE"]
config = {"mcpServers": {"fx": {"command": [server]}}}


def resolver(request: tn.Request) -> tn.Answer:
    return tn.accept({"name": "Ada"}) if request["kind"] == "input" else tn.decline()


async def main(client: tn.Client) -> None:
    # Many calls at once on one thread, none blocking the event loop.
    results: List[tn.ToolResult] = await asyncio.gather(
        *(client.call_async("fx_echo", {"text": str(i)}) for i in range(3)))
    print([r.output for r in results])

    # A per-call timeout: the result says so (is_error), nothing raises.
    late = await client.call_async("fx_slow", {"ms": 5000}, timeout_ms=200)
    print("timed out:", late.is_error)

    # Cancelling the awaiting task cancels the call at the server.
    task = asyncio.create_task(client.call_async("fx_slow", {"ms": 60000}))
    await asyncio.sleep(0.2)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        print("cancelled")


def show(p: tn.Progress) -> None:  # progress arrives in order, before the result
    print("progress %s/%s" % (p.progress, p.total))


with tn.connect(config, resolver) as client:
    asyncio.run(main(client))
    # The synchronous form takes the same options; Ctrl-C while it waits cancels the call.
    r: tn.ToolResult = client.call("fx_echo", {"text": "sync"}, timeout_ms=5000, on_progress=show)
    print(r.output, client.call("fx_ask_form").output)
    try:
        client.call("no_such_tool")
    except tn.NotFound as e:
        print("error:", e, e.code)
