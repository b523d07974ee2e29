"""Minimal MCP test peer on the official Python SDK (runs unchanged on mcp 2.x and 1.x).

usage: python peer_server.py stdio
       python peer_server.py http            [--port N]   # streamable HTTP, SSE replies, stateful
       python peer_server.py http-json       [--port N]   # json_response=True  (no elicitation!)
       python peer_server.py http-stateless  [--port N]   # stateless_http=True (no elicitation!)
       python peer_server.py sse             [--port N]   # legacy HTTP+SSE: GET /sse, POST /messages/
(Recipe from shared/docs/real-peers.md §3.1.)
"""
import json
import sys
import uuid

from pydantic import BaseModel, Field

try:  # mcp 2.x
    from mcp.server.mcpserver import Context, MCPServer
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import Context, FastMCP as MCPServer

mcp = MCPServer("peer-py")


class Person(BaseModel):
    name: str = Field(description="Your name")
    age: int = Field(default=30, description="Your age")


@mcp.tool(structured_output=False)
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@mcp.tool(structured_output=False)
async def ask_name(ctx: Context) -> str:
    """Form-mode elicitation: name (string, required), age (integer, default 30)."""
    r = await ctx.elicit("Who are you?", Person)
    if r.action == "accept":
        return json.dumps({"action": "accept", "content": r.data.model_dump()})
    return json.dumps({"action": r.action})


@mcp.tool(structured_output=False)
async def authorize(ctx: Context, url: str = "https://example.com/authorize") -> str:
    """URL-mode elicitation; on accept also sends notifications/elicitation/complete."""
    eid = str(uuid.uuid4())
    r = await ctx.elicit_url("Please authorize in your browser.", url, eid)
    if r.action == "accept":
        await ctx.session.send_elicit_complete(eid, related_request_id=ctx.request_id)
    return json.dumps({"action": r.action, "elicitationId": eid})


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    port = int(sys.argv[sys.argv.index("--port") + 1]) if "--port" in sys.argv else 8000
    transport = {"stdio": "stdio", "sse": "sse"}.get(mode, "streamable-http")
    opts = {"host": "127.0.0.1", "port": port}
    if mode == "http-json":
        opts["json_response"] = True
    elif mode == "http-stateless":
        opts["stateless_http"] = True
    elif mode not in ("stdio", "sse", "http"):
        sys.exit(f"unknown mode {mode}")
    if transport == "stdio":
        mcp.run("stdio")
    elif hasattr(mcp.settings, "port"):  # mcp 1.x keeps transport options in settings
        for k, v in opts.items():
            setattr(mcp.settings, k, v)
        mcp.run(transport)
    else:  # mcp 2.x takes them as run() keywords
        mcp.run(transport, **opts)
