#!/usr/bin/env bash
# Installs what the tests need beyond cargo, into .cache/ (idempotent, nothing global; a second
# run is a no-op): the third-party MCP peers (@modelcontextprotocol/server-everything from npm,
# the Python `mcp` SDK from PyPI) and pytest, in a venv the tests use for every Python test; and
# the official conformance harnesses (0.1.16 and 0.2.0-alpha.12, with the Node 22 they need).
set -euo pipefail
cd "$(dirname "$0")/.."
PEERS=${PEERS_DIR:-.cache/peers}
EVERYTHING_VERSION=2026.8.31
MCP_PY_VERSION=2.3.0
PYTEST_VERSION=8.3.4
# pytest-xdist: the Python suites wait on servers far more than they compute (pytest runs at a
# few % CPU), so scripts/test runs their files in two workers.
XDIST_VERSION=3.6.1
mkdir -p "$PEERS/npm"
have=$(node -p "try{require(require('path').resolve('$PEERS/npm/node_modules/@modelcontextprotocol/server-everything/package.json')).version}catch(e){''}")
if [ "$have" != "$EVERYTHING_VERSION" ]; then
  npm install --prefix "$PEERS/npm" --no-audit --no-fund --loglevel=error \
    "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION"
fi
# MCP 2026-07-28 peers: the TypeScript SDK 2.4 server (tests/peers/ts_peer.mjs), in a prefix of
# its own so that its dependencies never move server-everything's.
MODERN_SERVER_VERSION=2.4.0
have=$(node -p "try{require(require('path').resolve('$PEERS/npm-modern/node_modules/@modelcontextprotocol/server/package.json')).version}catch(e){''}")
if [ "$have" != "$MODERN_SERVER_VERSION" ]; then
  mkdir -p "$PEERS/npm-modern"
  npm install --prefix "$PEERS/npm-modern" --no-audit --no-fund --loglevel=error \
    "@modelcontextprotocol/server@$MODERN_SERVER_VERSION" "@modelcontextprotocol/node@2.1.2" "zod@4.6.7"
fi
[ -x "$PEERS/py/bin/python" ] || python3 -m venv "$PEERS/py"
"$PEERS/py/bin/python" - "$MCP_PY_VERSION" "$PYTEST_VERSION" "$XDIST_VERSION" <<'PY' 2>/dev/null || \
  "$PEERS/py/bin/pip" install -q --disable-pip-version-check "mcp==$MCP_PY_VERSION" "pytest==$PYTEST_VERSION" \
    "pytest-xdist==$XDIST_VERSION"
import importlib.metadata as m, sys
sys.exit(m.version('mcp') != sys.argv[1] or m.version('pytest') != sys.argv[2]
         or m.version('pytest-xdist') != sys.argv[3])
PY
# FastMCP 4.2 (a dual-era SDK, tests/peers/fastmcp_peer.py), in a venv of its own so that its
# dependencies never move the `mcp` peer's.
FASTMCP_VERSION=4.2.3
[ -x "$PEERS/fastmcp/bin/python" ] || python3 -m venv "$PEERS/fastmcp"
"$PEERS/fastmcp/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('fastmcp') != '$FASTMCP_VERSION')" 2>/dev/null || \
  "$PEERS/fastmcp/bin/pip" install -q --disable-pip-version-check "fastmcp==$FASTMCP_VERSION"
# Preload that pins listen() without a host onto 127.0.0.1 (server-everything binds all interfaces).
cat > "$PEERS/loopback.cjs" <<'JS'
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...a) {
  if (typeof a[0] === "number" || (typeof a[0] === "string" && /^\d+$/.test(a[0]))) {
    if (typeof a[1] !== "string") a.splice(1, 0, "127.0.0.1");
  } else if (a[0] && typeof a[0] === "object" && a[0].path === undefined && a[0].host === undefined) {
    a[0] = { ...a[0], host: "127.0.0.1" };
  }
  return listen.apply(this, a);
};
JS
# The official conformance suite's harnesses, both versions the test command runs:
# ../shared/tools/conformance/run-client.sh installs a version (and a Node 22 from npm) into its
# cache on first use; `--list` does that and nothing else, and is quick once they are there.
export CONFORMANCE_CACHE=${CONFORMANCE_CACHE:-$PWD/.cache/conformance}
for v in 0.1.16 0.2.0-alpha.12; do
  [ -f "$CONFORMANCE_CACHE/conformance-$v/node_modules/@modelcontextprotocol/conformance/dist/index.js" ] ||
    CONFORMANCE_VERSION=$v ../shared/tools/conformance/run-client.sh --list >/dev/null
done
# An authorization server nobody here wrote, for the refresh test (tests/python/test_oauth.py),
# in a prefix of its own: .cache is shared between checkouts.
OAUTH_MOCK_VERSION=9.3.0
mkdir -p "$PEERS/oauth-npm"
have=$(node -p "try{require(require('path').resolve('$PEERS/oauth-npm/node_modules/oauth2-mock-server/package.json')).version}catch(e){''}")
if [ "$have" != "$OAUTH_MOCK_VERSION" ]; then
  npm install --prefix "$PEERS/oauth-npm" --no-audit --no-fund --loglevel=error \
    "oauth2-mock-server@$OAUTH_MOCK_VERSION"
fi
