"""Dual-era MCP test peer on the Python SDK `mcp` 2.3.0 (MCPServer serves 2026-07-28 and legacy).

usage: python py_dual_peer.py stdio
       python py_dual_peer.py http-stateless [--port N]   # stateless_http=True, json_response=True
       python py_dual_peer.py http-stateless-sse [--port N]  # stateless_http=True, SSE replies
       python py_dual_peer.py http            [--port N]  # stateful default (legacy sessions)

Tools:
  echo(text)        plain
  ask_name_dual()   Resolve API: modern -> input_required; legacy -> elicitation/create push
  ask_two()         two Resolve parameters -> two questions in ONE round (modern)
  ask_forever()     returns an InputRequiredResult directly on every round (never completes)
  ask_ctx()         ctx.elicit (legacy-only API; fails in the modern era)
  slow(steps, ms)   ctx.report_progress per step, then a result
Resources: note://hello (text "hello from python"), note://bytes (a blob of b"\x00\x01\xfe\xff"),
  template note://topic/{topic} ("notes on <topic>"). Prompts: greet(name) -> "Hello, <name>!",
  review(code, language="python"). Completions: greet's `name` from ["Ada", "Alan", "Bob"], the
  template's `topic` from ["mcp", "rust"], by prefix.
"""
import json
import sys
from typing import Annotated

import anyio
from mcp.server.mcpserver import (
    AcceptedElicitation,
    Context,
    Elicit,
    ElicitationResult,
    MCPServer,
    Resolve,
)
from mcp_types import ElicitRequest, ElicitRequestFormParams, InputRequiredResult
from pydantic import BaseModel, Field

mcp = MCPServer("py-dual-peer")


class Person(BaseModel):
    name: str = Field(description="Your name")
    age: int = Field(default=30, description="Your age")


class Confirm(BaseModel):
    ok: bool = Field(description="Proceed?")


def ask_person() -> Elicit[Person]:
    return Elicit("Who are you?", Person)


def ask_confirm() -> Elicit[Confirm]:
    return Elicit("Proceed?", Confirm)


def outcome(r):
    if isinstance(r, AcceptedElicitation):
        return {"action": "accept", "content": r.data.model_dump()}
    return {"action": r.action}


@mcp.tool(structured_output=False)
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@mcp.tool(structured_output=False)
async def ask_name_dual(who: Annotated[ElicitationResult[Person], Resolve(ask_person)]) -> str:
    """Asks who you are in both eras (resolver API)."""
    return json.dumps(outcome(who))


@mcp.tool(structured_output=False)
async def ask_two(
    who: Annotated[ElicitationResult[Person], Resolve(ask_person)],
    ok: Annotated[ElicitationResult[Confirm], Resolve(ask_confirm)],
) -> str:
    """Two questions (one round in the modern era)."""
    return json.dumps({"who": outcome(who), "ok": outcome(ok)})


@mcp.tool(structured_output=False)
async def ask_forever(ctx: Context) -> InputRequiredResult | str:
    """Never stops asking (returns InputRequiredResult itself)."""
    n = int(ctx.request_state or "0") + 1
    return InputRequiredResult(
        input_requests={
            f"q{n}": ElicitRequest(
                params=ElicitRequestFormParams(
                    message=f"Question {n}?",
                    requested_schema={"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
                )
            )
        },
        request_state=str(n),
    )


@mcp.tool(structured_output=False)
async def ask_ctx(ctx: Context) -> str:
    """ctx.elicit: the legacy push API."""
    r = await ctx.elicit("Who are you?", Person)
    return json.dumps(outcome(r))


@mcp.tool(structured_output=False)
async def slow(ctx: Context, steps: int = 3, ms: int = 300) -> str:
    """Progress notifications then a result."""
    for i in range(1, steps + 1):
        await anyio.sleep(ms / 1000)
        await ctx.report_progress(i, steps, f"step {i}")
    return f"done after {steps} steps"


@mcp.resource("note://hello", mime_type="text/plain")
def hello_note() -> str:
    """A static note."""
    return "hello from python"


@mcp.resource("note://bytes", mime_type="application/octet-stream")
def bytes_note() -> bytes:
    """A binary note."""
    return b"\x00\x01\xfe\xff"


@mcp.resource("note://topic/{topic}", mime_type="text/plain")
def topic_note(topic: str) -> str:
    """Notes on a topic."""
    return f"notes on {topic}"


@mcp.prompt()
def greet(name: str) -> str:
    """Greets someone."""
    return f"Hello, {name}!"


@mcp.prompt()
def review(code: str, language: str = "python") -> str:
    """Reviews code."""
    return f"Review this {language} code: {code}"


@mcp.completion()
async def complete(ref, argument, context):
    from mcp_types import Completion

    pool = {"name": ["Ada", "Alan", "Bob"], "topic": ["mcp", "rust"]}.get(argument.name, [])
    return Completion(values=[v for v in pool if v.startswith(argument.value)])


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    port = int(sys.argv[sys.argv.index("--port") + 1]) if "--port" in sys.argv else 38600
    if mode == "stdio":
        mcp.run("stdio")
    elif mode == "http-stateless":
        mcp.run("streamable-http", host="127.0.0.1", port=port, stateless_http=True, json_response=True)
    elif mode == "http-stateless-sse":
        mcp.run("streamable-http", host="127.0.0.1", port=port, stateless_http=True)
    elif mode == "http":
        mcp.run("streamable-http", host="127.0.0.1", port=port)
    else:
        sys.exit(f"unknown mode {mode}")
