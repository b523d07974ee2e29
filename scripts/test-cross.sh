#!/usr/bin/env bash
# Tests the platforms this machine can build for but is not:
# - macOS: `cargo check` of the workspace (every target, tests too) for aarch64-apple-darwin and
#   x86_64-apple-darwin, and the static library built for both (there is no Apple SDK here, so
#   the dylib is not linked: the build script's install name is checked instead);
# - the release wheels (`make wheels`): manylinux2014 x86_64 and aarch64, musllinux_1_2 x86_64,
#   each as `auditwheel show` reports it; the manylinux2014 x86_64 wheel installed into a fresh
#   virtualenv with no Rust on PATH, and the binding's tests run from it;
# - the C parity and client tests linked against the musllinux wheel's library (run with musl's
#   dynamic loader) and against the aarch64 wheel's library (run under qemu-user).
# The tools come from scripts/install-cross.sh. Prints one line per part and "N passed, M failed".
#
#   scripts/test-cross.sh [macos] [wheels]   # only those sections (wheels includes the C tests)
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
export RUST_BACKTRACE=0 CARGO_TERM_COLOR=never PIP_DISABLE_PIP_VERSION_CHECK=1
sections=" ${*:-macos wheels} "
want() { [[ $sections == *" $1 "* ]]; }
log_dir=target/test-logs/cross
out=$ROOT/target/cross
mkdir -p "$log_dir" "$out"
width=40
# shellcheck source=scripts/lib.sh
. scripts/lib.sh # part, setup_failed, apt_install, finish

echo "== setup"
t0=$SECONDS
scripts/install-cross.sh >"$log_dir/install-cross.log" 2>&1 ||
  setup_failed scripts/install-cross.sh "$log_dir/install-cross.log"
if [ ! -x target/debug/tn-fixture-server ]; then
  cargo build --workspace >"$log_dir/build.log" 2>&1 ||
    setup_failed "cargo build --workspace" "$log_dir/build.log"
fi
export PATH=$out/venv/bin:$PATH
export TN_FIXTURE=$ROOT/target/debug/tn-fixture-server
VECTORS=$ROOT/../shared/parity/bridge-vectors.jsonl
echo "ready in $((SECONDS - t0))s ($(tail -n 1 "$log_dir/install-cross.log"), zig $(python -m ziglang version))"

