#!/usr/bin/env bash
# Races and undefined behaviour (docs/hardening.md "Races"). scripts/test runs each
# part as a suite:
#   scripts/test-races.sh build           the library (cdylib only) with ThreadSanitizer on
#                                         nightly (-Zsanitizer=thread -Zbuild-std, target/tsan);
#                                         the threaded C tests and tests/c/stress.c with clang
#                                         -fsanitize=thread (build/c-tsan); the stress host with
#                                         gcc plain (build/c) and with ASan + UBSan (build/c-asan)
#   scripts/test-races.sh tsan NAME [ARGS]  runs build/c-tsan/NAME: fails on any TSan report
#   scripts/test-races.sh asan NAME [ARGS]  runs build/c-asan/NAME (AddressSanitizer + UBSan)
#   scripts/test-races.sh miri            cargo +nightly miri test over the modules with no FFI
#                                         and no system calls (MIRI_FILTERS below)
#   scripts/test-races.sh setup           only the installs (idempotent): clang from Debian
#                                         (GCC 12's libtsan lacks __tsan_memcpy/__tsan_memset,
#                                         which rustc's instrumentation calls), rust-src, miri
# Needs target/debug (cargo build --workspace: the fixture server, the plain library).
set -euo pipefail
cd "$(dirname "$0")/.."
export TN_FIXTURE=${TN_FIXTURE:-$PWD/target/debug/tn-fixture-server}
HOST=$(rustc +nightly -vV 2>/dev/null | sed -n 's/^host: //p' || true)
TSAN_LIB=$PWD/target/tsan/${HOST:-unknown}/debug
# shellcheck source=scripts/lib.sh
. scripts/lib.sh # C_TESTS_TSAN, apt_install, nightly_toolchain
TSAN_TESTS=("${C_TESTS_TSAN[@]}")
SUPPRESSIONS=$PWD/tests/tsan/suppressions.txt
# The pure modules: JSON text and canonical form, the MCP mapping, config, the SSE parser, the
# HTTP/1.1 framing of the direct path and the sans-I/O streamable HTTP rules. A test among them
# that opens a socket or a process says `#[cfg_attr(miri, ignore = "…")]`.
MIRI_FILTERS=(json:: mapping:: config:: transport::sse:: transport::http::direct:: transport::http::protocol:: session::list:: conn::subscriptions::)

# The clang whose ThreadSanitizer runtime links the C hosts: the LLVM of rustc nightly when
# Debian has it (the instrumentation and the runtime then agree), else a recent one.
find_clang() {
  local llvm dir
  llvm=$(rustc +nightly -vV 2>/dev/null | sed -n 's/^LLVM version: \([0-9]*\).*/\1/p')
  for v in $llvm 22 19; do
    command -v "clang-$v" >/dev/null || continue
    dir=$("clang-$v" -print-resource-dir)
    if ls "$dir"/lib/*/libclang_rt.tsan*.a >/dev/null 2>&1; then echo "clang-$v"; return 0; fi
  done
  return 1
}

setup() {
  nightly_toolchain # lib.sh
  local have
  have=$(rustup component list --toolchain nightly --installed 2>/dev/null)
  grep -q '^rust-src' <<<"$have" || rustup component add rust-src --toolchain nightly
  grep -q '^miri' <<<"$have" || rustup component add miri --toolchain nightly
  if ! find_clang >/dev/null; then
    local llvm
    llvm=$(rustc +nightly -vV | sed -n 's/^LLVM version: \([0-9]*\).*/\1/p')
    local v tried=" "
    for v in $llvm 22 19; do # apt_install (lib.sh): one at a time across the run's lanes
      [[ $tried == *" $v "* ]] && continue
      tried+="$v "
      apt_install --with-recommends "clang-$v" "libclang-rt-$v-dev" && break
    done
  fi
  find_clang >/dev/null || { echo "no clang with a ThreadSanitizer runtime"; exit 1; }
}

