#!/usr/bin/env bash
# Runs the official conformance suites' basic scenarios (every scenario but auth/*) N times
# (default 10), each time for both harness versions, while two busy loops keep both cores of a
# 2-core machine loaded: the timing paths (standalone GET vs. the call's stream, resumption after
# `retry:`, the era probe) must hold under load, not only on a quiet machine (contract §5, §6).
# 0.1.16's basic suite is its 4 scenarios; 0.2.0-alpha.12's is 15, of which the 11 it adds
# (the 2026-07-28 ones, Skills) run here: its own copies of 0.1.16's four (initialize,
# tools_call, elicitation-sep1034-client-defaults, sse-retry) would add some 45 s to the test
# command for what the 0.1.16 runs already load-test (they run once, in the full alpha.12 pass).
# Prints one line per run and version and "N passed, M failed" last (N + M = 2 × runs).
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10}
export CONFORMANCE_CACHE=${CONFORMANCE_CACHE:-$PWD/.cache/conformance}
SHARED_WITH_0_1_16=(initialize tools_call elicitation-sep1034-client-defaults sse-retry)
# version, what its basic suite must print, the scenarios skipped
versions=("0.1.16|4 passed, 0 failed|" "0.2.0-alpha.12|11 passed, 0 failed|${SHARED_WITH_0_1_16[*]}")
busy=()
for _ in 1 2; do
  python3 -c "while True: pass" &
  busy+=($!)
done
trap 'kill "${busy[@]}" 2>/dev/null; wait 2>/dev/null' EXIT
passed=0 failed=0
for i in $(seq 1 "$runs"); do
  for v in "${versions[@]}"; do
    IFS='|' read -r version want skip <<<"$v"
    skips=()
    for s in $skip; do skips+=(--skip "$s"); done
    t0=$SECONDS
    out=$(CONFORMANCE_VERSION=$version ../shared/tools/conformance/run-client.sh --suite basic "${skips[@]}" \
      -- tests/conformance/client 2>&1)
    last=$(printf '%s\n' "$out" | tail -n 1)
    if [ "$last" = "$want" ]; then
      passed=$((passed + 1)); echo "run $i, $version: $last ($((SECONDS - t0)) s)"
    else
      failed=$((failed + 1)); echo "run $i, $version: FAILED"; printf '%s\n' "$out" | sed 's/^/    | /'
    fi
  done
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