# ---------------------------------------------------------------- macOS
echo "== macOS (checked and built here, not run: no Apple SDK, no Mac)"
# Without debug info (CARGO_PROFILE_DEV_DEBUG=0): nothing runs these builds, and it is the
# larger part of a cold build's time and of the static library's size.
export CARGO_PROFILE_DEV_DEBUG=0
apple_check() { cargo-zigbuild check --workspace --all-targets --target "$1"; }
apple_static() {
  local target=$1 built
  built=$(cargo-zigbuild rustc --lib -p toolnexus-c --target "$target" --crate-type staticlib \
    -- --print native-static-libs 2>&1) || { echo "$built"; return 1; }
  local a=target/$target/debug/libtoolnexus.a
  # What a static link needs (rustc's word) is what the Makefile's .pc and CMake files say on macOS.
  local need make_says
  need=$(sed -n 's/^note: native-static-libs: //p' <<<"$built" | tail -n 1 | sed 's/-framework \([^ ]*\)/-Wl,-framework,\1/g')
  make_says=$(make -s UNAME_S=Darwin -pn lib 2>/dev/null | sed -n 's/^STATIC_LIBS := //p')
  [ -n "$need" ] && [ "$need" = "$make_says" ] ||
    { echo "rustc: native-static-libs: '$need'; the Makefile (Darwin): '$make_says'"; return 1; }
  python3 scripts/check-archive.py "$a" "${target%%-*}" tn_connect tn_call_tool tn_disconnect || return 1
  # The dylib's install name comes from build.rs (linked on a Mac): what it told cargo.
  local said
  said=$(cat target/"$target"/debug/build/toolnexus-c-*/output 2>/dev/null)
  grep -qx 'cargo:rustc-cdylib-link-arg=-Wl,-install_name,@rpath/libtoolnexus.dylib' <<<"$said" ||
    { echo "build.rs did not name the dylib @rpath/libtoolnexus.dylib for $target: $said"; return 1; }
  echo "$a: $(stat -c %s "$a") bytes; the dylib's install name: @rpath/libtoolnexus.dylib"
}
# make install as on a Mac (UNAME_S=Darwin), staged, with the aarch64 static library standing
# in for the release build and a copying strip: the files, the .pc rpath and the CMake target.
apple_install() {
  local tmp=$out/macos-install
  rm -rf "$tmp" && mkdir -p "$tmp/build/release" || return 1
  cp target/aarch64-apple-darwin/debug/libtoolnexus.a "$tmp/build/release/libtoolnexus.a" &&
    printf 'stand-in\n' >"$tmp/build/release/libtoolnexus.dylib" || return 1
  printf '#!/bin/sh\nwhile [ $# -gt 1 ]; do [ "$1" = -o ] && out=$2; shift; done; cp "$1" "$out"\n' >"$tmp/strip"
  chmod +x "$tmp/strip"
  make -s -o lib install UNAME_S=Darwin PREFIX=/usr/local DESTDIR="$tmp/stage" \
    CARGO_INSTALL_TARGET_DIR="$tmp/build" STRIP="$tmp/strip" || return 1
  local lib=$tmp/stage/usr/local/lib files
  files=$(cd "$lib" && find . -name 'libtoolnexus*' | sort | tr '\n' ' ')
  [ "$files" = "./libtoolnexus.a ./libtoolnexus.dylib " ] || { echo "installed: $files"; return 1; }
  grep -qx 'Libs: -L${libdir} -Wl,-rpath,${libdir} -ltoolnexus' "$lib/pkgconfig/toolnexus.pc" ||
    { cat "$lib/pkgconfig/toolnexus.pc"; return 1; }
  local cm=$lib/cmake/toolnexus/toolnexusConfig.cmake
  grep -q 'IMPORTED_LOCATION "/usr/local/lib/libtoolnexus.dylib"' "$cm" &&
    grep -q 'IMPORTED_SONAME "@rpath/libtoolnexus.dylib"' "$cm" &&
    grep -q 'INTERFACE_LINK_OPTIONS "-Wl,-rpath,/usr/local/lib"' "$cm" || { cat "$cm"; return 1; }
  make -s uninstall UNAME_S=Darwin PREFIX=/usr/local DESTDIR="$tmp/stage" || return 1
  [ -z "$(find "$tmp/stage" -type f)" ] || { echo "left after uninstall:"; find "$tmp/stage" -type f; return 1; }
  echo "make install (Darwin, /usr/local): libtoolnexus.dylib @rpath, .pc and CMake with the rpath; uninstall clean"
}
if want macos; then
  for t in aarch64-apple-darwin x86_64-apple-darwin; do
    part "macOS: cargo check $t" apple_check "$t"
    part "macOS: static library $t" apple_static "$t"
  done
  part "macOS: make install, .pc, CMake (staged)" apple_install
fi

