#!/usr/bin/env bash
# Tests the host bindings: Python (ctypes package, pip-installed), Go (cgo, -race with
# GODEBUG=cgocheck=2, against this checkout's debug build: -tags toolnexus_local), C++
# (header-only wrapper, example with -Werror), and the release library's exports. What users
# install (wheel, sdist, `make install` with pkg-config, CMake, C++ and Go consumers) is tested by
# scripts/test-dist.sh. Prints one line per part and "N passed, M failed" last; exits
# non-zero on any failure. Installs what it needs into .cache/ (Go via apt-get when missing).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
export RUST_BACKTRACE=0 CARGO_TERM_COLOR=never
log_dir=target/test-logs/bindings
out=build/bindings
mkdir -p "$log_dir" "$out"
width=32
# shellcheck source=scripts/lib.sh
. scripts/lib.sh # part, setup_failed, apt_install, finish

# The README's example is the example file, verbatim: readme_is FILE README LANG
readme_is() {
  awk -v fence="\`\`\`$3" '$0 == fence {on = 1; next} on && $0 == "```" {exit} on {print}' "$2" | diff -u - "$1" &&
    echo "$2: the example is $1 ($(wc -l <"$1") lines)"
}

echo "== setup"
t0=$SECONDS
if [ ! -x .cache/peers/py/bin/python ]; then
  scripts/install-peers.sh >"$log_dir/install-peers.log" 2>&1 || setup_failed scripts/install-peers.sh "$log_dir/install-peers.log"
fi
cargo build --workspace >"$log_dir/build.log" 2>&1 || setup_failed "cargo build --workspace" "$log_dir/build.log"
# The release library with a soname (target/install), shared by `make install` and the Python wheel.
make -s lib >"$log_dir/build-release.log" 2>&1 || setup_failed "make lib" "$log_dir/build-release.log"
if ! command -v go >/dev/null; then
  apt_install golang-go >"$log_dir/apt-go.log" 2>&1 ||
    setup_failed "apt-get install golang-go" "$log_dir/apt-go.log"
fi
echo "ready in $((SECONDS - t0))s ($(go version | cut -d' ' -f3), $(cargo --version | cut -d' ' -f1-2))"
export TN_FIXTURE=$ROOT/target/debug/tn-fixture-server
export TN_PARITY_VECTORS=$ROOT/../shared/parity/bridge-vectors.jsonl # ../shared/parity from the repo root
[ -f "$TN_PARITY_VECTORS" ] || setup_failed "no parity vectors at $TN_PARITY_VECTORS" /dev/null

# The examples also log in to the TypeScript SDK's example OAuth-protected server (its demo
# authorization server signs in at once); the "browser" is tests/peers/follow_url.py via $BROWSER.
TS_OAUTH=.cache/peers/npm/node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
mcp_port=$(free_port) auth_port=$(free_port)
MCP_PORT=$mcp_port MCP_AUTH_PORT=$auth_port node --require "$ROOT/.cache/peers/loopback.cjs" "$ROOT/$TS_OAUTH" --oauth \
  >"$log_dir/ts-oauth-server.log" 2>&1 &
OAUTH_PID=$!
trap 'kill $OAUTH_PID 2>/dev/null' EXIT
for _ in $(seq 100); do
  python3 -c "import socket,sys; [socket.create_connection(("127.0.0.1", p), 1) for p in ($auth_port, $mcp_port)]" 2>/dev/null && break
  sleep 0.1
done
export TN_OAUTH_URL=http://localhost:$mcp_port/mcp
login() { # login CMD...: runs an example with the OAuth server too; its remote server must connect
  local o
  o=$(BROWSER=$ROOT/tests/peers/follow_url.py "$@" "$TN_OAUTH_URL" 2>&1)
  echo "$o"
  grep -Eq 'remote: connected|"remote":\{"status":"connected"' <<<"$o"
}

