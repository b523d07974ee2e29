#!/usr/bin/env bash
# Every tn_* function declared in include/toolnexus.h is wrapped by each binding, or listed
# below with the reason it is not. What counts as wrapped:
#   python  bindings/python/toolnexus_c/*.py call it: `.tn_NAME` (lib().tn_NAME(…), or passed
#           to call_out), beyond its ctypes signature;
#   go      a non-test .go file of bindings/go calls C.tn_NAME(…), or calls C.tn_go_X(…) where
#           shim.c's tn_go_X calls tn_NAME(…);
#   c++     bindings/cpp/toolnexus.hpp calls tn_NAME(…) outside a // comment.
# Exits non-zero naming what is missing, and an exemption that names nothing in the header.
set -uo pipefail
cd "$(dirname "$0")/.."

# Not wrapped on purpose: "BINDING NAME REASON" (BINDING: python, go, c++ or all).
EXEMPT=$(cat <<'EOF'
all tn_debug_force_panic debug-only (c-api.md): exported by debug builds alone; each binding's tests reach it on their own (tests/python/tnlib.py, Go's internal/debugapi, test.cpp)
EOF
)

header=include/toolnexus.h
mapfile -t functions < <(grep -v '^typedef' "$header" |
  sed -nE 's/^[A-Za-z_][A-Za-z0-9_ ]*[ *](tn_[a-z0-9_]+)\(.*/\1/p' | sort -u)
[ ${#functions[@]} -gt 0 ] || { echo "no tn_ function found in $header"; exit 1; }

exempt() { # exempt BINDING NAME: the reason, or nothing
  awk -v b="$1" -v n="$2" '($1 == b || $1 == "all") && $2 == n { $1 = ""; $2 = ""; sub(/^  /, ""); print; exit }' <<<"$EXEMPT"
}

py_src=$(cat bindings/python/toolnexus_c/*.py)
go_files=$(ls bindings/go/*.go | grep -v '_test\.go$')
go_src=$(cat $go_files)
cpp_src=$(sed 's#//.*##' bindings/cpp/toolnexus.hpp)
# shim.c: "tn_go_X tn_NAME" for each tn_ function each shim function calls.
shim_calls=$(awk '
  /^[A-Za-z_][A-Za-z0-9_ ]*[ *]tn_go_[a-z0-9_]+\(/ { match($0, /tn_go_[a-z0-9_]+\(/); fn = substr($0, RSTART, RLENGTH - 1) }
  fn != "" {
    line = $0
    while (match(line, /[^a-z0-9_]tn_[a-z0-9_]+\(/)) {
      name = substr(line, RSTART + 1, RLENGTH - 2)
      if (name !~ /^tn_go_/) print fn, name
      line = substr(line, RSTART + RLENGTH)
    }
  }
  /^}/ { fn = "" }' bindings/go/shim.c)

wrapped() { # wrapped BINDING NAME
  local n=$2
  case $1 in
    python) grep -qE "\.${n}\b" <<<"$py_src" ;;
    go)
      grep -qE "\bC\.${n}\(" <<<"$go_src" && return 0
      local shim
      for shim in $(awk -v n="$n" '$2 == n { print $1 }' <<<"$shim_calls"); do
        grep -qE "\bC\.${shim}\(" <<<"$go_src" && return 0
      done
      return 1 ;;
    c++) grep -qE "\b${n}\(" <<<"$cpp_src" ;;
  esac
}

missing=0 listed=0
for b in python go c++; do
  for n in "${functions[@]}"; do
    if wrapped "$b" "$n"; then
      continue
    fi
    why=$(exempt "$b" "$n")
    if [ -n "$why" ]; then
      listed=$((listed + 1))
      continue
    fi
    echo "$b: $n is not wrapped (wrap it, or list it in scripts/check-bindings.sh with a reason)"
    missing=$((missing + 1))
  done
done
# An exemption must name a function of the header.
while read -r b n _; do
  [ -n "$n" ] || continue
  printf '%s\n' "${functions[@]}" | grep -qx "$n" || { echo "exemption for $n ($b): no such function in $header"; missing=$((missing + 1)); }
done <<<"$EXEMPT"

if [ $missing -gt 0 ]; then
  echo "$missing missing"
  exit 1
fi
echo "${#functions[@]} functions of $header wrapped by python, go and c++ ($listed exempt, listed with a reason)"