# ---------------------------------------------------------------- Linux wheels
echo "== Linux release wheels (make wheels)"
WHEELHOUSE=$out/wheelhouse
wheels() {
  rm -rf "$WHEELHOUSE"
  make -s wheels WHEELHOUSE="$WHEELHOUSE" || return 1
  local n
  n=$(ls "$WHEELHOUSE"/*.whl | wc -l)
  [ "$n" = 3 ] || { echo "expected 3 wheels, got $n"; return 1; }
}
wheel_of() { ls "$WHEELHOUSE"/toolnexus_c-0.1.0-py3-none-*"$1"*.whl 2>/dev/null | head -n 1; }
show() { # show POLICY-WORD ARCH: the wheel for it, as auditwheel reports it
  local whl
  whl=$(wheel_of "$1_$2") && [ -n "$whl" ] || { echo "no $1 wheel in $WHEELHOUSE"; ls "$WHEELHOUSE"; return 1; }
  local report
  report=$(auditwheel show "$whl") || return 1
  echo "$report"
  report=$(tr -s ' \n' '  ' <<<"$report") # auditwheel wraps its lines
  grep -q "consistent with the following platform tag:" <<<"$report" || return 1
  # The policy the wheel was built for is what auditwheel finds it consistent with.
  case $1 in
  manylinux2014) grep -q "\"manylinux_2_17_$2\"" <<<"$report" ;;
  musllinux_1_2) grep -q "\"musllinux_1_2_$2\"" <<<"$report" ;;
  esac || { echo "auditwheel does not find $whl consistent with $1 $2"; return 1; }
  [[ $(basename "$whl") == *"$1_$2"* ]] || { echo "not tagged $1_$2: $whl"; return 1; }
  local size
  size=$(stat -c %s "$whl")
  [ "$size" -le $((10 * 1024 * 1024)) ] || { echo "$whl is $size bytes, over 10 MB"; return 1; }
  local so=$out/unpacked/$1-$2/toolnexus_c/libtoolnexus.so
  rm -rf "$out/unpacked/$1-$2" && mkdir -p "$out/unpacked/$1-$2" &&
    (cd "$out/unpacked/$1-$2" && python3 -m zipfile -e "$whl" .) || return 1
  [ -f "$so" ] && [ -f "$(dirname "$so")/LICENSE-MIT" ] || { echo "no library or licenses in $whl"; return 1; }
  if readelf -S "$so" | grep -q '\.debug_'; then echo "the library in $whl has debug sections"; return 1; fi
  echo "$(basename "$whl"): $size bytes, auditwheel: $1 ($2)"
}
# A PATH without cargo or rustc, for "no Rust on the machine".
NO_RUST_PATH=$(printf '%s' "$PATH" | tr ':' '\n' | while read -r d; do
  [ -n "$d" ] && [ ! -e "$d/cargo" ] && [ ! -e "$d/rustc" ] && printf '%s:' "$d"; done)
NO_RUST_PATH=${NO_RUST_PATH%:}
wheel_tests() {
  local v=$out/venv-manylinux2014 whl
  whl=$(wheel_of manylinux2014_x86_64) && [ -n "$whl" ] || return 1
  rm -rf "$v" && /usr/bin/env python3 -m venv "$v" || return 1
  env PATH="$v/bin:$NO_RUST_PATH" bash -c '! command -v cargo && ! command -v rustc' >/dev/null ||
    { echo "cargo still on PATH"; return 1; }
  env PATH="$v/bin:$NO_RUST_PATH" "$v/bin/pip" install -q --no-index --find-links "$out/wheels" "$whl" pytest ||
    return 1
  # From the repository's root, so `import toolnexus_c` is the installed package.
  env -u TOOLNEXUS_LIB PATH="$v/bin:$NO_RUST_PATH" TN_PARITY_VECTORS="$VECTORS" \
    "$v/bin/python" -c 'import toolnexus_c as t, sys; p = t.library_path(); assert "site-packages" in p, p; print("loads", p)' &&
    env -u TOOLNEXUS_LIB PATH="$v/bin:$NO_RUST_PATH" TN_PARITY_VECTORS="$VECTORS" \
      "$v/bin/python" -m pytest bindings/python/tests -q -p no:cacheprovider
}
if want wheels; then
  part "wheels: make wheels (3)" wheels
  part "wheels: manylinux2014 x86_64" show manylinux2014 x86_64
  part "wheels: manylinux2014 aarch64" show manylinux2014 aarch64
  part "wheels: musllinux_1_2 x86_64" show musllinux_1_2 x86_64
  part "wheels: manylinux2014 in a fresh venv: tests" wheel_tests
fi

# ---------------------------------------------------------------- the C tests elsewhere
echo "== C tests against the musllinux and aarch64 wheels' libraries"
CFLAGS=(-std=gnu11 -g -O1 -Wall -Wextra -Werror -Iinclude -Itests/c)
zig_cc() { python -m ziglang cc "$@"; }
c_tests() { # c_tests NAME ZIG-TARGET CLIENT-ARGS RUNNER...: parity and client built for it and run
  local name=$1 target=$2 client_args; read -r -a client_args <<<"$3"; shift 3
  local dir=$out/c-$name lib=$out/unpacked/$name/toolnexus_c
  [ -f "$lib/libtoolnexus.so" ] || { echo "no library at $lib (the wheels part failed?)"; return 1; }
  mkdir -p "$dir" && ln -sfn libtoolnexus.so "$lib/libtoolnexus.so.0" || return 1
  for t in "${C_TESTS_WHEELS[@]}"; do
    zig_cc -target "$target" "${CFLAGS[@]}" "tests/c/$t.c" -o "$dir/$t" -L"$lib" -Wl,-rpath,"$lib" -ltoolnexus -lpthread ||
      return 1
  done
  readelf -d "$dir/parity" | grep -q 'NEEDED.*libtoolnexus\.so\.0' || { echo "not linked to the soname"; return 1; }
  "$@" "$dir/parity" "$VECTORS" | tail -n 1 && "$@" "$dir/client" "${client_args[@]}" | tail -n 1
}
if want wheels; then
  part "musl: C parity and client" c_tests musllinux_1_2-x86_64 x86_64-linux-musl "" env
  # Every client test but one: under qemu-user (as under valgrind) a missing program is spawned
  # and exits 127 instead of failing to spawn (qemu runs the exec in the forked child).
  part "aarch64 (qemu-user): C parity and client" c_tests manylinux2014-aarch64 aarch64-linux-gnu.2.17 \
    -statuses_order qemu-aarch64 -L /usr/aarch64-linux-gnu
fi

finish
