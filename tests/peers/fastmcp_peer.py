"""Dual-era MCP test peer on FastMCP 4.2 (PyPI `fastmcp`, its default configuration: both eras,
stateful streamable-HTTP sessions), for the era-policy tests (tests/python/test_dual_era.py).

usage: python fastmcp_peer.py stdio
       python fastmcp_peer.py http [--port N]             # stateful (the default)
       python fastmcp_peer.py http-stateless [--port N]

Tools:
  echo(text)   plain
  ask_push()   ctx.elicit: a server-initiated elicitation/create (the handshake era)
  ask_mrtr()   the MRTR guard pattern: an InputRequiredResult, completed on the retry (2026-07-28)
Both asking tools answer {"action": ..., "content": ...} as JSON text.
"""
import json
import sys

import mcp_types
from fastmcp import Context, FastMCP
from pydantic import BaseModel, Field

mcp = FastMCP("fastmcp-peer")


class Person(BaseModel):
    name: str = Field(description="Your name")


@mcp.tool(output_schema=None)
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@mcp.tool(output_schema=None)
async def ask_push(ctx: Context) -> str:
    """Asks who you are (ctx.elicit)."""
    r = await ctx.elicit("Who are you?", response_type=Person)
    data = getattr(r, "data", None)
    return json.dumps({"action": r.action, "content": data.model_dump() if data is not None else None})


@mcp.tool(output_schema=None)
async def ask_mrtr(ctx: Context) -> str | mcp_types.InputRequiredResult:
    """Asks who you are through MRTR."""
    if ctx.input_responses and "who" in ctx.input_responses:
        r = ctx.input_responses["who"].model_dump(mode="json", exclude_none=True)
        return json.dumps({"action": r.get("action"), "content": r.get("content")})
    return mcp_types.InputRequiredResult(
        input_requests={"who": mcp_types.ElicitRequest(params=mcp_types.ElicitRequestFormParams(
            message="Who are you?",
            requested_schema={"type": "object", "properties": {"name": {"type": "string", "description": "Your name"}},
                              "required": ["name"]}))},
        request_state="ask-1")


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    port = int(sys.argv[sys.argv.index("--port") + 1]) if "--port" in sys.argv else 38611
    if mode == "stdio":
        mcp.run("stdio", show_banner=False)
    elif mode in ("http", "http-stateless"):
        mcp.run("http", host="127.0.0.1", port=port, show_banner=False, stateless_http=mode == "http-stateless")
    else:
        sys.exit("unknown mode " + mode)
