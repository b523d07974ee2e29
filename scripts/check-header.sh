#!/usr/bin/env bash
# The committed header compiles as C99 and C++17 with -Wall -Wextra -Werror, included twice, with
# and without TOOLNEXUS_DEBUG_API; every name it defines (macro, type, tag, enum constant,
# function) starts with tn_, TN_ or TOOLNEXUS_; and `nm -D` on the .so exports exactly the
# functions the header declares for the library's build profile (c-api.md "Debug-only": a debug
# build also exports the functions under TOOLNEXUS_DEBUG_API, a release build does not).
#
#   scripts/check-header.sh [LIB [debug|release]]
#
# The profile defaults to release for a library under a `release/` directory, else debug.
set -euo pipefail
cd "$(dirname "$0")/.."
LIB=${1:-target/debug/libtoolnexus.so}
case "$LIB" in */release/*) default_profile=release ;; *) default_profile=debug ;; esac
PROFILE=${2:-$default_profile}
case "$PROFILE" in debug | release) ;; *) echo "usage: $0 [LIB [debug|release]]" >&2; exit 2 ;; esac
HEADER=include/toolnexus.h
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# 1. Compiles, included twice, in C and C++, with and without the debug API.
printf '#include "toolnexus.h"\n#include "toolnexus.h"\nint main(void) { return tn_version() == 0; }\n' > "$tmp/twice.c"
cp "$tmp/twice.c" "$tmp/twice.cpp"
for debug in "" -DTOOLNEXUS_DEBUG_API; do
  gcc -std=c99 -pedantic -Wall -Wextra -Werror $debug -Iinclude -c "$tmp/twice.c" -o "$tmp/c.o"
  g++ -std=c++17 -pedantic -Wall -Wextra -Werror $debug -Iinclude -c "$tmp/twice.cpp" -o "$tmp/cpp.o"
done
echo "header: compiles as C99 and C++17, included twice, with and without TOOLNEXUS_DEBUG_API"

# 2. Every name the header defines is prefixed. The header without comments, directives kept:
gcc -fpreprocessed -dD -E -P -x c "$HEADER" > "$tmp/code.h"
# cbindgen's output is regular enough for line patterns: one declaration per line, enum
# constants one per line inside their braces.
awk '
  function word_before(s, suffix,   m) { # the identifier right before a regex suffix
    if (match(s, "[A-Za-z_][A-Za-z0-9_]*" suffix)) { m = substr(s, RSTART, RLENGTH); sub(suffix "$", "", m); sub(/[^A-Za-z0-9_].*$/, "", m); return m }
    return ""
  }
  /^[ \t]*#[ \t]*define[ \t]/ { sub(/^[ \t]*#[ \t]*define[ \t]+/, ""); sub(/[^A-Za-z0-9_].*$/, ""); print "macro " $0; next }
  /^[ \t]*#/ { next }
  in_enum && /}/ { in_enum = 0 }
  in_enum { n = $0; sub(/^[ \t]+/, "", n); sub(/[^A-Za-z0-9_].*$/, "", n); if (n != "") print "enum-constant " n; next }
  /(^|[^A-Za-z0-9_])enum[^;]*\{/ && !/}/ { in_enum = 1 }
  {
    line = $0
    while (match(line, /(struct|union|enum)[ \t]+[A-Za-z_][A-Za-z0-9_]*/)) {
      tag = substr(line, RSTART, RLENGTH); sub(/^(struct|union|enum)[ \t]+/, "", tag); print "tag " tag
      line = substr(line, RSTART + RLENGTH)
    }
  }
  /^[ \t]*typedef/ {
    if ($0 ~ /\(\*[ \t]*[A-Za-z_]/) { n = $0; sub(/^[^(]*\(\*[ \t]*/, "", n); sub(/[^A-Za-z0-9_].*$/, "", n); print "typedef " n }
    else if ($0 ~ /;[ \t]*$/) { n = word_before($0, "[ \t]*;[ \t]*$"); if (n != "") print "typedef " n }
    next
  }
  /^[ \t]*}[ \t]*[A-Za-z_][A-Za-z0-9_]*[ \t]*;/ { n = $0; sub(/^[ \t]*}[ \t]*/, "", n); sub(/[^A-Za-z0-9_].*$/, "", n); print "typedef " n; next }
  /^[A-Za-z_].*[A-Za-z0-9_][ \t]*\(/ && !/^[ \t]*(extern|typedef|struct|union|enum)[ \t]*("C")?[ \t]*\{?[ \t]*$/ {
    n = $0; sub(/[ \t]*\(.*$/, "", n); sub(/^.*[^A-Za-z0-9_]/, "", n); print "function " n
  }
' "$tmp/code.h" | sort -u > "$tmp/names"
grep -vE ' (tn_|TN_|TOOLNEXUS_)' "$tmp/names" > "$tmp/unprefixed" || true
if [ -s "$tmp/unprefixed" ]; then
  echo "header: names without a tn_/TN_/TOOLNEXUS_ prefix (make the Rust item pub(crate), or exclude it in cbindgen.toml):" >&2
  sed 's/^/  /' "$tmp/unprefixed" >&2
  exit 1
fi
echo "header: $(wc -l < "$tmp/names") names, all prefixed tn_/TN_/TOOLNEXUS_"

# 3. Declared (for this profile) = exported.
debug_define=()
[ "$PROFILE" = debug ] && debug_define=(-DTOOLNEXUS_DEBUG_API)
gcc -E -P -x c "${debug_define[@]}" "$HEADER" | grep -oE '\btn_[a-z_]+\(' | tr -d '(' | sort -u > "$tmp/declared"
nm -D --defined-only "$LIB" | awk '$2 == "T" {print $3}' | sort -u > "$tmp/exported"
if ! diff -u "$tmp/declared" "$tmp/exported"; then
  echo "header: the exported functions of this $PROFILE build differ from the declared ones (- declared, + exported)" >&2
  exit 1
fi
echo "header: $(wc -l < "$tmp/exported") functions declared = exported ($PROFILE build)"
