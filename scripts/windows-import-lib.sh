#!/usr/bin/env bash
# The import library a host built with MSVC links: toolnexus.def, every function of
# include/toolnexus.h (the header is the list of what the DLL exports), and toolnexus.lib made
# from it by mingw-w64's dlltool, both written beside toolnexus.dll in DIR. Checks that the DLL
# exports every function of the header (but the debug build's tn_debug_*, in a release build).
#   scripts/windows-import-lib.sh target/x86_64-pc-windows-gnu/release
#   cl app.c /I include toolnexus.lib      (a host built with MSVC; toolnexus.dll beside app.exe)
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:?usage: $0 DIR (where toolnexus.dll is)}
DEF=$DIR/toolnexus.def
declared=$(grep -oE '\btn_[a-z0-9_]+\(' include/toolnexus.h | tr -d '(' | sort -u)
exported=$(x86_64-w64-mingw32-objdump -p "$DIR/toolnexus.dll" |
  sed -n '/\[Ordinal\/Name Pointer\] Table/,/^$/p' | grep -oE '\btn_[a-z0-9_]+' | sort -u)
# A release build leaves out the debug build's tn_debug_* functions; anything else missing is
# a mismatch between the header and the DLL.
missing=$(comm -23 <(printf '%s\n' "$declared") <(printf '%s\n' "$exported") | grep -v '^tn_debug_' || true)
if [ -n "$missing" ]; then
  echo "toolnexus.dll does not export:" $missing >&2
  exit 1
fi
{
  echo "LIBRARY toolnexus.dll"
  echo "EXPORTS"
  comm -12 <(printf '%s\n' "$declared") <(printf '%s\n' "$exported") | sed 's/^/    /'
} >"$DEF"
x86_64-w64-mingw32-dlltool -m i386:x86-64 -d "$DEF" -D toolnexus.dll -l "$DIR/toolnexus.lib"
echo "$DIR/toolnexus.lib: $(sed -n 's/^    //p' "$DEF" | wc -l) functions"
