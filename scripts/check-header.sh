#!/usr/bin/env bash
# The committed header compiles as C99 and C++17 with -Wall -Wextra -Werror, included twice,
# and `nm -D` on the .so exports exactly the functions the header declares.
set -euo pipefail
cd "$(dirname "$0")/.."
LIB=${1:-target/debug/libtoolnexus.so}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '#include "toolnexus.h"\n#include "toolnexus.h"\nint main(void) { return tn_version() == 0; }\n' > "$tmp/twice.c"
cp "$tmp/twice.c" "$tmp/twice.cpp"
gcc -std=c99 -pedantic -Wall -Wextra -Werror -Iinclude -c "$tmp/twice.c" -o "$tmp/c.o"
g++ -std=c++17 -pedantic -Wall -Wextra -Werror -Iinclude -c "$tmp/twice.cpp" -o "$tmp/cpp.o"
echo "header: compiles as C99 and C++17, included twice"
grep -oE '\btn_[a-z_]+\(' include/toolnexus.h | tr -d '(' | sort -u > "$tmp/declared"
nm -D --defined-only "$LIB" | awk '$2 == "T" {print $3}' | sort -u > "$tmp/exported"
if ! diff -u "$tmp/declared" "$tmp/exported"; then
  echo "header: the exported functions differ from the declared ones (- declared, + exported)" >&2
  exit 1
fi
echo "header: $(wc -l < "$tmp/exported") functions declared = exported"
