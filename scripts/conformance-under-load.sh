#!/usr/bin/env bash
# Runs the official conformance basic suite N times (default 10) while two busy loops keep both
# cores of a 2-core machine loaded: the timing paths (standalone GET vs. the call's stream,
# resumption after `retry:`) must hold under load, not only on a quiet machine (contract §5).
# Prints one line per run and "N passed, M failed" last.
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10}
busy=()
for _ in 1 2; do
  python3 -c "while True: pass" &
  busy+=($!)
done
trap 'kill "${busy[@]}" 2>/dev/null; wait 2>/dev/null' EXIT
passed=0 failed=0
for i in $(seq 1 "$runs"); do
  out=$(../shared/tools/conformance/run-client.sh --suite basic -- tests/conformance/client 2>&1)
  last=$(printf '%s\n' "$out" | tail -n 1)
  if [ "$last" = "4 passed, 0 failed" ]; then
    passed=$((passed + 1)); echo "run $i: $last"
  else
    failed=$((failed + 1)); echo "run $i: FAILED"; printf '%s\n' "$out" | sed 's/^/    | /'
  fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
