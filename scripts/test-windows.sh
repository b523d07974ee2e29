#!/usr/bin/env bash
# The Windows build checked under Wine. scripts/test runs each part as a suite:
#   scripts/test-windows.sh build   cargo build --target x86_64-pc-windows-gnu: toolnexus.dll,
#                                   its import and static libraries, the fixture server, the CLI
#   scripts/test-windows.sh c       the C tests (lib.sh's C_TESTS_WINDOWS) built with mingw-w64,
#                                   run under Wine against the Windows fixture server
#   scripts/test-windows.sh bindings the Go package's tests and a C++ wrapper test, built for
#                                   Windows, under Wine
#   scripts/test-windows.sh rust    the library's Rust unit tests (the platform layer's, the
#                                   bridge's), with Wine as the target runner
#   scripts/test-windows.sh net     HTTP and HTTPS (tls.caFile, SSL_CERT_FILE, an unknown issuer)
#                                   between the Windows builds of the library and the fixture
#   scripts/test-windows.sh wheel   the Python package's win_amd64 wheel (not in scripts/test)
# One target dir (target/, triple x86_64-pc-windows-gnu) for every Windows build.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh # C_TESTS_WINDOWS
eval "$(scripts/install-windows.sh --env)"
T=x86_64-pc-windows-gnu
TD=${CARGO_TARGET_DIR:-target}
case $TD in /*) ;; *) TD=$PWD/$TD ;; esac
OUT=$TD/$T/debug
W=build/win

case "${1:-all}" in
build)
  cargo build --target "$T" -p toolnexus-c -p tn-fixture-server -p toolnexus-cli --lib --bins
  scripts/windows-import-lib.sh "$OUT" # toolnexus.def and toolnexus.lib, for MSVC hosts
  ls "$OUT/toolnexus.dll" "$OUT/libtoolnexus.dll.a" "$OUT/libtoolnexus.a" "$OUT/toolnexus.lib" \
    "$OUT/tn-fixture-server.exe" "$OUT/toolnexus.exe"
  echo "windows build: ok"
  ;;
c)
  mkdir -p "$W"
  for t in "${C_TESTS_WINDOWS[@]}"; do
    # -static: the tests' own pthread and libgcc inside; the library through its import library.
    x86_64-w64-mingw32-gcc -std=gnu11 -g -O1 -Wall -Wextra -Werror -Iinclude -Itests/c \
      "tests/c/$t.c" -o "$W/$t.exe" -L"$OUT" -l:libtoolnexus.dll.a -static -lpthread
  done
  # The guard test again, linked through toolnexus.lib (dlltool's, for MSVC hosts) instead.
  x86_64-w64-mingw32-gcc -std=gnu11 -O1 -Iinclude -Itests/c tests/c/guard.c -o "$W/guard-lib.exe" \
    "$OUT/toolnexus.lib" -static -lpthread
  cp "$OUT/toolnexus.dll" "$W/"
  export TN_FIXTURE=$OUT/tn-fixture-server.exe
  rc=0
  "$WINE" "$W/guard-lib.exe" | tail -n 1 || rc=1
  "$WINE" "$W/parity.exe" ../shared/parity/bridge-vectors.jsonl | tail -n 1 || rc=1
  "$WINE" "$W/guard.exe" | tail -n 1 || rc=1
  # stdout_closed_but_running: under Wine a child that closes its stdout (CloseHandle of its
  # standard handle included) keeps the pipe open until it exits; seen with a plain Linux pipe
  # as the reader too, so not the library's doing. Left to real Windows.
  "$WINE" "$W/client.exe" -stdout_closed_but_running | tail -n 1 || rc=1
  "$WINE" "$W/resources.exe" | tail -n 1 || rc=1
  exit $rc
  ;;
rust)
  # Every unit test of the library (88: the platform layer's own in sys::tests against the
  # Windows fixture server, the bridge, the mapping, the FFI guards), Wine as the runner.
  cargo build --target "$T" -p tn-fixture-server
  export TN_FIXTURE=$OUT/tn-fixture-server.exe
  cargo test --target "$T" -p toolnexus-c --lib
  ;;
bindings)
  # Go: the package's tests built for Windows (cgo with mingw-w64) and run under Wine against
  # the Windows fixture server (the tests that need node skip: no node inside Wine). C++: the
  # wrapper built with mingw-w64 g++ (the posix thread model: GCC 12's win32 one has no
  # std::mutex) in a smoke test under Wine.
  mkdir -p "$W"
  cp "$OUT/toolnexus.dll" "$W/"
  export TN_FIXTURE=$OUT/tn-fixture-server.exe
  (cd bindings/go && GOOS=windows GOARCH=amd64 CGO_ENABLED=1 CC=x86_64-w64-mingw32-gcc \
    go test -c -tags toolnexus_local -o "../../$W/go.test.exe" .)
  (cd bindings/go && "$WINE" "../../$W/go.test.exe")
  x86_64-w64-mingw32-g++-posix -std=c++17 -Wall -Wextra -Werror -Iinclude -Ibindings/cpp \
    tests/windows/cpp_smoke.cpp -o "$W/cpp-smoke.exe" -L"$OUT" -l:libtoolnexus.dll.a -static
  "$WINE" "$W/cpp-smoke.exe" "$TN_FIXTURE"
  ;;
net)
  # HTTP and HTTPS: the Windows fixture server's HTTP mode under Wine, the Windows library in a C
  # test under Wine (tests/windows/net.c); certificates made here by the openssl command.
  mkdir -p "$W/pki"
  x86_64-w64-mingw32-gcc -std=gnu11 -O1 -Wall -Wextra -Werror -Iinclude -Itests/c \
    tests/windows/net.c -o "$W/net.exe" -L"$OUT" -l:libtoolnexus.dll.a -static
  cp "$OUT/toolnexus.dll" "$W/"
  (cd "$W/pki" &&
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem \
      -days 2 -subj /CN=tn-test-ca -addext basicConstraints=critical,CA:TRUE \
      -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null &&
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout server.key -out server.csr \
      -subj /CN=localhost 2>/dev/null &&
    printf 'basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n' >server.ext &&
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem \
      -days 2 -extfile server.ext 2>/dev/null)
  serve() { # serve LOGNAME ARGS...: a fixture under Wine; its URL on stdout once it listens
    local log=$W/$1.out; shift
    "$WINE" "$OUT/tn-fixture-server.exe" --http 127.0.0.1:0 "$@" >"$log" 2>&1 &
    echo $! >"$log.pid"
    for _ in $(seq 300); do
      grep -q '^listening on' "$log" 2>/dev/null && break
      sleep 0.1
    done
    sed -n 's/^listening on \([^ ]*\).*/\1/p' "$log" | tr -d '\r'
  }
  http=$(serve http)
  https=$(serve https --tls-cert "$W/pki/server.pem" --tls-key "$W/pki/server.key")
  rc=0
  ca=$(winepath -w "$W/pki/ca.pem" 2>/dev/null || echo "Z:$PWD/$W/pki/ca.pem")
  ca=${ca//\\//}
  [ -n "$http" ] && [ -n "$https" ] || { echo "a fixture did not start: $(cat "$W"/http*.out)"; rc=1; }
  if [ $rc -eq 0 ]; then
    "$WINE" "$W/net.exe" "$http" "$ca" plain | tail -n 1 || rc=1
    "$WINE" "$W/net.exe" "$https" "$ca" cafile | tail -n 1 || rc=1
    SSL_CERT_FILE=$ca "$WINE" "$W/net.exe" "$https" "$ca" env | tail -n 1 || rc=1
    "$WINE" "$W/net.exe" "$https" "$ca" none | tail -n 1 || rc=1
  fi
  for p in "$W"/http.out.pid "$W"/https.out.pid; do kill "$(cat "$p")" 2>/dev/null || true; done
  exit $rc
  ;;
wheel)
  # The Python package's win_amd64 wheel: setup.py with CARGO_BUILD_TARGET, the release DLL
  # inside (a release cross-build: minutes cold, so not in scripts/test). The build venv is
  # scripts/test-dist.sh's (setuptools-rust, wheel).
  VENV=${VENV:-$TD/dist/buildvenv}
  [ -x "$VENV/bin/pip" ] || { echo "no build venv at $VENV (scripts/test-dist.sh makes it)"; exit 1; }
  rm -rf "$W/wheel" "$W/wheel-unpacked"
  CARGO_BUILD_TARGET=$T CARGO_TARGET_DIR=$TD/install \
    "$VENV/bin/pip" wheel -q --no-build-isolation --no-deps -w "$W/wheel" ./bindings/python
  whl=$(ls "$W"/wheel/toolnexus_c-*-py3-none-win_amd64.whl)
  mkdir -p "$W/wheel-unpacked" && (cd "$W/wheel-unpacked" && python3 -m zipfile -e "$OLDPWD/$whl" .)
  dll=$W/wheel-unpacked/toolnexus_c/toolnexus.dll
  x86_64-w64-mingw32-objdump -f "$dll" | grep -q 'file format pei-x86-64' || { echo "no PE32+ toolnexus.dll in $whl"; exit 1; }
  ! x86_64-w64-mingw32-objdump -h "$dll" | grep -q '\.debug_' || { echo "debug sections in the wheel's DLL"; exit 1; }
  [ -f "$W/wheel-unpacked/toolnexus_c/LICENSE-MIT" ] || { echo "no license texts in the wheel"; exit 1; }
  cp "$dll" "$W/wheel-unpacked/" && scripts/windows-import-lib.sh "$W/wheel-unpacked" >/dev/null
  echo "$(basename "$whl"): toolnexus.dll, $(grep -c '^    tn_' "$W/wheel-unpacked/toolnexus.def") functions exported"
  ;;
all)
  "$0" build && "$0" c && "$0" rust && "$0" bindings && "$0" net
  ;;
*)
  echo "usage: $0 [build|c|rust|bindings|net|wheel|all]" >&2
  exit 2
  ;;
esac