# ---------------------------------------------------------------- Python
echo "== python (bindings/python: toolnexus_c)"
PY=$ROOT/.cache/peers/py/bin/python
py_install() {
  "$PY" -c 'import wheel, setuptools_rust' 2>/dev/null ||
    "$PY" -m pip install -q --disable-pip-version-check wheel setuptools-rust || return 1
  # Quick when already installed: skipped unless the package sources or the library changed.
  local stamp=.cache/bindings/python.stamp want
  want=$(cat target/install/release/libtoolnexus.so bindings/python/setup.py bindings/python/pyproject.toml \
    bindings/python/toolnexus_c/* 2>/dev/null | sha256sum | cut -d' ' -f1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && (cd / && "$PY" -c 'import toolnexus_c'); then
    echo "toolnexus-c already installed from these sources"
    return 0
  fi
  "$PY" -m pip install --disable-pip-version-check --no-build-isolation --force-reinstall --no-deps ./bindings/python ||
    return 1
  mkdir -p .cache/bindings && echo "$want" >"$stamp"
  (cd / && "$PY" -c 'import toolnexus_c as t, os; p = t.library_path(); print("bundled", p, os.path.getsize(p), "bytes")')
}
py_tests() {
  # Run from the repo root, so `import toolnexus_c` finds the installed package, not the sources.
  env -u TOOLNEXUS_LIB "$PY" -m pytest bindings/python/tests -q -p no:cacheprovider -rs
}
py_example() {
  readme_is bindings/python/example.py bindings/python/README.md python &&
    (cd / && env -u TOOLNEXUS_LIB "$PY" "$ROOT/bindings/python/example.py")
}
part "python: pip install" py_install
part "python: tests" py_tests
part "python: README example" py_example
part "python: example logs in (OAuth)" login env -u TOOLNEXUS_LIB "$PY" "$ROOT/bindings/python/example.py" "$TN_FIXTURE"

# ---- Python: asynchronous calls and typing (a separate block)
# The async example runs against the installed package, and passes `mypy --strict` as a user's
# code would (the package ships py.typed); wrong uses are caught, so the types are real. mypy
# lives in its own venv, made once under .cache/bindings.
MYPY_VENV=$ROOT/.cache/bindings/mypy-venv
py_async_example() { (cd / && env -u TOOLNEXUS_LIB "$PY" "$ROOT/bindings/python/example_async.py" "$TN_FIXTURE"); }
py_mypy() {
  # Made again when it does not run (a venv moved or its Python gone).
  if ! "$MYPY_VENV/bin/mypy" --version >/dev/null 2>&1; then
    rm -rf "$MYPY_VENV" && "$PY" -m venv "$MYPY_VENV" &&
      "$MYPY_VENV/bin/pip" install -q --disable-pip-version-check mypy || return 1
  fi
  local dir rc
  dir=$(mktemp -d) || return 1
  cp bindings/python/example_async.py "$dir/" &&
    cat >"$dir/wrong.py" <<'PYEOF'
import toolnexus_c as tn

client = tn.connect({"mcpServers": {}})
n: int = client.call("fx_echo").output


async def main() -> None:
    await client.call_async("fx_echo", timeout_ms="soon")
    client.call("fx_echo", on_progress=lambda p: p.percent)
PYEOF
  # From outside the repository, so mypy sees the installed package, not the sources.
  (cd "$dir" && "$MYPY_VENV/bin/mypy" --strict --python-executable "$PY" example_async.py) || { rm -rf "$dir"; return 1; }
  (cd "$dir" && "$MYPY_VENV/bin/mypy" --strict --python-executable "$PY" wrong.py) >"$dir/wrong.out" 2>&1
  rc=$?
  cat "$dir/wrong.out"
  if [ $rc -eq 0 ] || [ "$(grep -c ': error:' "$dir/wrong.out")" -ne 3 ]; then
    echo "mypy --strict should find exactly 3 errors in wrong.py"; rm -rf "$dir"; return 1
  fi
  rm -rf "$dir"
  echo "mypy --strict: example_async.py clean, 3 wrong uses caught ($("$MYPY_VENV/bin/mypy" --version))"
}
part "python: async example" py_async_example
part "python: mypy --strict" py_mypy

# ---- Python: durable suspension (a separate block)
# The README's suspension example is example_suspend.py verbatim; it runs against the installed
# package and the TypeScript SDK 2.4 server (modern only, stdio): a call suspended by the
# resolver, resumed in a second process. It passes `mypy --strict` as a user's code would.
# (bindings/python/tests/test_suspend.py, run above, is the test proper.)
# SUSPEND_SERVER and resumed() serve the Go and C++ suspension blocks below too.
SUSPEND_SERVER=(node "$ROOT/tests/peers/ts_peer.mjs" stdio-modern)
resumed() { # resumed CMD...: the example's output must show the answer reaching the server
  local o
  o=$(PEER_NODE_MODULES=$ROOT/.cache/peers/npm-modern/node_modules "$@" 2>&1)
  echo "$o"
  grep -q '^The server asked for input; the call is suspended\.$' <<<"$o" &&
    grep -q '^resumed: .*"action":"accept","content":{"name":"Ada"' <<<"$o"
}
py_suspend_example() {
  readme_is bindings/python/example_suspend.py bindings/python/README.md "python resume" &&
    (cd / && resumed env -u TOOLNEXUS_LIB "$PY" "$ROOT/bindings/python/example_suspend.py" "${SUSPEND_SERVER[@]}")
}
py_suspend_mypy() {
  [ -x "$MYPY_VENV/bin/mypy" ] || { echo "no mypy (the mypy part failed?)"; return 1; }
  local dir
  dir=$(mktemp -d) || return 1
  cp bindings/python/example_suspend.py "$dir/" &&
    cat >"$dir/wrong_resume.py" <<'PYEOF'
import toolnexus_c as tn

client = tn.connect({"mcpServers": {}}, lambda request: tn.SUSPEND)
client.resume(42, {})
s: str = client.resume("tn1.x").pending
PYEOF
  (cd "$dir" && "$MYPY_VENV/bin/mypy" --strict --python-executable "$PY" example_suspend.py) || { rm -rf "$dir"; return 1; }
  (cd "$dir" && "$MYPY_VENV/bin/mypy" --strict --python-executable "$PY" wrong_resume.py) >"$dir/wrong.out" 2>&1
  local rc=$?
  cat "$dir/wrong.out"
  if [ $rc -eq 0 ] || [ "$(grep -c ': error:' "$dir/wrong.out")" -ne 2 ]; then
    echo "mypy --strict should find exactly 2 errors in wrong_resume.py"; rm -rf "$dir"; return 1
  fi
  rm -rf "$dir"
  echo "mypy --strict: example_suspend.py clean, 2 wrong uses of resume caught"
}
part "python: suspension README example" py_suspend_example
part "python: suspension mypy --strict" py_suspend_mypy

# ---------------------------------------------------------------- Go
echo "== go (bindings/go)"
export GOPATH=$ROOT/.cache/go/path GOCACHE=$ROOT/.cache/go/cache GOMODCACHE=$ROOT/.cache/go/path/pkg/mod
export GOPROXY=off GOFLAGS=-mod=mod GOTOOLCHAIN=local GO111MODULE=on
# The binding's own tests link this checkout's debug build (the tag); its default build links the
# installed library through pkg-config (scripts/test-dist.sh builds a module with it).
GO_TAGS=(-tags toolnexus_local)
go_vet() { (cd bindings/go && test -z "$(gofmt -l . | tee /dev/stderr)" && go vet "${GO_TAGS[@]}" ./... && echo "gofmt and go vet clean"); }
go_test() {
  local log=$ROOT/$out/go-test.log
  (cd bindings/go && GODEBUG=cgocheck=2 go test "${GO_TAGS[@]}" -race -count=1 -v . >"$log" 2>&1)
  local rc=$?
  grep -Ev '^(=== RUN|    --- PASS|--- PASS)' "$log"
  echo "$(grep -c -- '--- PASS' "$log") tests and subtests passed (go test -race, GODEBUG=cgocheck=2)"
  return $rc
}
go_example() {
  readme_is bindings/go/example/main.go bindings/go/README.md go &&
    (cd bindings/go && go build "${GO_TAGS[@]}" -o "$ROOT/$out/go-example" ./example) && "$out/go-example" "$TN_FIXTURE"
}
part "go: gofmt + vet" go_vet
part "go: test -race cgocheck=2" go_test
part "go: README example" go_example
part "go: example logs in (OAuth)" login "$out/go-example" "$TN_FIXTURE"

# ---- Go: durable suspension (a separate block)
# The README's suspension example is example/suspend/main.go verbatim; run against the TS SDK
# 2.4 modern server, it resumes the suspended call in a second process. (suspend_test.go, run
# by `go test` above, is the test proper.)
go_suspend_example() {
  readme_is bindings/go/example/suspend/main.go bindings/go/README.md "go resume" &&
    (cd bindings/go && go build "${GO_TAGS[@]}" -o "$ROOT/$out/go-example-suspend" ./example/suspend) &&
    resumed "$out/go-example-suspend" "${SUSPEND_SERVER[@]}"
}
part "go: suspension README example" go_suspend_example

# ---------------------------------------------------------------- C++
echo "== c++ (bindings/cpp)"
CXX=${CXX:-g++}
CXXFLAGS=(-std=c++17 -Wall -Wextra -Werror -Iinclude -Ibindings/cpp)
LINK=(-Ltarget/debug -Wl,-rpath,"$ROOT/target/debug" -ltoolnexus -lpthread)
cpp_example() {
  readme_is bindings/cpp/example.cpp bindings/cpp/README.md cpp &&
    "$CXX" "${CXXFLAGS[@]}" bindings/cpp/example.cpp -o "$out/cpp-example" "${LINK[@]}" &&
    "$out/cpp-example" "$TN_FIXTURE"
}
cpp_test() {
  "$CXX" "${CXXFLAGS[@]}" -g -O1 bindings/cpp/test.cpp -o "$out/cpp-test" "${LINK[@]}" &&
    "$out/cpp-test" "$TN_FIXTURE" "$TN_PARITY_VECTORS"
}
cpp_test_asan() {
  "$CXX" "${CXXFLAGS[@]}" -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer \
    bindings/cpp/test.cpp -o "$out/cpp-test-asan" "${LINK[@]}" &&
    ASAN_OPTIONS=detect_leaks=1 "$out/cpp-test-asan" "$TN_FIXTURE" "$TN_PARITY_VECTORS"
}
part "c++: example -Werror, runs" cpp_example
part "c++: example logs in (OAuth)" login "$out/cpp-example" "$TN_FIXTURE"
part "c++: tests" cpp_test
part "c++: tests asan+ubsan" cpp_test_asan

# ---- C++: durable suspension (a separate block)
# The README's suspension example is example_suspend.cpp verbatim, built with -Werror; run
# against the TS SDK 2.4 modern server, it resumes the suspended call in a second process.
# (test.cpp, run above from the repository root, is the test proper.)
cpp_suspend_example() {
  readme_is bindings/cpp/example_suspend.cpp bindings/cpp/README.md "cpp resume" &&
    "$CXX" "${CXXFLAGS[@]}" bindings/cpp/example_suspend.cpp -o "$out/cpp-example-suspend" "${LINK[@]}" &&
    resumed "$out/cpp-example-suspend" "${SUSPEND_SERVER[@]}"
}
part "c++: suspension README example" cpp_suspend_example

# ---------------------------------------------------------------- C release library
echo "== c (release library)"
# The release library exports the header's functions minus the debug-only ones (c-api.md).
part "c: release exports = header" scripts/check-header.sh target/install/release/libtoolnexus.so release

finish