build() {
  setup
  local clang
  clang=$(find_clang)
  # The cdylib alone (no staticlib, rlib or tests), std instrumented too; line tables are
  # enough for the reports' stacks and halve the link.
  RUSTFLAGS="-Zsanitizer=thread" CARGO_PROFILE_DEV_DEBUG=line-tables-only \
    cargo +nightly rustc -p toolnexus-c --lib --crate-type cdylib -Zbuild-std --target "$HOST" \
    --target-dir target/tsan
  mkdir -p build/c build/c-asan build/c-tsan
  local cflags=(-std=gnu11 -g -O1 -Wall -Wextra -Werror -Iinclude -Itests/c)
  for t in "${TSAN_TESTS[@]}"; do
    "$clang" "${cflags[@]}" -fsanitize=thread "tests/c/$t.c" -o "build/c-tsan/$t" \
      -L"$TSAN_LIB" -Wl,-rpath,"$TSAN_LIB" -ltoolnexus -lpthread
  done
  local plain=(-Ltarget/debug -Wl,-rpath,"$PWD/target/debug" -ltoolnexus -lpthread)
  gcc "${cflags[@]}" tests/c/stress.c -o build/c/stress "${plain[@]}"
  gcc "${cflags[@]}" -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer \
    tests/c/stress.c -o build/c-asan/stress "${plain[@]}"
  echo "races build: $clang, ${TSAN_TESTS[*]} under TSan, stress plain and under ASan"
}

# Runs a test under TSan; its stderr is kept whole in target/test-logs/tsan-NAME.log. Fails on
# the test's own failure and on any report (TSan's exit code 66, and the text, in case a test
# ends itself with _exit).
tsan() {
  local name=$1 log out tag
  tag=$(printf '%s' "$*" | tr -c 'a-zA-Z0-9_-' _)
  log=target/test-logs/tsan-$tag.log out=target/test-logs/tsan-$tag.out
  mkdir -p target/test-logs
  local opts="second_deadlock_stack=1 history_size=4 print_suppressions=1"
  [ -s "$SUPPRESSIONS" ] && opts="$opts suppressions=$SUPPRESSIONS"
  local rc=0
  TSAN_OPTIONS="$opts ${TSAN_OPTIONS:-}" "build/c-tsan/$@" >"$out" 2>"$log" || rc=$?
  cat "$out"
  local reports
  reports=$(grep -c '^WARNING: ThreadSanitizer' "$log" || true)
  if [ "$reports" -gt 0 ]; then
    grep -m 1 -A 40 '^WARNING: ThreadSanitizer' "$log"
    echo "$name under TSan: $reports reports (all of them in $log)"
    return 1
  fi
  [ $rc -eq 0 ] || { tail -n 40 "$log"; echo "$name under TSan: failed (exit $rc; $log)"; return 1; }
  local matched
  matched=$(sed -n 's/^ThreadSanitizer: Matched \([0-9]*\) suppressions.*/\1/p' "$log" | tail -n 1)
  echo "$name under TSan: $(tail -n 1 "$out"), no report${matched:+ ($matched suppressed: tests/tsan/suppressions.txt)}"
}

asan() {
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  "build/c-asan/$@"
}

miri() {
  setup
  # Isolation off for the clock only (elicitation ids carry the time); none of these tests
  # touches files, sockets or processes.
  MIRIFLAGS="-Zmiri-disable-isolation ${MIRIFLAGS:-}" \
    cargo +nightly miri test -p toolnexus-c --lib -- "${MIRI_FILTERS[@]}"
  echo "miri: no undefined behaviour found in the tests of ${MIRI_FILTERS[*]}"
}

case "${1:-}" in
setup) setup ;;
build) build ;;
tsan) shift; tsan "$@" ;;
asan) shift; asan "$@" ;;
miri) miri ;;
*) echo "usage: scripts/test-races.sh setup|build|tsan NAME [ARGS]|asan NAME [ARGS]|miri"; exit 2 ;;
esac
