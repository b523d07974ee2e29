#!/usr/bin/env bash
# Installs what the Windows part of the tests needs, idempotently and quickly when
# already present: the x86_64-pc-windows-gnu Rust target (rustup), the mingw-w64 cross
# compilers and Wine 8 (Debian's gcc-mingw-w64-x86-64, g++-mingw-w64-x86-64, wine64), and a
# Wine prefix under target/wine with the ProcessPrng shim in its system32
# (tests/windows/bcryptprimitives.c: Wine 8 lacks the function Rust's std calls for
# randomness; in system32 it serves every program the tests start, children included).
# With --env, prints the environment the Windows tests use as `export` lines on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
TARGET=x86_64-pc-windows-gnu
export WINEPREFIX=${WINEPREFIX:-$ROOT/target/wine/prefix} WINEDEBUG=-all WINEARCH=win64
SHIM=$ROOT/target/wine/dlls/bcryptprimitives.dll

if ! rustup target list --installed | grep -qx "$TARGET"; then
  rustup target add "$TARGET" >&2
fi
pkgs=()
command -v x86_64-w64-mingw32-gcc >/dev/null || pkgs+=(gcc-mingw-w64-x86-64)
command -v x86_64-w64-mingw32-g++ >/dev/null || pkgs+=(g++-mingw-w64-x86-64)
command -v wine64 >/dev/null || [ -x /usr/lib/wine/wine64 ] || pkgs+=(wine64)
# Go for the Go binding's tests built for Windows: installed here, before the Windows suites
# start (they run beside the rest, so they cannot count on the bindings suite's install).
command -v go >/dev/null || pkgs+=(golang-go)
if [ ${#pkgs[@]} -gt 0 ]; then
  # shellcheck source=scripts/lib.sh
  . scripts/lib.sh # apt_install (one at a time across the run's lanes)
  apt_install "${pkgs[@]}"
fi
WINE=$(command -v wine64 || echo /usr/lib/wine/wine64)

if [ ! -f "$SHIM" ] || [ tests/windows/bcryptprimitives.c -nt "$SHIM" ]; then
  mkdir -p "$(dirname "$SHIM")"
  x86_64-w64-mingw32-gcc -shared -O2 -s -o "$SHIM" tests/windows/bcryptprimitives.c -ladvapi32 >&2
fi
SYS32=$WINEPREFIX/drive_c/windows/system32
if [ ! -f "$WINEPREFIX/system.reg" ] || [ ! -d "$SYS32" ]; then
  mkdir -p "$WINEPREFIX"
  "$WINE" wineboot -i >/dev/null 2>&1 || true
  "$(dirname "$WINE")/wineserver" -w 2>/dev/null || wineserver -w 2>/dev/null || true
fi
cmp -s "$SHIM" "$SYS32/bcryptprimitives.dll" || cp "$SHIM" "$SYS32/bcryptprimitives.dll"

if [ "${1:-}" = --env ]; then
  printf 'export WINEPREFIX=%q WINEDEBUG=-all WINEARCH=win64 WINE=%q\n' "$WINEPREFIX" "$WINE"
  printf 'export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER=%q\n' "$WINE"
fi
