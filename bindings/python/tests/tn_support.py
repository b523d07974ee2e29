"""Shared helpers: the fixture MCP server and the parity vectors.

TN_FIXTURE: the fixture server binary (default: <repo>/target/debug/tn-fixture-server).
TN_PARITY_VECTORS: the vectors (default: <repo>/../shared/parity/bridge-vectors.jsonl).
The tests import the *installed* toolnexus_c (run pytest from outside bindings/python).
"""

import os

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
FIXTURE = os.environ.get("TN_FIXTURE") or os.path.join(REPO, "target", "debug", "tn-fixture-server")
VECTORS = os.environ.get("TN_PARITY_VECTORS") or os.path.normpath(
    os.path.join(REPO, "..", "shared", "parity", "bridge-vectors.jsonl"))


def config(*args, **extra):
    """An MCP config with one fixture server named fx."""
    entry = {"command": [FIXTURE, *args]}
    entry.update(extra)
    return {"mcpServers": {"fx": entry}}


# server-everything (scripts/install-peers.sh): its trigger-long-running-operation reports progress
EV = os.path.join(REPO, ".cache", "peers", "npm", "node_modules", "@modelcontextprotocol", "server-everything",
                  "dist", "index.js")
